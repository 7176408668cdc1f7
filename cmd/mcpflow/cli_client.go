package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// requestTimeout bounds one API request of the client, except tool calls
// (as long as the tool takes; Ctrl-C ends them) and event long polls.
const requestTimeout = 30 * time.Second

// maxAPIBody is the most of an answer the client reads.
const maxAPIBody = 64 << 20

// apiClient calls mcpflow's REST API with a user token.
type apiClient struct {
	base  string // scheme://host[:port][/prefix], no trailing slash
	token string
	hc    *http.Client
}

func newAPIClient(base, token string) (*apiClient, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--url must be an http(s) URL such as %s (got %q)", defaultAPIURL, base)
	}
	return &apiClient{base: strings.TrimRight(base, "/"), token: token, hc: &http.Client{}}, nil
}

// apiError is an answer of the API outside 2xx: its error code and message
// (every API error is {"error": {"code", "message"}}), the HTTP status,
// and the body as it came.
type apiError struct {
	Status  int
	Code    string
	Message string
	Body    []byte
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Code, e.Message, e.Status)
}

func newAPIError(status int, body []byte) *apiError {
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e := &apiError{Status: status, Body: body}
	if json.Unmarshal(body, &env) == nil && env.Error.Code != "" {
		e.Code, e.Message = env.Error.Code, env.Error.Message
		return e
	}
	// Not mcpflow's error shape: a proxy in between, or a wrong --url.
	e.Code = "http_" + strconv.Itoa(status)
	e.Message = http.StatusText(status)
	if s := strings.TrimSpace(string(body)); s != "" && len(s) <= 200 && !strings.ContainsAny(s, "{<") {
		e.Message += ": " + s
	}
	return e
}

// do sends a request and returns the answer's body; an answer outside 2xx
// is an *apiError. timeout 0 means as long as ctx allows.
func (a *apiClient) do(ctx context.Context, method, path string, query url.Values, body any, timeout time.Duration) ([]byte, error) {
	return a.doWith(ctx, method, path, query, body, timeout, nil)
}

// doWith is do with more request headers.
func (a *apiClient) doWith(ctx context.Context, method, path string, query url.Values, body any, timeout time.Duration, header http.Header) ([]byte, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	target := a.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s %s: no answer within %s", method, a.base+path, timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %w (is mcpflow running there? see --url)", method, a.base+path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIBody))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, newAPIError(resp.StatusCode, b)
	}
	return b, nil
}

// get is do for a GET with the usual timeout.
func (a *apiClient) get(ctx context.Context, path string, query url.Values) ([]byte, error) {
	return a.do(ctx, http.MethodGet, path, query, nil, requestTimeout)
}

// decodeJSON decodes an API answer, numbers kept as written.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode the API's answer: %w", err)
	}
	return nil
}

// compactJSON is b on one line, without HTML escapes (see unescapeHTML).
func compactJSON(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return bytes.TrimSpace(b)
	}
	return unescapeHTML(buf.Bytes())
}

// indentRawJSON is b indented by two spaces, keys in the order they came,
// without HTML escapes; ok is false when b is not JSON.
func indentRawJSON(b []byte) (string, bool) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return "", false
	}
	return string(unescapeHTML(buf.Bytes())), true
}

// indentJSON renders v as indented JSON (numbers as they came), without
// HTML escapes.
func indentJSON(v any) string { return encodeJSON(v, "  ") }

// oneLineJSON renders v as JSON on one line, without HTML escapes.
func oneLineJSON(v any) string { return encodeJSON(v, "") }

// encodeJSON is v as JSON, indented by indent when it is not empty. People
// read it: "<", ">" and "&" stay as they are (json.Marshal would write
// \u003c, \u003e and \u0026).
func encodeJSON(v any, indent string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// unescapeHTML turns the HTML escapes the API's JSON encoder writes in
// strings (\u003c, \u003e, \u0026) back into "<", ">" and "&", leaving
// every other escape, and the order of keys, as they are. b must be valid
// JSON: a backslash occurs only in strings, always starting an escape.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) {
			switch strings.ToLower(string(b[i+2 : i+6])) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		// Another escape (\\, \", \n, \u…): copy its first two bytes as
		// they are, so an escaped backslash never starts an escape.
		out, i = append(out, b[i], b[i+1]), i+1
	}
	return out
}
