package streamhttp

import (
	"encoding/base64"
	"io"
	"net/http"
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
// start, with every credential the request carried cut out (its header
// values, each word of them, and its URL's user information, also as
// Basic credentials), as a gateway may quote the request it refused.
func bodyText(req *http.Request, body []byte) string {
	s := string(body)
	if req != nil {
		var secrets []string
		for k, vs := range req.Header {
			if notCredentials[http.CanonicalHeaderKey(k)] {
				continue
			}
			for _, v := range vs {
				secrets = append(secrets, v)
				secrets = append(secrets, strings.Fields(v)...)
			}
		}
		if u := req.URL.User; u != nil {
			pw, _ := u.Password()
			secrets = append(secrets, pw, u.String(),
				base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)))
		}
		for _, v := range secrets {
			if len(v) >= 4 {
				s = strings.ReplaceAll(s, v, "[redacted]")
			}
		}
	}
	s = strings.ToValidUTF8(s, "?")
	if len(s) > errorBodyShown {
		cut := errorBodyShown
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// RedactErrorBodies wraps rt so that the body of an answer outside 2xx
// reads as bodyText shows it (cut, with the request's credentials taken
// out), for a transport of mcp-go's that puts such a body in its errors
// whole (the legacy SSE transport).
func RedactErrorBodies(rt http.RoundTripper) http.RoundTripper { return redacting{rt} }

type redacting struct{ rt http.RoundTripper }

func (r redacting) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	text := bodyText(req, b)
	resp.Body, resp.ContentLength = io.NopCloser(strings.NewReader(text)), int64(len(text))
	resp.Header.Del("Content-Length")
	return resp, nil
}
