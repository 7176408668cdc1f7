package session

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpclient/streamhttp"
)

// review2Server is a minimal MCP 2026-07-28 server over streamable HTTP
// whose subscriptions/listen streams the test controls: when each is
// acknowledged (holdAck), when it ends (end), and which of them hear a
// resource update (update). A stand-in, not an implementation of the
// protocol: the tests need streams held, cut and refused at chosen
// moments, which no real server does on demand; the subscriptions
// themselves meet the TypeScript SDK's server in TestRelistenInQuickSuccession
// and cmd/mcpflow's subscription tests.
type review2Server struct {
	t   *testing.T
	URL string

	// holdAck, when set, is asked for each stream: a stream it holds is
	// acknowledged only once release is closed (or never when nil).
	holdAck func(filter listenFilter2) (hold bool, release <-chan struct{})
	// refuse, when set, answers a stream it refuses with this JSON-RPC error.
	refuse func(filter listenFilter2) bool

	mu      sync.Mutex
	streams []*review2Stream
	opened  chan *review2Stream // each stream as it opens
}

type listenFilter2 struct {
	ResourceSubscriptions []string `json:"resourceSubscriptions"`
	PromptsListChanged    bool     `json:"promptsListChanged"`
	ResourcesListChanged  bool     `json:"resourcesListChanged"`
}

type review2Stream struct {
	filter listenFilter2
	mu     sync.Mutex
	w      http.ResponseWriter
	acked  bool
	closed bool
	end    chan string // "abort" cuts the connection, "result" answers the request
	gone   chan struct{}
}

func newReview2Server(t *testing.T) *review2Server {
	s := &review2Server{t: t, opened: make(chan *review2Stream, 64)}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(ts.Close)
	s.URL = ts.URL + "/mcp"
	return s
}

