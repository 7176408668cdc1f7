package session

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// TestProbeLeftOutIsNotAccepted: a probe the server acknowledges leaving
// its URI out did not accept the URI, so it is not the "another accepted
// alone" that lets a refusal drop an earlier subscription. Here a and b
// are subscribed; Subscribe(w) makes the stream {a, b, w}, which the
// server refuses; asked alone, a's stream is acknowledged without a (the
// server cannot subscribe it any more), b's and w's are refused. w's
// Subscribe fails with the server's refusal of it; b, whose refusal says
// nothing the refusal of every other URI does not, is kept (before, a
// counted as accepted, b was asked again, refused twice and dropped).
func TestProbeLeftOutIsNotAccepted(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	const a, b, w = "test://a", "test://b", "test://w"
	srv := newReview3Server(t)
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if slices.Contains(f.ResourceSubscriptions, w) || slices.Equal(f.ResourceSubscriptions, []string{b}) {
			return review3Refused
		}
		return nil
	}
	var cannot, leftOut atomic.Bool // a cannot be subscribed (from Subscribe(w) on); a's stream was served without a
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen) && cannot.Load() {
			// a alone: served (and acknowledged) without a.
			body, _ := io.ReadAll(r.Body)
			var msg map[string]any
			if json.Unmarshal(body, &msg) == nil {
				p, _ := msg["params"].(map[string]any)
				n, _ := p["notifications"].(map[string]any)
				if uris, _ := n["resourceSubscriptions"].([]any); slices.Equal(uris, []any{a}) {
					leftOut.Store(true)
					n["resourceSubscriptions"] = []any{}
					body, _ = json.Marshal(msg)
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		srv.serve(rw, r)
	}))
	defer ts.Close()
	logs := &review2Logs{}
	s := dialReview2(t, ctx, ts.URL+"/mcp", logs)
	defer s.Close()
	for _, uri := range []string{a, b} {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a, b))
	cannot.Store(true)

	_, err := s.Subscribe(ctx, w, func() {})
	require.Error(t, err)
	require.Contains(t, err.Error(), "cannot subscribe", "w fails with the server's refusal of it alone")
	require.True(t, leftOut.Load(), "a was asked about alone")
	s.subs.mu.Lock()
	_, kept := s.subs.byURI[b]
	s.subs.mu.Unlock()
	require.True(t, kept, "b was dropped though no URI was accepted alone (a's probe was acknowledged without a)")
	require.False(t, logs.has("they are dropped"))
}
