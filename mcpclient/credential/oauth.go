package credential

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
)

// OAuth token requests (spec §3.4).
const (
	// oauthRequestTimeout bounds one token request.
	oauthRequestTimeout = 15 * time.Second
	// oauthDefaultExpiresIn is the lifetime of a token whose response has no
	// usable expiry, in seconds.
	oauthDefaultExpiresIn = 3600
	// oauthMaxResponse bounds a token endpoint's answer.
	oauthMaxResponse = 1 << 20
)

// oauthClient sends token requests. It never follows redirects with the
// client secret in the body.
var oauthClient = &http.Client{
	Timeout:       oauthRequestTimeout,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// oauthTokens is the process's OAuth token cache: one token source per
// server (and per version of its oauth block), shared by discovery, calls and
// task activities, so a rotating refresh token is never used twice.
type oauthTokens struct {
	mu      sync.Mutex
	sources map[string]*oauthEntry // by server name
	client  *http.Client

	// exchanges holds the tokens of token-exchange blocks, which are per
	// caller (see token_exchange.go).
	exchanges tokenExchanges
}

type oauthEntry struct {
	fingerprint string
	src         *oauthSource
	ts          oauth2.TokenSource // cache, expiry skew and single-flight refresh
}

// header returns the Authorization value of srv's OAuth block ("" when
// none), shared by concurrent callers and reused until refresh_skew_seconds
// before expiry; token exchange without a caller token is errNoCallerToken.
func (o *oauthTokens) header(ctx context.Context, srv *config.Server) (string, error) {
	cfg := srv.OAuth
	if cfg == nil || !cfg.Enabled {
		return "", nil
	}
	if cfg.GrantType == config.GrantTokenExchange {
		subject := mcpflow.CallerToken(ctx)
		if subject == "" {
			return "", errNoCallerToken
		}
		return o.exchanges.header(ctx, o.httpClient(), srv.Name, cfg, subject)
	}
	ts := o.source(srv.Name, cfg)
	tok, err := ts.Token()
	if err != nil {
		return "", err
	}
	return tok.TokenType + " " + tok.AccessToken, nil // checked by oauthSource.Token
}

func (o *oauthTokens) source(server string, cfg *config.OAuth) oauth2.TokenSource {
	fp := oauthFingerprint(cfg)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sources == nil {
		o.sources = map[string]*oauthEntry{}
	}
	old := o.sources[server]
	if old != nil && old.fingerprint == fp {
		return old.ts
	}
	src := &oauthSource{server: server, cfg: *cfg, client: o.httpClient()}
	src.refresh.Store(&cfg.RefreshToken)
	if old != nil && old.src.cfg.RefreshToken == cfg.RefreshToken {
		// An edit elsewhere in the block keeps the rotated refresh token:
		// the configured one may already have been spent.
		src.refresh.Store(old.src.refresh.Load())
	}
	skew := time.Duration(max(cfg.RefreshSkewSeconds, 0)) * time.Second
	if skew == 0 {
		skew = time.Nanosecond // 0 would mean oauth2's default of 10 s
	}
	e := &oauthEntry{fingerprint: fp, src: src, ts: oauth2.ReuseTokenSourceWithExpiry(nil, src, skew)}
	o.sources[server] = e
	return e.ts
}

// httpClient is the client of token requests.
func (o *oauthTokens) httpClient() *http.Client {
	if o.client != nil {
		return o.client
	}
	return oauthClient
}

// ExchangesToken reports whether srv's credential is exchanged per caller
// (an enabled oauth block with the token-exchange grant).
func ExchangesToken(srv *config.Server) bool {
	return srv.OAuth != nil && srv.OAuth.Enabled && srv.OAuth.GrantType == config.GrantTokenExchange
}

// oauthFingerprint identifies an oauth block's content, so an edited block
// gets a fresh cache.
func oauthFingerprint(cfg *config.OAuth) string {
	c := *cfg
	c.Extra = nil
	b, _ := json.Marshal(c)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// oauthSource fetches tokens with the grant of one oauth block (spec §3.4).
// golang.org/x/oauth2 caches them (ReuseTokenSourceWithExpiry); the request
// is ours because the block names its own response fields, defaults the
// expiry to an hour and lets extra parameters never override reserved ones.
type oauthSource struct {
	server string
	cfg    config.OAuth
	client *http.Client

	mu      sync.Mutex             // one token request at a time
	refresh atomic.Pointer[string] // the current refresh token: the configured one, then each rotated one (memory only)
}

// Token implements oauth2.TokenSource.
func (s *oauthSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	form, err := s.form()
	if err != nil {
		return nil, err
	}
	ans, err := requestToken(s.client, &s.cfg, form)
	if err != nil {
		if m := tokenFailure(err); m != "" {
			return nil, s.fail(m, errors.Unwrap(err))
		}
		return nil, s.fail(fmt.Sprintf("the token endpoint answered HTTP %d", err.(*tokenRefusal).status), nil)
	}
	if rotated, ok := ans.fields["refresh_token"].(string); ok && rotated != "" {
		s.refresh.Store(&rotated)
	}
	return &oauth2.Token{AccessToken: ans.access, TokenType: ans.typ, Expiry: ans.expiry}, nil
}

// tokenAnswer is a token endpoint's answer, read with an oauth block's
// field names.
type tokenAnswer struct {
	access, typ string
	expiry      time.Time
	fields      map[string]any // the whole answer
}

// tokenRefusal is a token endpoint's answer outside 2xx: its status and,
// when it is safe to show, its OAuth error code.
type tokenRefusal struct {
	status int
	code   string
}

func (e *tokenRefusal) Error() string {
	return fmt.Sprintf("the token endpoint answered HTTP %d", e.status)
}

// tokenError is a token request that failed before or after the endpoint
// answered; its message is safe to show, its cause has no URL.
type tokenError struct {
	msg   string
	cause error
}

func (e *tokenError) Error() string { return e.msg }
func (e *tokenError) Unwrap() error { return e.cause }

// tokenFailure is the message of a *tokenError, "" for a *tokenRefusal.
func tokenFailure(err error) string {
	if te, ok := err.(*tokenError); ok {
		return te.msg
	}
	return ""
}

// oauthErrorCode matches an OAuth error code that is safe to show: RFC
// 6749's codes and the like, never free text that could echo the request.
var oauthErrorCode = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)

// requestToken posts form to cfg's token endpoint (bounded, no redirects)
// and reads the answer by cfg's field names (spec §3.4; "N_A" token type
// and a non-integer lifetime take the defaults). Errors (*tokenRefusal,
// *tokenError) carry no form, token or body.
func requestToken(client *http.Client, cfg *config.OAuth, form url.Values) (tokenAnswer, error) {
	fail := func(msg string, cause error) (tokenAnswer, error) {
		return tokenAnswer{}, &tokenError{msg: msg, cause: cause}
	}
	ctx, cancel := context.WithTimeout(context.Background(), oauthRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return fail("the token_url is not a valid URL", nil)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fail(fmt.Sprintf("the token request timed out after %s", oauthRequestTimeout), nil)
		}
		return fail("the token request failed", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, oauthMaxResponse))
	if err != nil {
		return fail("the token response could not be read", err)
	}
	fields, ferr := oauthFields(resp.Header.Get("Content-Type"), body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		r := &tokenRefusal{status: resp.StatusCode}
		if code, _ := fields["error"].(string); ferr == nil && oauthErrorCode.MatchString(code) {
			r.code = code
		}
		return tokenAnswer{}, r
	}
	if ferr != nil {
		return fail("the token response is not JSON", nil)
	}
	access, _ := fields[cfg.TokenField].(string)
	if access == "" {
		return fail(fmt.Sprintf("OAuth token response missing '%s'", cfg.TokenField), nil)
	}
	typ, _ := fields[cfg.TokenTypeField].(string)
	if typ == "" || strings.EqualFold(typ, "N_A") {
		typ = cfg.DefaultTokenType
	}
	if err := config.CheckHeaderValue(typ + " " + access); err != nil {
		return fail("the returned token "+err.Error(), nil)
	}
	return tokenAnswer{access: access, typ: typ, fields: fields,
		expiry: time.Now().Add(time.Duration(oauthExpiresIn(fields[cfg.ExpiresInField])) * time.Second)}, nil
}

