package streamhttp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// A stream answer that ends after an event id is resumed with GET
// (sse.go resume); when that GET fails, its *url.Error, naming the URL
// with its query (?api_key=…), becomes the call's error: resume's error
// does not go through sendError as POST's does.
func TestRedactReview2ResumeErrorKeepsQuery(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			c, _, _ := w.(http.Hijacker).Hijack()
			_ = c.Close() // the resume fails before an answer
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: 1\nretry: 10\ndata: \n\n") // priming event, then the stream ends
	}))
	defer srv.Close()
	err := reviewCall(t, reviewClient(t), srv.URL+"/mcp?api_key=resume-Secret-8a01", nil)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "resume-Secret-8a01")
}

// Close's DELETE that fails is logged at Error with net/http's *url.Error
// whole: the URL's query key reaches the logs (the session passes its
// logger, session.go sessTransportLogger).
func TestRedactReview2CloseLogKeepsQuery(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			c, _, _ := w.(http.Hijacker).Hijack()
			_ = c.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer srv.Close()
	var mu sync.Mutex
	var logs bytes.Buffer
	lw := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
	tr, err := New(srv.URL+"/mcp?api_key=close-Secret-8a02", Options{HTTPClient: reviewClient(t), Logger: slog.New(slog.NewTextHandler(lw, nil))})
	require.NoError(t, err)
	_, _, err = tr.SendRaw(context.Background(), "initialize", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`), nil)
	require.NoError(t, err)
	require.Equal(t, "s1", tr.GetSessionId())
	require.NoError(t, tr.Close())
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, logs.String(), "failed to send close request")
	require.NotContains(t, logs.String(), "close-Secret-8a02")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// BenchmarkBodyTextLargePage: bodyText with a bearer token and a
// 40-cookie Cookie header (~128 spellings) on a 1 MiB error page (what
// is read of one, maxErrorBody). It read the whole page (seconds per
// call, review 2 of the redaction); it reads only what it shows and a
// credential crossing the cut. A benchmark, not a test: no wall clock.
func BenchmarkBodyTextLargePage(b *testing.B) {
	words := make([]string, 40)
	for i := range words {
		words[i] = fmt.Sprintf("c%d=v%08d;", i, i)
	}
	req := &http.Request{URL: &url.URL{Scheme: "http", Host: "h", Path: "/mcp"}, Header: http.Header{
		"Authorization": {"Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"},
		"Cookie":        {strings.Join(words, " ")},
	}}
	body := []byte(strings.Repeat("<div>gateway error page</div>\n", maxErrorBody/30))
	for b.Loop() {
		if got := bodyText(req, body); !strings.HasPrefix(got, "<div>gateway error page</div>") {
			b.Fatal(got)
		}
	}
}

// TestBodyTextCrossingTheCut: a credential that starts before the cut and
// ends after it is taken out of what is shown.
func TestBodyTextCrossingTheCut(t *testing.T) {
	req := &http.Request{URL: &url.URL{Scheme: "http", Host: "h", Path: "/mcp"}, Header: http.Header{
		"Authorization": {"Bearer cross-Secret-8a05"}}}
	body := strings.Repeat("x", errorBodyShown-5) + "Bearer cross-Secret-8a05" + strings.Repeat("y", 1000)
	got := bodyText(req, []byte(body))
	require.NotContains(t, got, "cross-Sec")
	require.NotContains(t, got, "Bearer cr")
	require.True(t, strings.HasSuffix(got, "…"), got)
}

// A header value with an obs-text byte (Latin-1, which net/http sends
// as it is), or a URL password with a %-escaped non-UTF-8 byte, is a
// pattern credentials hands to regexp.MustCompile raw: invalid UTF-8
// does not compile, and any refused call panics.
func TestRedactReview2NonUTF8CredentialPanics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "bad gateway")
	}))
	defer srv.Close()
	for name, call := range map[string]func(*testing.T) error{
		"header": func(t *testing.T) error {
			return reviewCall(t, reviewClient(t), srv.URL+"/mcp", map[string]string{"X-Api-Key": "cl\xe9-Secret-8a03"})
		},
		"userinfo": func(t *testing.T) error {
			return reviewCall(t, reviewClient(t), strings.Replace(srv.URL, "http://", "http://alice:p%E9ss-Secret-8a04@", 1)+"/mcp", nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = call(t) })
			require.ErrorContains(t, err, "status 502")
		})
	}
}
