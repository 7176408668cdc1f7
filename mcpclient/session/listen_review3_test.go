package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// review3Server is review2Server with a refusal the test chooses per
// stream: refusal, when set, is asked first for each subscriptions/listen;
// a non-nil JSON-RPC error object refuses the stream with it (refusal may
// block, until its ctx - the request's - ends), nil leaves the stream to
// review2Server (held, acknowledged, ended as it says).
type review3Server struct {
	*review2Server
	refusal func(ctx context.Context, f listenFilter2) map[string]any
}

func newReview3Server(t *testing.T) *review3Server {
	s := &review3Server{review2Server: &review2Server{t: t, opened: make(chan *review2Stream, 64)}}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(ts.Close)
	s.URL = ts.URL + "/mcp"
	return s
}

func (s *review3Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && s.refusal != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Notifications listenFilter2 `json:"notifications"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "subscriptions/listen" {
			if e := s.refusal(r.Context(), msg.Params.Notifications); e != nil {
				if r.Context().Err() != nil {
					return // the client went
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": e})
				return
			}
		}
	}
	s.review2Server.serve(w, r)
}

// waitLiveAckedNaming waits (a generous liveness bound, not a timing
// assertion) for an open, acknowledged stream naming uri among the streams
// opened after the first since.
func (s *review2Server) waitLiveAckedNaming(uri string, since int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		s.mu.Lock()
		streams := slices.Clone(s.streams[since:])
		s.mu.Unlock()
		for _, st := range streams {
			st.mu.Lock()
			ok := st.acked && !st.closed && st.names(uri)
			st.mu.Unlock()
			if ok {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// count is how many streams the server opened (not refused) so far.
func (s *review2Server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

var review3Refused = map[string]any{"code": mcp.INVALID_PARAMS, "message": "cannot subscribe"}

// TestReview3RefusalNobodyWaitsForLeavesTheSessionDeaf: a refusal only
// acts through s.subs.waiting; a stream refused when no first Subscribe
// waits for it changes nothing, and the listener opens the same stream
// again (1 s, 2 s, 4 s ... 1 min) to be refused again, for the rest of the
// session. Here the caller of Subscribe(bad) gives up (its ctx ends) before
// the server refuses the stream naming bad: awaitStream returns nil on
// ctx.Done (Subscribe reports success and keeps bad in s.subs.byURI), the
// refusal lands after, and the subscription to good - another caller's on a
// shared session, fine until then - never gets a stream again. (A server
// that answers slower than subsAckWait does the same with a 5 s Subscribe.)
func TestReview3RefusalNobodyWaitsForLeavesTheSessionDeaf(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const good, bad = "test://good", "test://bad"
	srv := newReview3Server(t)
	gate := make(chan struct{})
	asked := make(chan struct{}, 64)
	srv.refusal = func(rctx context.Context, f listenFilter2) map[string]any {
		if !slices.Contains(f.ResourceSubscriptions, bad) {
			return nil
		}
		asked <- struct{}{}
		select {
		case <-gate: // the server takes its time to refuse
		case <-rctx.Done():
		}
		return review3Refused
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()

	ug, err := s.Subscribe(ctx, good, func() {})
	require.NoError(t, err)
	defer ug()
	require.True(t, srv.liveAckedNaming(good))

	// The streams from here on (the one naming good alone may not be closed
	// at the server yet when the check below starts).
	since := srv.count()
	sctx, scancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-asked: // the stream naming bad reached the server
		case <-ctx.Done():
		}
		scancel()
	}()
	ub, err := s.Subscribe(sctx, bad, func() {})
	scancel()
	t.Logf("Subscribe(%s) whose ctx ended while the server considered the stream: %v", bad, err)
	if err == nil {
		defer ub()
	}
	close(gate) // the refusal of {bad, good} lands, and every later one at once

	require.True(t, srv.waitLiveAckedNaming(good, since, 15*time.Second),
		"the server refused the stream naming %s after its Subscribe gave up; nothing dropped %s, and for 15 s "+
			"every stream opened again names it and is refused: the subscription to %s has no stream", bad, bad, good)
}

// TestReview3RefusalKeepsTheServersError: Subscribe's error for a refused
// stream is to be "the server's error" (the commit), as Request returns an
// answered error: *mcpflow.RPCError with the server's code, message and
// data, which mcpserver hands its client as they are. refused rebuilds it
// from mcp-go's error value instead: the message gets mcp-go's sentinel
// text in front ("invalid params: cannot subscribe"), a code other than
// -32602, -32002 and -32601 becomes -32603, and data is dropped - so a
// -32002 with retryAfterSeconds (mcpflow's own codeTooMany, from an
// upstream mcpflow) reads as "resource not found" to notFound and
// SubscribeResource.
func TestReview3RefusalKeepsTheServersError(t *testing.T) {
	cases := map[string]map[string]any{
		"invalid params":      {"code": mcp.INVALID_PARAMS, "message": "cannot subscribe"},
		"too many, retry":     {"code": mcp.RESOURCE_NOT_FOUND, "message": "too many subscriptions", "data": map[string]any{"retryAfterSeconds": 3}},
		"invalid request":     {"code": mcp.INVALID_REQUEST, "message": "listen needs a filter"},
		"server-defined code": {"code": -32010, "message": "quota exceeded", "data": map[string]any{"quota": 10}},
	}
	for name, refusal := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			const uri = "test://refused"
			srv := newReview3Server(t)
			srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
				if slices.Contains(f.ResourceSubscriptions, uri) {
					return refusal
				}
				return nil
			}
			s := dialReview2(t, ctx, srv.URL, nil)
			defer s.Close()
			u, err := s.Subscribe(ctx, uri, func() {})
			if err == nil {
				u()
			}
			var rpc *mcpflow.RPCError
			require.True(t, errors.As(err, &rpc), "Subscribe: %v", err)
			want := &mcpflow.RPCError{Code: refusal["code"].(int), Message: refusal["message"].(string)}
			if d, ok := refusal["data"]; ok {
				want.Data, _ = json.Marshal(d)
			}
			type answered struct {
				Code    int
				Message string
				Data    string
			}
			compact := func(b json.RawMessage) string {
				var buf bytes.Buffer
				if len(b) == 0 || json.Compact(&buf, b) != nil {
					return string(b)
				}
				return buf.String()
			}
			require.Equal(t, answered{want.Code, want.Message, compact(want.Data)}, answered{rpc.Code, rpc.Message, compact(rpc.Data)},
				"Subscribe's error is not the server's refusal")
		})
	}
}

// TestReview3AckWithoutTheURI: the acknowledgement says what the server
// established (mcp-go's server: "intersects the client's requested filter
// with its own capabilities, acknowledges the result"). mcp-go's own server
// without resources.subscribe - which OffersSubscriptions takes for
// subscriptions on 2026-07-28 - acknowledges a stream naming the URI with
// no resourceSubscriptions and ends it. Subscribe ignores that ack, waits
// the full subsAckWait, warns that the server "did not acknowledge" (it
// did, within milliseconds) and returns success for a subscription the
// server declined: its caller hears no update, and the listener reopens the
// stream for it (1 s ... 1 min) for the rest of the session.
func TestReview3AckWithoutTheURI(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	const uri = "test://r"
	m := server.NewMCPServer("review3", "1", server.WithResourceCapabilities(false, true))
	m.AddResource(mcp.NewResource(uri, "r"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, Text: "x"}}, nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(m))
	defer ts.Close()
	logs := &review2Logs{}
	s := dialReview2(t, ctx, ts.URL+"/mcp", logs)
	defer s.Close()
	require.True(t, s.OffersSubscriptions())

	u, err := s.Subscribe(ctx, uri, func() {})
	if err == nil {
		defer u()
	}
	logs.mu.Lock()
	msgs := slices.Clone(logs.msgs)
	logs.mu.Unlock()
	require.Error(t, err, "Subscribe(%s) succeeded though the server acknowledged its stream without it (log: %q)", uri, msgs)
}
