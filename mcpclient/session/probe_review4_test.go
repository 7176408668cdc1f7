package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
)

// waitLiveAckedNamingAll waits (a generous liveness bound, not a timing
// assertion) for an open, acknowledged stream naming every one of uris
// among the streams opened after the first since. Naming all of them
// leaves out probeRefused's streams, which name one URI each.
func (s *review2Server) waitLiveAckedNamingAll(since int, within time.Duration, uris ...string) bool {
	deadline := time.Now().Add(within)
	for {
		s.mu.Lock()
		streams := slices.Clone(s.streams[since:])
		s.mu.Unlock()
		for _, st := range streams {
			st.mu.Lock()
			ok := st.acked && !st.closed
			for _, uri := range uris {
				ok = ok && st.names(uri)
			}
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

// drainOpened empties srv.opened of the streams opened so far.
func drainOpened(srv *review2Server) {
	for {
		select {
		case <-srv.opened:
		default:
			return
		}
	}
}

// TestReview4ProbeOutlastsTheWaitingSubscribe: test://a is subscribed and
// acknowledged; the server refuses every stream naming test://b, at once.
// Subscribe(test://b) opens {a, b}, refused; refused probes a first (the
// URIs sorted) and the server takes longer than subsAckWait to acknowledge
// a stream naming test://a alone (an upstream mcpflow acknowledges only
// after subscribing at its own upstream, which may itself wait
// subsAckWait). awaitStream's timer, started before the stream even
// opened, runs out during that probe: Subscribe(test://b) returns success
// ("did not acknowledge in time") though the server refused every stream
// naming it within milliseconds, and the probe of b that follows drops
// the subscription its caller was just told it has. Before 3313b92 the
// refusal failed the waiting Subscribe at once with the server's error.
func TestReview4ProbeOutlastsTheWaitingSubscribe(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const a, b = "test://a", "test://b"
	srv := newReview3Server(t)
	var slow atomic.Bool
	var refusals atomic.Int32
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if slices.Contains(f.ResourceSubscriptions, b) {
			refusals.Add(1)
			return review3Refused
		}
		return nil
	}
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return slow.Load() && slices.Equal(f.ResourceSubscriptions, []string{a}), nil // held until the client goes
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()

	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	slow.Store(true)

	ub, err := s.Subscribe(ctx, b, func() {})
	if err == nil {
		defer ub()
	}
	require.Error(t, err, "Subscribe(%s) succeeded though the server refused all %d streams naming it (log: did-not-acknowledge warning %v): "+
		"its wait ran out while refused probed %s", b, refusals.Load(), logs.has("did not acknowledge"), a)
}

// TestReview4RefusalTheProbesDoNotRepeat: the server refuses a stream
// naming more than two resources (-32602, as mcpflow's own mcpserver does
// past maxListenTasks, 100, per subscriptions/listen). test://a and
// test://b are subscribed; Subscribe(test://c) opens {a, b, c}, refused.
// Each URI alone is accepted, so probeRefused blames none and refused does
// nothing: the waiting Subscribe(test://c) runs out its subsAckWait and
// returns success (the server never subscribed it), and the listener opens
// {a, b, c} again and again (1 s, 2 s ... 1 min), refused each time: the
// subscriptions to test://a and test://b that worked before have no stream
// for as long as test://c stays subscribed. Before 3313b92 the waiting
// Subscribe was failed with the server's error and {a, b} asked for again.
func TestReview4RefusalTheProbesDoNotRepeat(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a, b, c = "test://a", "test://b", "test://c"
	srv := newReview3Server(t)
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if len(f.ResourceSubscriptions) > 2 {
			return map[string]any{"code": mcp.INVALID_PARAMS, "message": "params.notifications: at most 2 task ids and 2 resources per subscription"}
		}
		return nil
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	for _, uri := range []string{a, b} {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}

	since := srv.count()
	uc, err := s.Subscribe(ctx, c, func() {})
	assert.Error(t, err, "Subscribe(%s) succeeded though every stream naming it was refused (did-not-acknowledge warning: %v)",
		c, logs.has("did not acknowledge"))
	live := srv.waitLiveAckedNamingAll(since, 15*time.Second, a, b)
	if err == nil {
		uc()
	}
	require.True(t, live, "for 15 s after Subscribe(%s) no open stream named %s and %s: their subscribers hear no update", c, a, b)
}

// TestReview4RetryLaterRefusalDropsEstablished: the subscriptions are
// established (acknowledged) when the server cuts the stream, and it
// refuses the next few subscriptions/listen with mcpflow's own "too many
// streams" answer (HTTP 429, Retry-After: 1, -32002: the user's
// max_mcp_streams_per_user slots are taken for a while). That refusal says
// nothing about any URI, yet refused blames them: a lone URI without a
// probe, two URIs through probes that the same full server refuses too.
// They are dropped for good (a warning; their callers were told they are
// subscribed and are never told otherwise), and once the server has room
// again no stream asks for them. Before 3313b92 a refusal of URIs
// acknowledged before was tried again later (the listener's backoff).
func TestReview4RetryLaterRefusalDropsEstablished(t *testing.T) {
	for _, c := range []struct {
		name    string
		uris    []string
		refuses int32 // the listens refused while full: the stream's, and each probe's
	}{
		{"one URI", []string{"test://a"}, 1},
		{"two URIs", []string{"test://a", "test://b"}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			srv, full := tooManyServer(t)
			logs := &review2Logs{}
			s := dialReview2(t, ctx, srv.URL, logs)
			defer s.Close()
			for _, uri := range c.uris {
				u, err := s.Subscribe(ctx, uri, func() {})
				require.NoError(t, err)
				defer u()
			}
			var st *review2Stream
			for st == nil || !st.names(c.uris[len(c.uris)-1]) {
				select {
				case st = <-srv.opened:
				case <-ctx.Done():
					t.Fatal("no stream naming every URI")
				}
			}
			require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, c.uris...))

			since := srv.count()
			full.Store(c.refuses)
			st.end <- "abort"
			require.True(t, srv.waitLiveAckedNamingAll(since, 15*time.Second, c.uris...),
				"the server refused %d subscriptions/listen as too many (retry shortly) and has room again; "+
					"for 15 s no stream named %v (dropped-warning logged: %v)", c.refuses, c.uris, logs.has("they are dropped"))
		})
	}
}

