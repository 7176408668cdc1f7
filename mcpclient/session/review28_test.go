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

// review28Server is review2Server behind a handler that rewrites a
// subscriptions/listen request's resourceSubscriptions with edit (nil:
// unchanged), so that the server serves and acknowledges only what edit
// leaves (TestLeftOutAfterTheWaitIsDropped uses it too).
func review28Server(t *testing.T, srv *review2Server, edit func([]string) []string) string {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen) {
			body, _ := io.ReadAll(r.Body)
			var msg map[string]any
			if json.Unmarshal(body, &msg) == nil {
				p, _ := msg["params"].(map[string]any)
				n, _ := p["notifications"].(map[string]any)
				raw, _ := n["resourceSubscriptions"].([]any)
				var uris []string
				for _, u := range raw {
					s, _ := u.(string)
					uris = append(uris, s)
				}
				if out := edit(uris); out != nil {
					n["resourceSubscriptions"] = out
					body, _ = json.Marshal(msg)
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		srv.serve(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// endLive ends (as the server's result) every open stream of srv.
func endLive(srv *review2Server) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, st := range srv.streams {
		st.mu.Lock()
		open := !st.closed
		st.mu.Unlock()
		if open {
			select {
			case st.end <- "result":
			default:
			}
		}
	}
}

// waitAckedSince waits (a liveness bound) for a stream opened after the
// first since to be acknowledged, and returns how many streams there are.
func waitAckedSince(t *testing.T, ctx context.Context, srv *review2Server, since int) int {
	t.Helper()
	for {
		srv.mu.Lock()
		streams := slices.Clone(srv.streams[since:])
		srv.mu.Unlock()
		for _, st := range streams {
			st.mu.Lock()
			ok := st.acked
			st.mu.Unlock()
			if ok {
				return srv.count()
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no stream acknowledged after the first %d", since)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestReview28OneLeftOutAckDropsAnAcknowledgedSubscription: e5bd3a8
// drops any URI an acknowledgement leaves out once its Subscribe returned,
// not only one whose wait ran out (as its comment and the docs say). a and
// z are subscribed and acknowledged; the server ends the stream, and its
// acknowledgement of the reopened [a z] leaves z out once (a passing
// failure of z's upstream). z, an earlier subscription the docs say is
// dropped "only when" refused alone twice or together twice, is dropped
// for good: when the server ends that stream and takes z again, no stream
// ever names z, and z's caller hears no update again.
func TestReview28OneLeftOutAckDropsAnAcknowledgedSubscription(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const a, z = "test://a", "test://z"
	srv := newReview2Server(t)
	var leaveOut atomic.Bool
	url := review28Server(t, srv, func(uris []string) []string {
		if len(uris) > 1 && leaveOut.CompareAndSwap(true, false) {
			return slices.DeleteFunc(slices.Clone(uris), func(u string) bool { return u == z })
		}
		return nil
	})
	logs := &review2Logs{}
	s := dialReview2(t, ctx, url, logs)
	defer s.Close()
	for _, uri := range []string{a, z} {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}
	require.True(t, srv.waitLiveAckedNamingAll(0, 20*time.Second, a, z), "[a z] acknowledged")

	since := srv.count()
	leaveOut.Store(true)
	endLive(srv) // the listener opens [a z] again; its acknowledgement leaves z out once
	since = waitAckedSince(t, ctx, srv, since)
	require.False(t, leaveOut.Load())

	endLive(srv) // the server ends that stream too; it takes z again now
	require.True(t, srv.waitLiveAckedNamingAll(since, 20*time.Second, a, z),
		"20 s after the server ended the stream whose acknowledgement left %s out once, no acknowledged stream "+
			"names %s and %s: %s, subscribed and acknowledged before, was dropped for good (dropped-warning "+
			"logged: %v)", z, a, z, z, logs.has("left resource subscriptions out"))
}

// TestReview28NewcomerPushesOutAnAcknowledgedSubscription: a server that
// takes at most two resources per stream and acknowledges the first two
// (leaving the rest out rather than refusing). a and z are subscribed and
// acknowledged; another caller's Subscribe(m) opens [a m z], acknowledged
// as [a m]: m succeeds, and e5bd3a8 drops z, a working subscription of
// another caller (the docs: a subscribe whose URI the acknowledgement
// leaves out fails "and leaves the other subscriptions in place"). Even
// once m's caller unsubscribes, no stream names z again.
func TestReview28NewcomerPushesOutAnAcknowledgedSubscription(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const a, m, z = "test://a", "test://m", "test://z"
	srv := newReview2Server(t)
	url := review28Server(t, srv, func(uris []string) []string {
		if len(uris) > 2 {
			return slices.Clone(uris[:2])
		}
		return nil
	})
	logs := &review2Logs{}
	s := dialReview2(t, ctx, url, logs)
	defer s.Close()
	for _, uri := range []string{a, z} {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}
	require.True(t, srv.waitLiveAckedNamingAll(0, 20*time.Second, a, z), "[a z] acknowledged")

	since := srv.count()
	um, _ := s.Subscribe(ctx, m, func() {}) // [a m z], acknowledged as [a m]
	if um != nil {
		um() // m's caller is done: only a and z are wanted
	}
	require.True(t, srv.waitLiveAckedNamingAll(since, 20*time.Second, a, z),
		"20 s after Subscribe(%s) (acknowledged as [a m]) and its unsubscribe, no acknowledged stream names %s and "+
			"%s: %s, another caller's working subscription, was dropped (dropped-warning logged: %v)",
		m, a, z, z, logs.has("left resource subscriptions out"))
}
