package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
)

// slotServer is review2Server behind a per-user limit of open
// subscriptions/listen streams, as mcpflow's own mcpserver keeps one
// (server.max_mcp_streams_per_user: slot, then 429, Retry-After: 1 and a
// JSON-RPC -32002 over the limit). A stream the server ends itself gives
// its slot back at once; a stream whose client went gives it back only
// once the server noticed and cleaned up after it (mcpflow's listen runs
// unsubscribe - an upstream round trip - before its deferred release): here
// that is placed, so the order is fixed, after the server decided on the
// next subscriptions/listen to arrive (or 300 ms: the clean-up's round
// trip, generously; a probe refused after another was accepted is asked
// again after listenRetryMin, when the room is back). "Next" counts from
// the client going, not from the stream's handler noticing it, which
// under load can come after that decision: a decision that finds the
// stream's request ended is the one it held its slot for.
type slotServer struct {
	*review2Server
	mu      sync.Mutex
	limit   int           // open streams allowed (0: no limit)
	open    int           // streams holding a slot
	full    int           // the next listens refused whatever the count (another client of the user)
	decided chan struct{} // closed, and replaced, at each listen admitted or refused
	refused int           // listens answered 429
	held    map[*slotHold]bool
}

// slotHold is a stream holding a slot: its request's context, and whether
// a decision found that request ended (its client gone) while the slot
// was still held.
type slotHold struct {
	ctx     context.Context
	counted bool
}

func newSlotServer(t *testing.T) *slotServer {
	s := &slotServer{review2Server: &review2Server{t: t, opened: make(chan *review2Stream, 64)}, decided: make(chan struct{}),
		held: map[*slotHold]bool{}}
	ts := httptest.NewServer(http.HandlerFunc(s.serveSlots))
	t.Cleanup(ts.Close)
	s.URL = ts.URL + "/mcp"
	return s
}

// waitOneSlot waits until one stream holds a slot.
func (s *slotServer) waitOneSlot(ctx context.Context, t *testing.T) {
	for {
		s.mu.Lock()
		n := s.open
		s.mu.Unlock()
		if n == 1 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d streams hold a slot, want 1", n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (s *slotServer) serveSlots(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get(mcp.HeaderMethod) != string(mcp.MethodSubscriptionsListen) {
		s.serve(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &msg)
	s.mu.Lock()
	ok := s.full == 0 && (s.limit == 0 || s.open < s.limit)
	if s.full > 0 {
		s.full--
	}
	for h := range s.held {
		if h.ctx.Err() != nil {
			h.counted = true // this decision was its "next"
		}
	}
	h := &slotHold{ctx: r.Context()}
	if ok {
		s.open++
		s.held[h] = true
	} else {
		s.refused++
	}
	close(s.decided)
	s.decided = make(chan struct{})
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{
			"code": -32002, "message": "too many streams open for this user (server.max_mcp_streams_per_user): close a subscription or retry shortly"}})
		return
	}
	defer func() { // also as an "abort" panics through here
		if r.Context().Err() != nil { // the client went: cleaned up after the next listen was decided
			s.mu.Lock()
			next, counted := s.decided, h.counted
			s.mu.Unlock()
			if !counted {
				select {
				case <-next:
				case <-time.After(300 * time.Millisecond): // an upstream round trip, unhurried
				}
			}
		}
		s.mu.Lock()
		s.open--
		delete(s.held, h)
		s.mu.Unlock()
	}()
	s.serve(w, r)
}