// tooManyServer is review3Server behind mcpflow's answer to a
// subscriptions/listen over the user's stream limit (mcpserver's
// tooMany): while the returned count is positive each listen is refused
// with 429, Retry-After: 1 and a JSON-RPC -32002, and the count drops.
func tooManyServer(t *testing.T) (*review3Server, *atomic.Int32) {
	s := &review3Server{review2Server: &review2Server{t: t, opened: make(chan *review2Stream, 64)}}
	var full atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen) {
			for n := full.Load(); n > 0; n = full.Load() {
				if !full.CompareAndSwap(n, n-1) {
					continue
				}
				var msg struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.NewDecoder(r.Body).Decode(&msg)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{
					"code": -32002, "message": "too many streams open for this user (server.max_mcp_streams_per_user): close a subscription or retry shortly"}})
				return
			}
		}
		s.serve(w, r)
	}))
	t.Cleanup(ts.Close)
	s.URL = ts.URL + "/mcp"
	return s, &full
}

// TestReview4CloseDuringProbe (holds): the session closes while refused
// probes a URI whose stream the server holds unacknowledged: the waiting
// Subscribe fails (the session ended), the probe's stream ends at the
// server, and TestMain's goleak finds nothing of the probe left.
func TestReview4CloseDuringProbe(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const a, b = "test://a", "test://b"
	srv := newReview3Server(t)
	var slow atomic.Bool
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if slices.Contains(f.ResourceSubscriptions, b) {
			return review3Refused
		}
		return nil
	}
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return slow.Load(), nil
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	drainOpened(srv.review2Server)
	slow.Store(true)

	done := make(chan error, 1)
	go func() {
		u, err := s.Subscribe(ctx, b, func() {})
		if err == nil {
			u()
		}
		done <- err
	}()
	var probe *review2Stream
	select {
	case probe = <-srv.opened: // {a, b} is refused, so this is the probe of a
	case <-ctx.Done():
		t.Fatal("no probe")
	}
	require.Equal(t, []string{a}, probe.filter.ResourceSubscriptions)
	require.NoError(t, s.Close())
	select {
	case err := <-done:
		require.Error(t, err, "Subscribe returned success after the session closed during the probe")
	case <-ctx.Done():
		t.Fatal("Subscribe did not return after Close")
	}
	select {
	case <-probe.gone:
	case <-ctx.Done():
		t.Fatal("the probe's stream is still open at the server after Close")
	}
}