func (s *review2Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if len(msg.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	answer := func(result any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
	}
	switch msg.Method {
	case "server/discover":
		answer(map[string]any{
			"supportedVersions": []string{"2026-07-28"},
			"capabilities": map[string]any{
				"resources": map[string]any{"subscribe": true, "listChanged": true},
				"prompts":   map[string]any{"listChanged": true},
			},
			"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "review2", "version": "1"}},
		})
	case "resources/read":
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		answer(map[string]any{"contents": []any{map[string]any{"uri": p.URI, "text": "x"}}})
	case "subscriptions/listen":
		var p struct {
			Notifications listenFilter2 `json:"notifications"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		s.listen(w, r, msg.ID, p.Notifications)
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
			"error": map[string]any{"code": -32601, "message": "method not found"}})
	}
}

func (s *review2Server) listen(w http.ResponseWriter, r *http.Request, id json.RawMessage, f listenFilter2) {
	if s.refuse != nil && s.refuse(f) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id,
			"error": map[string]any{"code": -32602, "message": "cannot subscribe"}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	st := &review2Stream{filter: f, w: w, end: make(chan string, 1), gone: make(chan struct{})}
	defer close(st.gone)
	defer func() {
		st.mu.Lock()
		st.closed = true
		st.mu.Unlock()
	}()
	s.mu.Lock()
	s.streams = append(s.streams, st)
	s.mu.Unlock()
	select {
	case s.opened <- st:
	default: // nobody looks at this many
	}

	ack := func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.acked = true
		st.sendLocked(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
			"params": map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/subscriptionId": id}, "notifications": f}})
	}
	var release <-chan struct{}
	hold := false
	if s.holdAck != nil {
		hold, release = s.holdAck(f)
	}
	if !hold {
		ack()
	} else {
		go func() {
			select {
			case <-release:
				ack()
			case <-r.Context().Done():
			case <-st.gone:
			}
		}()
	}
	select {
	case <-r.Context().Done():
	case how := <-st.end:
		if how == "abort" { // the connection cut (a restart, a proxy's idle timeout)
			panic(http.ErrAbortHandler)
		}
		if how == "result" {
			st.mu.Lock()
			st.sendLocked(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{}})
			st.mu.Unlock()
		}
	}
}

func (st *review2Stream) sendLocked(v any) {
	if st.closed {
		return
	}
	b, _ := json.Marshal(v)
	_, _ = fmt.Fprintf(st.w, "data: %s\n\n", b)
	st.w.(http.Flusher).Flush()
}

// names reports whether the stream asks for uri.
func (st *review2Stream) names(uri string) bool {
	return slices.Contains(st.filter.ResourceSubscriptions, uri)
}

// liveAckedNaming reports whether a stream naming uri is open and acknowledged.
func (s *review2Server) liveAckedNaming(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.streams {
		st.mu.Lock()
		ok := st.acked && !st.closed && st.names(uri)
		st.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// ackedNaming reports whether a stream naming uri has been acknowledged.
func (s *review2Server) ackedNaming(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.streams {
		st.mu.Lock()
		ok := st.acked && st.names(uri)
		st.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// review2Logs records the session's log messages.
type review2Logs struct {
	mu   sync.Mutex
	msgs []string
}

func (l *review2Logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *review2Logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *review2Logs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *review2Logs) WithGroup(string) slog.Handler      { return l }
func (l *review2Logs) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

func dialReview2(t *testing.T, ctx context.Context, url string, logs *review2Logs) *Session {
	t.Helper()
	o := DialOptions{}
	if logs != nil {
		o.Logger = slog.New(logs)
	}
	s, err := Dial(ctx, &config.Server{Name: "review2", Enabled: true, Type: config.TransportHTTP,
		URL: url, ProtocolVersion: "2026-07-28"}, o)
	require.NoError(t, err)
	require.True(t, s.Modern())
	return s
}

// waitStack waits until a goroutine's stack holds every one of parts.
func waitStack(t *testing.T, ctx context.Context, parts ...string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(g, p)
			}
			if all {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no goroutine with %q", parts)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestReview2SubscribeReleasedByAnOlderStreamsAck: the ack a first
// Subscribe waits for is the session's one pending s.subs.acked, and
// relistenLocked keeps a pending one for the next stream. When the pending
// ack belongs to a stream opened before the URI was added (here HearLists'
// stream, as mcpserver's subscriptions/listen does: WatchLists, then
// SubscribeResource per URI), that older stream's acknowledgement - read off
// the wire just as Subscribe's relistenLocked holds s.subs.mu - releases
// the Subscribe of a URI it does not name. Subscribe then returns while no
// stream naming the URI has been acknowledged (not even opened: the loop is
// still ending the old one), so an update sent right after it returns is
// lost, which Subscribe's doc promises against. The acknowledgement is held
// in the transport's notification handler only to place it in that window.
func TestReview2SubscribeReleasedByAnOlderStreamsAck(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const uri = "test://b"
	srv := newReview2Server(t)
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return slices.Contains(f.ResourceSubscriptions, uri), nil // never acknowledged: the test looks before
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()

	// The first acknowledgement (of HearLists' stream) waits in the
	// transport's reader until released, then goes where it always goes.
	parked, release := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	unpark := func() { releaseOnce.Do(func() { close(release) }) }
	defer unpark()
	s.client.GetTransport().(*streamhttp.Transport).SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationSubscriptionsAcknowledged {
			once.Do(func() {
				close(parked)
				<-release
			})
		}
		s.onNotification(n)
	})

	s.HearLists()
	select {
	case <-parked:
	case <-ctx.Done():
		t.Fatal("HearLists' stream was not acknowledged")
	}

	type result struct {
		unsubscribe func()
		err         error
	}
	done := make(chan result, 1)
	go func() {
		u, err := s.Subscribe(ctx, uri, func() {})
		done <- result{u, err}
	}()
	// Subscribe's relistenLocked woke the listener, which now waits for the
	// old stream's Listen to return (its reader holds the acknowledgement).
	waitStack(t, ctx, "[chan receive", "(*Session).listen.func1", "(*Session).listenLoop")
	unpark()

	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("Subscribe did not return")
	}
	require.NoError(t, r.err)
	defer r.unsubscribe()
	require.True(t, srv.ackedNaming(uri) || logs.has("did not acknowledge"),
		"Subscribe(%s) returned (without its timeout's warning) though no stream naming %s was acknowledged: "+
			"the acknowledgement of the stream opened before it released it", uri, uri)
}

// TestReview2StreamCutByTheServerIsNotReopened: the subscriptions/listen
// stream is the only way a 2026-07-28 session hears resource updates and
// list changes, and listenLoop is to keep it "asking for what
// relistenLocked asked for last, until the session ends". When the server
// side cuts it (the server restarted - a 2026 session has no session id to
// lose, its other requests go on working - or a proxy's idle timeout),
// listen logs a warning and nothing opens it again: every subscriber of
// the session hears no update for the rest of the session (the 2025 GET
// stream is reopened after its retry delay, streamhttp.Transport.listen).
// The bound is a generous liveness limit, not a timing assertion.
func TestReview2StreamCutByTheServerIsNotReopened(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const uri = "test://a"
	srv := newReview2Server(t)
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()

	unsubscribe, err := s.Subscribe(ctx, uri, func() {})
	require.NoError(t, err)
	defer unsubscribe()
	var st *review2Stream
	select {
	case st = <-srv.opened:
	case <-ctx.Done():
		t.Fatal("no stream")
	}
	require.True(t, st.names(uri))
	require.True(t, srv.ackedNaming(uri))

	st.end <- "abort"
	select {
	case again := <-srv.opened:
		require.True(t, again.names(uri))
	case <-time.After(20 * time.Second):
		t.Fatalf("the stream naming %s was cut by the server 20 s ago and never opened again: the subscription is deaf for the rest of the session", uri)
	}
}

// TestReview2RefusedStreamTakesTheOtherSubscriptionsDown: one stream names
// every subscribed URI, so a server that refuses subscriptions/listen for
// one of them (mcp-go's server answers the whole request -32602 when a
// session refuses one URI) leaves the session with no stream at all. The
// Subscribe of the refused URI returns nil (listen's error path "releases"
// it as if acknowledged: the caller is told it is subscribed), and the
// subscription to test://a that worked before it - another caller's, on a
// shared session - hears nothing any more: nothing opens a stream naming it
// again.
func TestReview2RefusedStreamTakesTheOtherSubscriptionsDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const good, bad = "test://a", "test://refused"
	srv := newReview2Server(t)
	srv.refuse = func(f listenFilter2) bool { return slices.Contains(f.ResourceSubscriptions, bad) }
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()

	unsubscribe, err := s.Subscribe(ctx, good, func() {})
	require.NoError(t, err)
	defer unsubscribe()
	require.True(t, srv.liveAckedNaming(good))

	u, err := s.Subscribe(ctx, bad, func() {})
	if err == nil {
		defer u()
	}
	deadline := time.After(20 * time.Second)
	for !srv.liveAckedNaming(good) {
		select {
		case <-deadline:
			t.Fatalf("after Subscribe(%s) (which returned error %v though the server refused every stream naming it), "+
				"no open stream names %s for 20 s: its subscriber hears no update", bad, err, good)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