// form is the token request: extra_token_params first, then the reserved
// fields, which always win.
func (s *oauthSource) form() (url.Values, error) {
	c := s.cfg
	form := url.Values{}
	for k, v := range c.ExtraTokenParams {
		form.Set(k, v)
	}
	form.Set("grant_type", c.GrantType)
	if c.Scope != "" {
		form.Set("scope", c.Scope)
	}
	if c.Audience != "" {
		form.Set("audience", c.Audience)
	}
	switch c.GrantType {
	case config.GrantRefreshToken:
		refresh := *s.refresh.Load()
		if refresh == "" {
			return nil, s.fail("the refresh_token grant needs a refresh_token", nil)
		}
		form.Set("refresh_token", refresh)
		if c.ClientID != "" {
			form.Set("client_id", c.ClientID)
		}
		if c.ClientSecret != "" {
			form.Set("client_secret", c.ClientSecret)
		}
	default:
		if c.ClientID == "" || c.ClientSecret == "" {
			return nil, s.fail("the client_credentials grant needs client_id and client_secret", nil)
		}
		form.Set("client_id", c.ClientID)
		form.Set("client_secret", c.ClientSecret)
	}
	return form, nil
}

// fail is a token error naming the server; cause is kept for errors.Is but
// never carries the secret (requests are built from the form, not echoed).
func (s *oauthSource) fail(msg string, cause error) error {
	return &mcpflow.Error{Code: mcpflow.EUpstream, Err: cause,
		Message: fmt.Sprintf("MCP server '%s' OAuth token request failed: %s", s.server, msg)}
}

// oauthFields decodes a token response: a JSON object (whatever its
// Content-Type says, since endpoints label JSON text/plain too), or else a
// form-encoded body as some older endpoints send.
func oauthFields(contentType string, body []byte) (map[string]any, error) {
	var out map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := dec.Decode(&out)
	if err == nil && out != nil {
		return out, nil
	}
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "application/x-www-form-urlencoded" || mt == "text/plain" {
		if vals, qerr := url.ParseQuery(string(body)); qerr == nil && len(vals) > 0 {
			out := map[string]any{}
			for k := range vals {
				out[k] = vals.Get(k)
			}
			return out, nil
		}
	}
	if err == nil {
		err = errors.New("not a JSON object")
	}
	return nil, err
}

// oauthExpiresIn reads an expires_in value: an integer number of seconds
// (a JSON number or a string); anything else means an hour; at least 1.
func oauthExpiresIn(v any) int64 {
	var n int64 = oauthDefaultExpiresIn
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			n = i
		} else if f, err := x.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1e15 {
			n = int64(f)
		}
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			n = i
		}
	}
	return max(n, 1)
}