// TestReview4UnsubscribeDuringProbe (holds): a, b and c are established
// when the server starts refusing b and cuts the stream; while the probe
// of a is held, c is unsubscribed. The probe is ended at the server, b is
// found and dropped, and the stream left names a alone.
func TestReview4UnsubscribeDuringProbe(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const a, b, c = "test://a", "test://b", "test://c"
	srv, refuseB := refusing(t, b)
	var holdOnce atomic.Bool
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return refuseB.Load() && slices.Equal(f.ResourceSubscriptions, []string{a}) && holdOnce.CompareAndSwap(false, true), nil
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	unsub := map[string]func(){}
	for _, uri := range []string{a, b, c} {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		unsub[uri] = u
	}
	defer unsub[a]()
	defer unsub[b]()
	var st *review2Stream
	for st == nil || !(st.names(a) && st.names(b) && st.names(c)) {
		select {
		case st = <-srv.opened:
		case <-ctx.Done():
			t.Fatal("no stream naming a, b and c")
		}
	}
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a, b, c))
	drainOpened(srv.review2Server)
	refuseB.Store(true)
	st.end <- "abort"
	var probe *review2Stream
	select {
	case probe = <-srv.opened: // {a, b, c} is refused: the probe of a, held
	case <-ctx.Done():
		t.Fatal("no probe")
	}
	require.Equal(t, []string{a}, probe.filter.ResourceSubscriptions)
	since := srv.count()
	unsub[c]()
	select {
	case <-probe.gone:
	case <-ctx.Done():
		t.Fatal("the held probe's stream was not ended after the unsubscribe")
	}
	require.True(t, srv.waitLiveAckedNamingAll(since, 15*time.Second, a), "no stream names %s again", a)
	for {
		s.subs.mu.Lock()
		uris := slices.Sorted(maps.Keys(s.subs.byURI))
		cur := s.subs.stream
		s.subs.mu.Unlock()
		if fmt.Sprint(uris) == fmt.Sprint([]string{a}) && cur != nil && slices.Equal(cur.filter.ResourceSubscriptions, []string{a}) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("subscribed %v, stream %v: want %s alone", uris, cur, a)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestReview4WaitingSubscribeGetsAnotherURIsRefusal: test://a was
// subscribed; the server now refuses it (the resource removed) and also
// refuses test://b, for a reason of its own (a quota, -32010 with data).
// Like mcp-go's server it answers a stream naming both with the first
// URI's error ("subscribing to \"test://a\": ..."). The probes ask the
// server about each URI alone and hear b's own refusal, but refused
// discards it and fails the waiting Subscribe(test://b) with the stream's
// error, test://a's: its caller reads -32602 (which mcpserver reads as the
// resource not found) naming another resource, not the server's answer
// about test://b.
func TestReview4WaitingSubscribeGetsAnotherURIsRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const a, b = "test://a", "test://b"
	srv := newReview3Server(t)
	var removed atomic.Bool
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		for _, uri := range f.ResourceSubscriptions { // the first refused, as mcp-go's server
			switch {
			case uri == a && removed.Load():
				return map[string]any{"code": mcp.INVALID_PARAMS, "message": `subscribing to "test://a": resource removed`}
			case uri == b:
				return map[string]any{"code": -32010, "message": "quota exceeded", "data": map[string]any{"quota": 1}}
			}
		}
		return nil
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	removed.Store(true)

	ub, err := s.Subscribe(ctx, b, func() {})
	if err == nil {
		defer ub()
	}
	var rpc *mcpflow.RPCError
	require.True(t, errors.As(err, &rpc), "Subscribe(%s): %v", b, err)
	require.Equal(t, [2]any{-32010, "quota exceeded"}, [2]any{rpc.Code, rpc.Message},
		"Subscribe(%s) failed with the refusal of %s, not the server's answer about %s", b, a, b)
}

