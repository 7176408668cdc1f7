package streamhttp

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBodyTextCutsCredentials: a gateway's page that quotes the request
// it refused shows none of the credentials the request carried (a header
// value, its token alone, the URL's password, as Basic credentials too),
// keeps the rest, and is cut to errorBodyShown bytes on a rune boundary.
func TestBodyTextCutsCredentials(t *testing.T) {
	u, _ := url.Parse("http://alice:pw-Secret-1@127.0.0.1:9/mcp")
	req := &http.Request{URL: u, Header: http.Header{
		"Authorization":  {"Bearer tok-Secret-2"},
		"X-Api-Key":      {"key-Secret-3"},
		"Accept":         {"application/json, text/event-stream"},
		"Mcp-Session-Id": {"sess-Secret-4"},
	}}
	basic := base64.StdEncoding.EncodeToString([]byte("alice:pw-Secret-1"))
	body := "refused: Authorization: Bearer tok-Secret-2; token tok-Secret-2; key key-Secret-3; url pw-Secret-1; basic " +
		basic + "; session sess-Secret-4; accept application/json"
	got := bodyText(req, []byte(body))
	require.NotContains(t, got, "Secret", got)
	require.NotContains(t, got, basic, got)
	require.Contains(t, got, "refused: Authorization: [redacted]")
	require.Contains(t, got, "accept application/json", "the transport's own headers are kept")

	long := strings.Repeat("é", errorBodyShown) // two bytes each
	got = bodyText(nil, []byte(long))
	require.LessOrEqual(t, len(got), errorBodyShown+len("…"))
	require.True(t, strings.HasSuffix(got, "…"))
	require.Equal(t, strings.Repeat("é", errorBodyShown/2)+"…", got)
}

// TestRedactErrorBodies: through the wrapped round tripper, an error
// answer's body reads without the request's credentials; a 2xx body is
// left as the server wrote it.
func TestRedactErrorBodies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			_, _ = io.WriteString(w, "fine "+r.Header.Get("Authorization"))
			return
		}
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "gateway refused request with Authorization: "+r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	c := &http.Client{Transport: RedactErrorBodies(http.DefaultTransport)}
	for path, want := range map[string]string{
		"/ok":      "fine Bearer tok-Secret-5",
		"/refused": "gateway refused request with Authorization: [redacted]",
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer tok-Secret-5")
		resp, err := c.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, want, string(b), path)
	}
}
