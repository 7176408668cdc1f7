package streamhttp

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// errorBodyShown bounds what an error shows of a refused request's body
// (bytes).
const errorBodyShown = 300

// notCredentials are the request headers bodyText leaves in a body: the
// transport's own, which carry no secret.
var notCredentials = map[string]bool{
	"Accept": true, "Content-Type": true, "Content-Length": true, "User-Agent": true,
	"Mcp-Protocol-Version": true, "Mcp-Method": true, "Mcp-Name": true, "Last-Event-Id": true,
}

// bodyText is what an error shows of the body of an answer outside 2xx
// that is not a JSON-RPC message (a gateway's or a proxy's page): its
// start, with every credential the request carried cut out, as a gateway
// may quote the request it refused (credentials).
func bodyText(req *http.Request, body []byte) string {
	var forms []string
	if req != nil {
		forms = credentials(req)
	}
	// Only what is shown is read, and a credential that crosses the cut.
	read := errorBodyShown
	if len(forms) > 0 {
		read += len(forms[0]) // the longest
	}
	s, cut := strings.ToValidUTF8(string(body[:min(len(body), read)]), "?"), len(body) > read
	for _, f := range forms {
		s = regexp.MustCompile("(?i)"+regexp.QuoteMeta(f)).ReplaceAllLiteralString(s, "[redacted]")
	}
	if len(s) > errorBodyShown {
		n := errorBodyShown
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], true
	}
	if cut {
		return s + "…"
	}
	return s
}

// credentials are the spellings of what req carried that may be secret:
// its header values but the transport's own, each word of them, its URL's
// query values and user information (also as Basic credentials), each of
// 4 bytes or more, in any case, as written and as URL query, URL path and
// JSON (an escaped '/') encoders write it; the longest first, so that one
// inside another does not leave the rest of the longer one.
func credentials(req *http.Request) []string {
	var vals []string
	for k, vs := range req.Header {
		if notCredentials[http.CanonicalHeaderKey(k)] {
			continue
		}
		for _, v := range vs {
			vals = append(vals, v)
			vals = append(vals, strings.Fields(v)...)
		}
	}
	if req.URL != nil {
		for _, vs := range req.URL.Query() {
			vals = append(vals, vs...)
		}
		if u := req.URL.User; u != nil {
			pw, _ := u.Password()
			vals = append(vals, pw, u.String(), base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)))
		}
	}
	seen := map[string]bool{}
	var forms []string
	for _, v := range vals {
		if len(v) < 4 {
			continue
		}
		for _, f := range []string{v, url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(v, "/", `\/`)} {
			f = strings.ToValidUTF8(f, "?") // as the page is read
			if !seen[strings.ToLower(f)] {
				seen[strings.ToLower(f)] = true
				forms = append(forms, f)
			}
		}
	}
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	return forms
}

// sendError is err, a request that did not reach the server, with the
// URL of its *url.Error cut to scheme, host and path (its query may carry
// a key; net/http hides only a password).
func sendError(err error) error {
	ue, ok := err.(*url.Error)
	if !ok {
		return err
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil {
		return &url.Error{Op: ue.Op, URL: "(the server's URL)", Err: ue.Err}
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
}

// RedactErrorBodies wraps rt so that the body of an answer but 200 and 202
// reads as bodyText shows it (cut, with the request's credentials taken
// out), for a transport of mcp-go's that puts such a body in its errors
// whole (the legacy SSE transport).
func RedactErrorBodies(rt http.RoundTripper) http.RoundTripper { return redacting{rt} }

type redacting struct{ rt http.RoundTripper }

func (r redacting) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	// (mcp-go's SSE transport shows the body of any other answer)
	if err != nil || resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted {
		return resp, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	text := bodyText(req, b)
	resp.Body, resp.ContentLength = io.NopCloser(strings.NewReader(text)), int64(len(text))
	resp.Header.Del("Content-Length")
	return resp, nil
}