// TestReview4ChurnDuringProbes (holds): Subscribes (some given up by their
// ctx) and unsubscribes of four URIs from several goroutines while the
// server always refuses test://2, holds some acknowledgements (probes'
// among them) and cuts streams: every Subscribe returns, and once the
// churn stops the session settles on one open, acknowledged stream naming
// exactly the URIs still subscribed, test://2 not among them.
func TestReview4ChurnDuringProbes(t *testing.T) {
	for round := range 6 {
		func() {
			ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
			defer cancel()
			srv := newReview3Server(t)
			var mu sync.Mutex
			rng := rand.New(rand.NewPCG(uint64(round), 4))
			roll := func(n int) int {
				mu.Lock()
				defer mu.Unlock()
				return rng.IntN(n)
			}
			var churning atomic.Bool
			churning.Store(true)
			srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
				if slices.Contains(f.ResourceSubscriptions, "test://2") {
					return review3Refused
				}
				return nil
			}
			srv.holdAck = func(listenFilter2) (bool, <-chan struct{}) {
				if churning.Load() && roll(3) == 0 {
					ch := make(chan struct{})
					time.AfterFunc(time.Duration(roll(60))*time.Millisecond, func() { close(ch) })
					return true, ch
				}
				return false, nil
			}
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case st := <-srv.opened:
						if churning.Load() && roll(5) == 0 {
							st.end <- "abort"
						}
					case <-stop:
						return
					}
				}
			}()
			s := dialReview2(t, ctx, srv.URL, nil)
			defer s.Close()
			var wg sync.WaitGroup
			var kept sync.Map
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 8 {
						sctx, scancel := context.WithTimeout(ctx, time.Duration(roll(150))*time.Millisecond+time.Millisecond)
						u, err := s.Subscribe(sctx, fmt.Sprintf("test://%d", (g+i)%4), func() {})
						scancel()
						if err != nil {
							continue
						}
						if roll(2) == 0 {
							u()
						} else {
							kept.Store(&u, u)
						}
					}
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatal("Subscribes or unsubscribes still blocked")
			}
			churning.Store(false)
			defer kept.Range(func(_, u any) bool { u.(func())(); return true })
			for {
				s.subs.mu.Lock()
				uris := slices.Sorted(maps.Keys(s.subs.byURI))
				s.subs.mu.Unlock()
				settled := !slices.Contains(uris, "test://2")
				if settled && len(uris) > 0 {
					settled = false
					srv.mu.Lock()
					for _, st := range srv.streams {
						st.mu.Lock()
						if st.acked && !st.closed && slices.Equal(st.filter.ResourceSubscriptions, uris) {
							settled = true
						}
						st.mu.Unlock()
					}
					srv.mu.Unlock()
				}
				if settled {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("round %d: subscribed %v, and no open acknowledged stream names exactly them", round, uris)
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
}

// TestReview4StdioProbeIsCancelled (holds): over stdio a probe the server
// acknowledged is cancelled at the server (notifications/cancelled), as
// every stream the listener stops is: of the listens acknowledged, only the
// open one, naming test://a alone, is left running.
func TestReview4StdioProbeIsCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	exe, err := os.Executable()
	require.NoError(t, err)
	logPath := filepath.Join(t.TempDir(), "in.jsonl")
	s, err := Dial(ctx, &config.Server{Name: "review4", Enabled: true, Type: config.TransportStdio,
		Command: exe, Args: []string{"-test.run=^TestReview3StdioHelper$"},
		Env: map[string]string{"REVIEW3_STDIO_LOG": logPath}, ProtocolVersion: "2026-07-28"}, DialOptions{})
	require.NoError(t, err)
	defer s.Close()
	require.True(t, s.Modern())
	ua, err := s.Subscribe(ctx, "test://a", func() {})
	require.NoError(t, err)
	defer ua()
	ub, err := s.Subscribe(ctx, "test://bad", func() {})
	if err == nil {
		defer ub()
	}
	require.Error(t, err)
	for {
		var acked, cancelled []string // listen ids the server kept open, and those cancelled
		var filters []string
		for _, m := range readStdioLog(t, logPath) {
			switch m.Method {
			case "subscriptions/listen":
				filters = append(filters, fmt.Sprint(m.Params.Notifications.ResourceSubscriptions))
				if !slices.Contains(m.Params.Notifications.ResourceSubscriptions, "test://bad") {
					acked = append(acked, string(m.ID))
				}
			case "notifications/cancelled":
				cancelled = append(cancelled, string(m.Params.RequestID))
			}
		}
		// {a}, {a bad} refused, probe {a}, probe {bad} refused, {a}.
		if len(acked) >= 3 && len(cancelled) == len(acked)-1 {
			require.ElementsMatch(t, acked[:len(acked)-1], cancelled, "listens %v", filters)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("listens %v (kept open: %v), cancelled %v: a probe was not cancelled at the server", filters, acked, cancelled)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestReview4SubscribeWaitsPastItsCtxBehindAnother: Subscribe holds
// s.subs.req for the whole of its wait for the stream's acknowledgement
// (up to subsAckWait, 5 s; a refusal being probed makes the full wait
// common, TestReview4ProbeOutlastsTheWaitingSubscribe), and another
// Subscribe, of another URI, waits for s.subs.req without looking at its
// ctx: a caller that gave its Subscribe 200 ms gets it back only when the
// first one's wait ended, some 5 s later. Asserted on the order of events,
// not on a duration: the second Subscribe, its ctx long done, returns only
// after the first.
func TestReview4SubscribeWaitsPastItsCtxBehindAnother(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const slow, other = "test://slow", "test://other"
	srv := newReview2Server(t)
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return slices.Contains(f.ResourceSubscriptions, slow), nil // never acknowledged
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()

	first := make(chan error, 1)
	go func() {
		u, err := s.Subscribe(ctx, slow, func() {})
		if err == nil {
			u()
		}
		first <- err
	}()
	defer func() { <-first }()
	select {
	case <-srv.opened: // the first Subscribe waits for its acknowledgement now
	case <-ctx.Done():
		t.Fatal("no stream")
	}
	sctx, scancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer scancel()
	u, err := s.Subscribe(sctx, other, func() {})
	// The first Subscribe's wait logs its warning before it lets go of s.subs.req.
	ranOut := logs.has("did not acknowledge")
	if err == nil {
		u()
	}
	require.False(t, ranOut, "Subscribe(%s) with a 200 ms ctx returned (%v) only after Subscribe(%s) ran out its %s wait: "+
		"it waited for s.subs.req past its ctx", other, err, slow, subsAckWait)
}