// TestReview5ProbeSlotNotYetReleasedDropsASubscription: test://a and
// test://b are established on an upstream mcpflow allowing the user one
// stream. The server cuts the stream and, as another client of the same
// user holds the slot for a moment, refuses the next one as too many
// (429, -32002, "retry shortly"). refused probes a alone: acknowledged,
// so a counts as accepted; its probe is cancelled and, as soon as the
// client's request returned, b is probed alone. The server has not yet
// noticed that a's probe went (it learns of a client leaving
// asynchronously, and cleans up before it releases the slot), so it
// refuses b's probe as too many too: "refused alone while another URI was
// accepted alone", and b is dropped for good (a warning), though the
// refusal said nothing about it: exactly the 'too many streams' case the
// commit meant to keep ("a refusal of every stream ... the listener asks
// again later"). "Gone before the next one opens" holds at the client
// only, not at an HTTP server that counts streams.
func TestReview5ProbeSlotNotYetReleasedDropsASubscription(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a, b = "test://a", "test://b"
	srv := newSlotServer(t)
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	for _, uri := range []string{a, b} {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a, b))
	var st *review2Stream
	srv.mu.Lock()
	for _, c := range srv.streams {
		c.mu.Lock()
		if c.acked && !c.closed && c.names(a) && c.names(b) {
			st = c
		}
		c.mu.Unlock()
	}
	srv.mu.Unlock()
	require.NotNil(t, st)
	srv.waitOneSlot(ctx, t) // the earlier streams' slots are given back before the limit applies

	since := srv.count()
	srv.mu.Lock()
	srv.limit, srv.full = 1, 1
	srv.mu.Unlock()
	st.end <- "abort"
	live := srv.waitLiveAckedNamingAll(since, 15*time.Second, a, b)
	srv.mu.Lock()
	refusedN := srv.refused
	srv.mu.Unlock()
	require.True(t, live, "after one 'too many streams' refusal (%d listens refused as too many in all), no stream names %s and %s for 15 s "+
		"(dropped-warning logged: %v): a probe was refused because the previous probe's slot was still held",
		refusedN, a, b, logs.has("they are dropped"))
}

// TestReview5WaitingSubscribeGetsAnotherURIsRefusalWhenItsProbeIsSlow:
// test://a was subscribed; the server now refuses it (the resource
// removed), answering a stream naming a and test://w with a's refusal, as
// mcp-go's server does (the first URI it fails to subscribe). A stream
// naming w alone is acknowledged only after subsAckWait (an upstream that
// subscribes at its own upstream first; the commit's own example).
// Subscribe(w) opens {a, w}, refused; the probe of a hears a's refusal,
// the probe of w no answer within subsAckWait. Nothing is accepted, so a
// is kept, and failed+dropped is 0: refused fails the waiting Subscribe(w)
// with the stream's refusal, a's -32602 "subscribing to test://a ...",
// which SubscribeResource reads as test://w not found at this server. The
// rule is that a waiting URI fails with the server's refusal of it alone
// (or the stream's when no URI is refused alone): here a URI was refused
// alone and it was not w.
func TestReview5WaitingSubscribeGetsAnotherURIsRefusalWhenItsProbeIsSlow(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	const aRefused = `subscribing to "test://a": resource removed`
	srv := newReview3Server(t)
	var removed atomic.Bool
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if removed.Load() && slices.Contains(f.ResourceSubscriptions, a) {
			return map[string]any{"code": mcp.INVALID_PARAMS, "message": aRefused}
		}
		return nil
	}
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return slices.Equal(f.ResourceSubscriptions, []string{w}), nil // w alone: not acknowledged in time
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	removed.Store(true)

	uw, err := s.Subscribe(ctx, w, func() {})
	if err == nil {
		defer uw()
	}
	var rpc *mcpflow.RPCError
	if errors.As(err, &rpc) {
		require.NotEqual(t, aRefused, rpc.Message,
			"Subscribe(%s) failed with the server's refusal of %s (code %d), which reads as %s not found; the server never refused %s",
			w, a, rpc.Code, w, w)
	}
}

