package streamhttp

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// reviewCall posts a tools/call through a Transport to serverURL with hdr as
// its per-request headers and returns the error.
func reviewCall(t *testing.T, client *http.Client, serverURL string, hdr map[string]string) error {
	t.Helper()
	tr, err := New(serverURL, Options{HTTPClient: client, Headers: func(context.Context) map[string]string { return hdr }})
	require.NoError(t, err)
	_, rpc, err := tr.SendRaw(context.Background(), "tools/call",
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`), nil)
	require.Nil(t, rpc)
	return err
}

// reviewClient is a client with mcpflow's round tripper (Direct over a
// Transport clone), its idle connections closed at the end.
func reviewClient(t *testing.T) *http.Client {
	c := &http.Client{Transport: NewDirect(http.DefaultTransport.(*http.Transport).Clone())}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// A gateway that refuses with a page quoting the request line: a key in
// the URL's query (?api_key=…, as many hosted MCP servers take it) is a
// credential the request carried, but bodyText leaves it in.
func TestRedactReviewQueryStringToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "gateway refused %s %s", r.Method, r.URL.RequestURI())
	}))
	defer srv.Close()
	err := reviewCall(t, reviewClient(t), srv.URL+"/mcp?api_key=qs-Secret-7f3a", nil)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "qs-Secret-7f3a")
}

// The same key reaches the error when the server cannot be reached at all:
// the *url.Error net/http returns names the URL with its query (it hides
// only the userinfo password).
func TestRedactReviewQueryStringTokenDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	err = reviewCall(t, reviewClient(t), "http://"+addr+"/mcp?api_key=qs-Secret-7f3b", nil)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "qs-Secret-7f3b")
}

// A gateway quoting the Authorization value in another spelling than the
// header's: URL-encoded (a query-string dump), with "/" escaped as JSON
// encoders such as PHP's do, or lower-cased (a normalising log). A token
// of base64 characters comes back whole in each.
func TestRedactReviewTokenEchoedEncoded(t *testing.T) {
	const tok = "Ab+Secret/7f3c=="
	for name, echo := range map[string]func(string) string{
		"url-encoded":  url.QueryEscape,
		"json-escaped": func(s string) string { return `{"authorization":"` + strings.ReplaceAll(s, "/", `\/`) + `"}` },
		"lower-cased":  strings.ToLower,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusForbidden)
				_, _ = io.WriteString(w, "refused: "+echo(r.Header.Get("Authorization")))
			}))
			defer srv.Close()
			err := reviewCall(t, reviewClient(t), srv.URL+"/mcp", map[string]string{"Authorization": "Bearer " + tok})
			require.Error(t, err)
			require.NotContains(t, strings.ToLower(err.Error()), "secret", err.Error())
		})
	}
}

// Secrets are replaced one after the other in map order: a header whose
// value (a tenant name, ≥ 4 bytes) is part of the token, replaced first,
// leaves the token's value and word no longer matching, so the rest of the
// token shows.
func TestRedactReviewOverlappingSecrets(t *testing.T) {
	req := &http.Request{URL: &url.URL{Scheme: "http", Host: "h", Path: "/mcp"}, Header: http.Header{
		"X-Tenant":      {"acme"},
		"Authorization": {"Bearer acme-Secret-7f3d"},
	}}
	body := []byte("refused Authorization: Bearer acme-Secret-7f3d")
	for range 64 { // map order is random: one of two orders leaks
		got := bodyText(req, body)
		require.NotContains(t, got, "Secret-7f3d", got)
	}
}

// mcp-go's SSE transport puts the body of every POST answer other than
// 200 and 202 in its error (client/transport/sse.go: "request failed with
// status %d: %s"); RedactErrorBodies rewrites only 400 and above, so a
// 3xx net/http does not follow (no Location) or another 2xx shows the
// gateway's page whole.
func TestRedactReviewSSEWrapperBelow400(t *testing.T) {
	for _, status := range []int{http.StatusFound, http.StatusCreated} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, "gateway: Authorization "+r.Header.Get("Authorization"))
		}))
		inner := http.DefaultTransport.(*http.Transport).Clone()
		c := &http.Client{Transport: RedactErrorBodies(NewDirect(inner))}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/message?sessionId=1", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer sse-Secret-7f3e")
		resp, err := c.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		c.CloseIdleConnections()
		srv.Close()
		require.Equal(t, status, resp.StatusCode)
		require.NotContains(t, string(b), "sse-Secret-7f3e", "status %d: mcp-go's error would read %q", status, b)
	}
}

// A 200 JSON answer without an id (a gateway's JSON refusal sent as 200)
// is quoted in the error ("response should contain RPC id: …", its first
// 200 bytes) without bodyText: a quoted Authorization value shows.
func TestRedactReviewNoIDAnswerQuoted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"error":"denied","authorization":%q}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	err := reviewCall(t, reviewClient(t), srv.URL+"/mcp", map[string]string{"Authorization": "Bearer noid-Secret-7f3f"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "noid-Secret-7f3f")
}

// A refusal whose body is JSON but not a JSON-RPC message (a gateway's
// {"message": …}) decodes without error in refused, which then returns no
// result, no JSON-RPC error and no error: a 502 reads as a success.
func TestRedactReviewJSONRefusalIsSuccess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, `{"message":"upstream unavailable"}`)
	}))
	defer srv.Close()
	err := reviewCall(t, reviewClient(t), srv.URL+"/mcp", nil)
	require.Error(t, err, "a 502 answer must be an error")
}

// The Basic header http.Client sets from the URL's userinfo is in
// resp.Request.Header when bodyText runs, through Direct (plain HTTP) and
// through net/http's Transport (Direct's fallback, here forced with a
// proxy-less Transport that Direct does not handle): a gateway quoting it
// shows neither the Basic credentials nor the password.
func TestRedactReviewBasicFromUserinfo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "refused Authorization: "+r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	basic := base64.StdEncoding.EncodeToString([]byte("alice:p@ss-Secret-7f40"))
	u := strings.Replace(srv.URL, "http://", "http://alice:p%40ss-Secret-7f40@", 1) + "/mcp"
	direct := reviewClient(t)
	plain := http.DefaultTransport.(*http.Transport).Clone()
	plain.DisableKeepAlives = true // Direct hands such a Transport's requests to it
	for name, c := range map[string]*http.Client{"direct": direct, "net/http": {Transport: NewDirect(plain)}} {
		err := reviewCall(t, c, u, nil)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "refused Authorization: [redacted]", name)
		require.NotContains(t, err.Error(), basic, name)
		require.NotContains(t, err.Error(), "Secret", name)
	}
}