// TestReview5ExplainedRefusalsInflateTheBackoff: listenLoop doubles its
// backoff at each stream that ends unacknowledged, and puts it back to
// listenRetryMin only when a stream that ends had been acknowledged
// ("back to the start after a stream the server acknowledged"). A refused
// stream whose refusal refused settled - a waiting Subscribe failed with
// its URI's refusal, and the stream asked again at once without it - still
// doubles it, and an acknowledged stream the listener replaces (each
// Subscribe, each unsubscribe) never puts it back. After a handful of
// Subscribes of a URI the server refuses, the backoff is a minute, while
// the session's stream has been acknowledged again each time: the next
// refusal that says nothing about any URI (one 429 'too many streams',
// which the commit leaves to "the listener asks again later") leaves
// every subscription of the session without a stream for that minute.
func TestReview5ExplainedRefusalsInflateTheBackoff(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const a, c, bad = "test://a", "test://c", "test://bad"
	srv, full := tooManyServer(t)
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if slices.Contains(f.ResourceSubscriptions, bad) {
			return review3Refused
		}
		return nil
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	uc, err := s.Subscribe(ctx, c, func() {})
	require.NoError(t, err)
	for range 24 {
		// Each round once the session's stream (a and c) is acknowledged
		// again: no wake of the last round's is pending to open a stream
		// naming bad while its Subscribe reads it (TestReview5FirstSubscribeDroppedWhileItReads).
		since := srv.count()
		u, err := s.Subscribe(ctx, bad, func() {})
		if err == nil {
			u()
		}
		require.Error(t, err, "the server refuses every stream naming %s", bad)
		require.True(t, srv.waitLiveAckedNamingAll(since, 10*time.Second, a, c))
	}

	since := srv.count()
	full.Store(1) // the next listen is refused as too many, once
	uc()          // the stream asked again, for a alone: refused
	require.True(t, srv.waitLiveAckedNaming(a, since, 20*time.Second),
		"one 'too many streams' refusal right after an acknowledged stream: no stream names %s for 20 s "+
			"(listenRetryMin is %s): the backoff grew at each refused Subscribe and was never put back", a, listenRetryMin)
}

// TestReview5StdioProbesOverlapAtTheServer: over stdio a probe the server
// acknowledged ends at the server with notifications/cancelled, which
// cancelUpstream writes on a goroutine of its own; probeRefused opens the
// next probe as soon as the request returned at the client, so the next
// probe's subscriptions/listen often reaches the server before the
// previous probe's cancellation: the server sees two streams open, which
// "each probe's request finished before the next" is to prevent (a server
// allowing one stream at a time refuses the second probe, and refused
// then blames that URI).
func TestReview5StdioProbesOverlapAtTheServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	exe, err := os.Executable()
	require.NoError(t, err)
	logPath := filepath.Join(t.TempDir(), "in.jsonl")
	s, err := Dial(ctx, &config.Server{Name: "review5", Enabled: true, Type: config.TransportStdio,
		Command: exe, Args: []string{"-test.run=^TestReview3StdioHelper$"},
		Env: map[string]string{"REVIEW3_STDIO_LOG": logPath}, ProtocolVersion: "2026-07-28"}, DialOptions{})
	require.NoError(t, err)
	defer s.Close()
	require.True(t, s.Modern())
	const n = 12
	for i := range n {
		u, err := s.Subscribe(ctx, fmt.Sprintf("test://%02d", i), func() {})
		require.NoError(t, err)
		defer u()
	}
	for range 3 {
		u, err := s.Subscribe(ctx, "test://bad", func() {}) // "test://bad" sorts after "test://NN": probed last
		if err == nil {
			u()
		}
		require.Error(t, err)
	}

	type listen struct {
		id      string
		uris    []string
		overlap []string // the probes not yet cancelled when it arrived
	}
	var overlaps []string
	for {
		var probes []*listen
		open := map[string]bool{} // acknowledged probes not cancelled yet
		inProbes := false
		for _, m := range readStdioLog(t, logPath) {
			switch m.Method {
			case "subscriptions/listen":
				uris := m.Params.Notifications.ResourceSubscriptions
				switch {
				case len(uris) > 1:
					inProbes = slices.Contains(uris, "test://bad") // refused: probes follow
					clear(open)
				case inProbes:
					l := &listen{id: string(m.ID), uris: uris}
					for id := range open {
						l.overlap = append(l.overlap, id)
					}
					probes = append(probes, l)
					if !slices.Contains(uris, "test://bad") {
						open[l.id] = true
					}
				}
			case "notifications/cancelled":
				delete(open, string(m.Params.RequestID))
			}
		}
		overlaps = overlaps[:0]
		for _, p := range probes {
			if len(p.overlap) > 0 {
				overlaps = append(overlaps, fmt.Sprintf("%s %v while %v open", p.id, p.uris, p.overlap))
			}
		}
		if len(probes) >= 3*(n+1) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d probes logged, want %d", len(probes), 3*(n+1))
		case <-time.After(20 * time.Millisecond):
		}
	}
	require.Empty(t, overlaps, "probes that reached the stdio server before the previous probe's notifications/cancelled")
}

// TestReview5FirstSubscribeDroppedWhileItReads: a first Subscribe puts its
// URI in s.subs.byURI before its resources/read, and in s.subs.waiting
// only after it (awaitStream). A stream the listener opens meanwhile (here
// the server cut the session's stream and the listener opens it again
// after listenRetryMin; a pending wake, HearLists, do the same) names the
// URI, and when the server refuses it, refused takes the URI for an
// earlier subscription: test://a accepted alone and test://w refused
// alone, w is "dropped" (deleted from s.subs.byURI, with the warning)
// under its own first Subscribe. awaitStream then asks for a stream
// without w, whose acknowledgement says nothing about w, waits its
// subsAckWait out and returns success: the caller is told it is
// subscribed to a resource the server refused in every stream, and its
// callback is no longer registered. (Seen at random in a loop of
// Subscribes of a refused URI, a wake of the previous one still pending.)
func TestReview5FirstSubscribeDroppedWhileItReads(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	srv := newReview3Server(t)
	var refusals atomic.Int32
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if slices.Contains(f.ResourceSubscriptions, w) {
			refusals.Add(1)
			return review3Refused
		}
		return nil
	}
	url, reading, release := heldRead(t, w, nil, srv.serve)
	defer release()
	logs := &review2Logs{}
	s := dialReview2(t, ctx, url, logs)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	var st *review2Stream
	select {
	case st = <-srv.opened:
	case <-ctx.Done():
		t.Fatal("no stream")
	}
	require.True(t, srv.waitLiveAckedNaming(a, 0, 10*time.Second))

	done := make(chan error, 1)
	go func() {
		u, err := s.Subscribe(ctx, w, func() {})
		if err == nil {
			u()
		}
		done <- err
	}()
	select {
	case <-reading:
	case <-ctx.Done():
		t.Fatal("no resources/read of w")
	}
	st.end <- "abort" // the listener opens {a, w} again after listenRetryMin, refused
	// {a, w} refused, then the probes: a accepted, w refused.
	for refusals.Load() < 2 || s.probing() {
		select {
		case err := <-done:
			t.Fatalf("Subscribe(%s) returned (%v) before the server answered its resources/read", w, err)
		case <-ctx.Done():
			t.Fatal("the stream naming a and w was not refused")
		case <-time.After(10 * time.Millisecond):
		}
	}
	release()
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("Subscribe did not return")
	}
	s.subs.mu.Lock()
	_, kept := s.subs.byURI[w]
	s.subs.mu.Unlock()
	require.False(t, logs.has("they are dropped"), "a subscription was dropped")
	require.Error(t, err, "Subscribe(%s) succeeded (did-not-acknowledge warning: %v; %s still asked for: %v) though the server refused every stream naming it: "+
		"refused dropped it as an earlier subscription while its first Subscribe read it", w, logs.has("did not acknowledge"), w, kept)
}

// untaggedWriter strips the subscription id from what a stream sends: a
// server whose notifications/subscriptions/acknowledged carries no _meta
// subscriptionId, which acknowledged takes for the open stream's.
type untaggedWriter struct{ http.ResponseWriter }

func (u untaggedWriter) Write(b []byte) (int, error) {
	_, err := u.ResponseWriter.Write(bytes.ReplaceAll(b, []byte(`"`+mcp.MetaKeySubscriptionID+`"`), []byte(`"x-untagged"`)))
	return len(b), err
}

func (u untaggedWriter) Flush() { u.ResponseWriter.(http.Flusher).Flush() }

// TestReview5UntaggedProbeAckTakenForTheRefusedStreams: acknowledged
// tells a probe's acknowledgement by its _meta subscriptionId alone, and
// takes an untagged one for the open stream's (line 108: "tagged &&").
// While refused probes, the open stream is the refused one: the untagged
// acknowledgement of the probe of test://a (naming a alone) is taken for
// the acknowledgement of {a, w}, which "leaves w out", so the waiting
// Subscribe(w) fails at once with "did not subscribe to the resource"
// (EUpstream, which SubscribeResource reports as is) instead of the
// server's refusal of w (-32602, which it reads as not this server's);
// the probe itself is never seen acknowledged and waits out subsAckWait.
func TestReview5UntaggedProbeAckTakenForTheRefusedStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	srv := newReview3Server(t)
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if slices.Contains(f.ResourceSubscriptions, w) {
			return review3Refused
		}
		return nil
	}
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		srv.serve(untaggedWriter{rw}, r)
	}))
	defer ts.Close()
	s := dialReview2(t, ctx, ts.URL+"/mcp", nil)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err, "an untagged acknowledgement of the open stream counts")
	defer ua()

	uw, err := s.Subscribe(ctx, w, func() {})
	if err == nil {
		defer uw()
	}
	var rpc *mcpflow.RPCError
	require.True(t, errors.As(err, &rpc), "Subscribe(%s): %v, not the server's refusal of it", w, err)
	require.Equal(t, review3Refused["code"], rpc.Code)
}

// TestReview5JudgedSubscribeGivenUp (holds): while refused probes test://a
// alone (held by the server) for the refusal of {a, w}, the caller of
// Subscribe(w) gives up: it returns its ctx's error at once, an unsubscribe
// of test://b called meanwhile waits for s.subs.req and then returns too, the probe is ended, no judging entry is left behind, and the
// session settles on an acknowledged stream naming a alone.
func TestReview5JudgedSubscribeGivenUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const a, b, w = "test://a", "test://b", "test://w"
	srv := newReview3Server(t)
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if slices.Contains(f.ResourceSubscriptions, w) {
			return review3Refused
		}
		return nil
	}
	var holding atomic.Bool
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return holding.Load() && slices.Equal(f.ResourceSubscriptions, []string{a}), nil
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	ub, err := s.Subscribe(ctx, b, func() {})
	require.NoError(t, err)
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a, b))
	drainOpened(srv.review2Server)
	holding.Store(true)

	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	order := make(chan string, 2)
	go func() {
		u, err := s.Subscribe(sctx, w, func() {})
		if err == nil {
			u()
		}
		order <- fmt.Sprint("subscribe: ", err)
	}()
	var probe *review2Stream
	for probe == nil {
		select {
		case st := <-srv.opened:
			if slices.Equal(st.filter.ResourceSubscriptions, []string{a}) {
				probe = st           // {a, b, w} was refused: the probe of a, held
				holding.Store(false) // (not the streams that follow)
			}
		case <-ctx.Done():
			t.Fatal("no probe")
		}
	}
	s.subs.mu.Lock()
	judged := s.subs.waiting[w] != nil && s.subs.waiting[w].judging
	s.subs.mu.Unlock()
	require.True(t, judged)
	go func() {
		ub()
		order <- "unsubscribe"
	}()
	waitStack(t, ctx, "semaphore.(*Weighted).Acquire", "(*Session).unsubscribe") // behind Subscribe(w)
	require.Empty(t, order)
	scancel()
	var got []string
	for range 2 {
		select {
		case o := <-order:
			got = append(got, o)
		case <-ctx.Done():
			t.Fatalf("returned so far: %v", got)
		}
	}
	require.ElementsMatch(t, []string{"subscribe: " + context.Canceled.Error(), "unsubscribe"}, got)
	select {
	case <-probe.gone:
	case <-ctx.Done():
		t.Fatal("the held probe was not ended")
	}
	for {
		s.subs.mu.Lock()
		left := len(s.subs.waiting) + len(s.subs.probes)
		cur := s.subs.stream
		s.subs.mu.Unlock()
		if left == 0 && cur != nil && slices.Equal(cur.filter.ResourceSubscriptions, []string{a}) && srv.liveAckedNaming(a) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("judging/waiting/probes entries left: %d; stream %v", left, cur)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// probing reports whether probeRefused has a probe open.
func (s *Session) probing() bool {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	return len(s.subs.probes) > 0
}
