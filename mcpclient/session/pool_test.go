package session_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// poolBundle is a pool and a counted dialer of one server.
type poolBundle struct {
	pool  *session.Pool
	srv   *config.Server
	dials atomic.Int32
}

func poolSetup(t *testing.T, max int, srv *config.Server) *poolBundle {
	t.Helper()
	b := &poolBundle{pool: session.NewPool(max, nil), srv: srv}
	t.Cleanup(func() { require.NoError(t, b.pool.CloseAll()) })
	return b
}

// dial dials b.srv (or another server) and counts.
func (b *poolBundle) dial(srv *config.Server) func(context.Context) (*session.Session, error) {
	if srv == nil {
		srv = b.srv
	}
	return func(ctx context.Context) (*session.Session, error) {
		b.dials.Add(1)
		return session.Dial(ctx, srv, session.DialOptions{})
	}
}

func (b *poolBundle) session(t *testing.T, key session.PoolKey) *session.Session {
	t.Helper()
	s, err := b.pool.Session(sessCtx(t), key, b.dial(nil))
	require.NoError(t, err)
	return s
}

func (b *poolBundle) echo(t *testing.T, key session.PoolKey) {
	t.Helper()
	res, err := b.pool.Call(sessCtx(t), key, b.dial(nil), "echo", map[string]any{"message": "hi"}, nil)
	require.NoError(t, err)
	require.Equal(t, "hi", sessText(res))
}

func poolKey(server, scope string) session.PoolKey {
	return session.PoolKey{Server: server, Scope: scope}
}

// poolSent returns a context whose tool call closes sent right before it
// is sent to the server: from then on the call is in flight.
func poolSent(ctx context.Context) (context.Context, <-chan struct{}) {
	sent := make(chan struct{})
	var once sync.Once
	return mcpflow.WithBeforeSend(ctx, func(context.Context) error {
		once.Do(func() { close(sent) })
		return nil
	}), sent
}

// poolAwait waits for sent, failing the test with the call's outcome if
// the call ends first.
func poolAwait(t *testing.T, sent <-chan struct{}, errc <-chan error) {
	t.Helper()
	select {
	case <-sent:
	case err := <-errc:
		t.Fatalf("the call ended before it was sent: %v", err)
	case <-time.After(sessWait):
		t.Fatal("the call was never sent")
	}
}

// poolUntil polls cond until it holds. abort, when not nil, is checked on
// every round and fails the test with its message when it returns one.
func poolUntil(t *testing.T, what string, cond func() bool, abort func() string) {
	t.Helper()
	deadline := time.Now().Add(sessWait)
	for !cond() {
		if abort != nil {
			if msg := abort(); msg != "" {
				t.Fatalf("while waiting until %s: %s", what, msg)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPoolScopes(t *testing.T) {
	t.Parallel()
	b := poolSetup(t, 0, sessStdioServer(t, "demo"))
	alice, bob := poolKey("demo", "alice:t1"), poolKey("demo", "bob:t1")

	b.echo(t, alice)
	b.echo(t, bob)
	b.echo(t, alice)
	sa, sb := b.session(t, alice), b.session(t, bob)
	require.NotEqual(t, sa.PID(), sb.PID(), "two scopes, two processes")
	require.Same(t, sa, b.session(t, alice), "one scope, one process")
	require.EqualValues(t, 2, b.dials.Load())
	require.Equal(t, 2, b.pool.Len())
}

func TestPoolSingleFlight(t *testing.T) {
	t.Parallel()
	b := poolSetup(t, 0, sessStdioServer(t, "demo"))
	key := poolKey("demo", "u:t")
	ctx := sessCtx(t)
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(open)
	gated := func(ctx context.Context) (*session.Session, error) {
		<-release // held until every caller is in
		return b.dial(nil)(ctx)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := b.pool.Call(ctx, key, gated, "echo", map[string]any{"message": "hi"}, nil)
			errs <- err
		}()
	}
	poolUntil(t, "seven callers wait for the one dial", func() bool {
		s := b.pool.Stats()
		return s.Dialing == 1 && s.Waiting == 7
	}, nil)
	open()
	for range 8 {
		require.NoError(t, <-errs)
	}
	require.EqualValues(t, 1, b.dials.Load())
	require.Equal(t, 1, b.pool.Len())
}

func TestPoolDialFailureSharedAndNotRegistered(t *testing.T) {
	t.Parallel()
	b := poolSetup(t, 0, sessStdioServer(t, "demo"))
	key := poolKey("demo", "u:t")
	boom := errors.New("boom")
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(open) // before the pool's cleanup, also when the test fails
	var dials atomic.Int32
	failing := func(context.Context) (*session.Session, error) {
		dials.Add(1)
		<-release
		return nil, boom
	}
	ctx := sessCtx(t)
	errs := make(chan error, 5)
	for range 5 {
		go func() {
			_, err := b.pool.Session(ctx, key, failing)
			errs <- err
		}()
	}
	// Every caller joins the one dial: one dials, four wait for it.
	poolUntil(t, "four callers wait for the dial", func() bool {
		return dials.Load() == 1 && b.pool.Stats().Waiting == 4
	}, nil)
	open()
	for range 5 {
		require.ErrorIs(t, <-errs, boom)
	}
	require.EqualValues(t, 1, dials.Load())
	require.Zero(t, b.pool.Len())

	b.echo(t, key) // the next call dials again
	require.EqualValues(t, 1, b.dials.Load())
}

func TestPoolWaiterRedialsWhenOwnerGivesUp(t *testing.T) {
	t.Parallel()
	b := poolSetup(t, 0, sessStdioServer(t, "demo"))
	key := poolKey("demo", "u:t")
	ownerCtx, cancelOwner := context.WithCancel(sessCtx(t))
	entered := make(chan struct{})
	ownerErr := make(chan error, 1)
	go func() {
		_, err := b.pool.Session(ownerCtx, key, func(ctx context.Context) (*session.Session, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		ownerErr <- err
	}()
	<-entered
	ctx := sessCtx(t)
	var s *session.Session
	waiterErr := make(chan error, 1)
	go func() {
		var err error
		s, err = b.pool.Session(ctx, key, b.dial(nil))
		waiterErr <- err
	}()
	poolUntil(t, "the waiter joins the owner's dial", func() bool { return b.pool.Stats().Waiting == 1 }, nil)
	cancelOwner()
	require.ErrorIs(t, <-ownerErr, context.Canceled)
	require.NoError(t, <-waiterErr)
	require.Positive(t, s.PID(), "the waiter dialled again instead of inheriting the owner's cancellation")
	require.EqualValues(t, 1, b.dials.Load())
}

func TestPoolDisconnectEvicts(t *testing.T) {
	t.Parallel()
	b := poolSetup(t, 0, sessStdioServer(t, "demo"))
	crash, other := poolKey("demo", "a:t"), poolKey("demo", "b:t")
	b.echo(t, crash)
	b.echo(t, other)
	crashed, kept := b.session(t, crash), b.session(t, other)

	ctx, sent := poolSent(sessCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := b.pool.Call(ctx, crash, b.dial(nil), "slow", map[string]any{"seconds": 60}, nil)
		errc <- err
	}()
	poolAwait(t, sent, errc)
	require.NoError(t, syscall.Kill(crashed.PID(), syscall.SIGKILL))
	err := <-errc
	require.True(t, session.IsDisconnect(err), "error: %v", err)
	t.Logf("disconnect: %v", err)
	require.Equal(t, mcpflow.EUpstream, mcpflow.ErrorCode(err))
	require.Equal(t, 1, b.pool.Len(), "the crashed session is evicted")

	b.echo(t, crash)
	fresh := b.session(t, crash)
	require.NotSame(t, crashed, fresh)
	require.NotEqual(t, crashed.PID(), fresh.PID(), "the next call runs in a fresh process")
	require.Same(t, kept, b.session(t, other), "other scopes are unaffected")
	b.echo(t, other)
	require.EqualValues(t, 3, b.dials.Load())
}

func TestPoolLostSessionReplaced(t *testing.T) {
	t.Parallel()
	b := poolSetup(t, 0, sessStdioServer(t, "demo"))
	key := poolKey("demo", "u:t")
	old := b.session(t, key)
	require.NoError(t, syscall.Kill(old.PID(), syscall.SIGKILL))
	select {
	case <-old.Done():
	case <-time.After(sessWait):
		t.Fatal("Done not closed")
	}
	fresh := b.session(t, key)
	require.NotEqual(t, old.PID(), fresh.PID())
	b.echo(t, key)
	require.Equal(t, 1, b.pool.Len())
}

func TestPoolKeepsSessionAfterTimeoutAndIsError(t *testing.T) {
	t.Parallel()
	srv := sessStdioServer(t, "demo")
	srv.ToolCallTimeout = sessSeconds(0.3)
	b := poolSetup(t, 0, srv)
	key := poolKey("demo", "u:t")
	b.echo(t, key)
	before := b.session(t, key)

	_, err := b.pool.Call(sessCtx(t), key, b.dial(nil), "slow", map[string]any{"seconds": 5}, nil)
	sessRequireError(t, err, mcpflow.ETimeout, "MCP tool 'slow' on server 'demo' timed out after 0.3s")
	res, err := b.pool.Call(sessCtx(t), key, b.dial(nil), "fail", map[string]any{"message": "no"}, nil)
	require.NoError(t, err)
	require.True(t, res.IsError)
	_, err = b.pool.Call(sessCtx(t), key, b.dial(nil), "no_such_tool", nil, nil)
	sessRequireError(t, err, mcpflow.ENotFound, "")

	b.echo(t, key)
	require.Same(t, before, b.session(t, key))
	require.EqualValues(t, 1, b.dials.Load(), "same PID, no new process")
}

func TestPoolFailedCallNotReplayed(t *testing.T) {
	t.Parallel()
	// The first submit_job runs on the demo server, then the connection is
	// dropped before the answer: a closed stream.
	var dropped atomic.Bool
	url, _ := testenv.DemoInProcess(t, config.TransportHTTP, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"submit_job"`)) && dropped.CompareAndSwap(false, true) {
				next.ServeHTTP(httptest.NewRecorder(), r)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					_ = conn.Close()
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	b := poolSetup(t, 0, sessRemoteServer("demo", config.TransportHTTP, url))
	key := poolKey("demo", "u:t")
	b.echo(t, key)

	_, err := b.pool.Call(sessCtx(t), key, b.dial(nil), "submit_job", map[string]any{"duration_seconds": 60}, nil)
	require.True(t, session.IsDisconnect(err), "error: %v", err)
	t.Logf("disconnect: %v", err)
	require.Zero(t, b.pool.Len(), "evicted")

	res, err := b.pool.Call(sessCtx(t), key, b.dial(nil), "job_stats", nil, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, sessStructured(t, res)["submits"], "the failed call ran once and was not replayed")
	require.EqualValues(t, 2, b.dials.Load())
}

func TestPoolLRU(t *testing.T) {
	t.Parallel()
	b := poolSetup(t, 2, sessStdioServer(t, "demo"))
	k1, k2, k3 := poolKey("demo", "1:t"), poolKey("demo", "2:t"), poolKey("demo", "3:t")
	s1, s2 := b.session(t, k1), b.session(t, k2)
	b.echo(t, k1) // k2 is now the least recently used
	s3 := b.session(t, k3)

	require.Equal(t, 2, b.pool.Len())
	require.Eventually(t, func() bool { return !sessAlive(s2.PID()) }, sessWait, 10*time.Millisecond)
	require.True(t, sessAlive(s1.PID()))
	require.Same(t, s1, b.session(t, k1))
	require.Same(t, s3, b.session(t, k3))
	require.EqualValues(t, 3, b.dials.Load())

	b.echo(t, k2) // dials again and evicts k1, now the least recently used
	require.EqualValues(t, 4, b.dials.Load())
	require.Equal(t, 2, b.pool.Len())
	require.Eventually(t, func() bool { return !sessAlive(s1.PID()) }, sessWait, 10*time.Millisecond)
}

func TestPoolClose(t *testing.T) {
	t.Parallel()
	one, two := sessStdioServer(t, "one"), sessStdioServer(t, "two")
	b := poolSetup(t, 0, one)
	open := func(srv *config.Server, scope string) *session.Session {
		s, err := b.pool.Session(sessCtx(t), poolKey(srv.Name, scope), b.dial(srv))
		require.NoError(t, err)
		return s
	}
	oneX, oneY, twoX, twoY := open(one, "x"), open(one, "y"), open(two, "x"), open(two, "y")
	require.Equal(t, 4, b.pool.Len())

	b.pool.CloseScope("x")
	require.False(t, sessAlive(oneX.PID()))
	require.False(t, sessAlive(twoX.PID()))
	require.True(t, sessAlive(oneY.PID()))
	require.Equal(t, 2, b.pool.Len())

	b.pool.CloseServer("one")
	require.False(t, sessAlive(oneY.PID()))
	require.True(t, sessAlive(twoY.PID()))
	require.Equal(t, 1, b.pool.Len())

	oneZ := open(one, "z")
	require.NoError(t, b.pool.CloseAll())
	require.Zero(t, b.pool.Len())
	for _, s := range []*session.Session{oneX, oneY, twoX, twoY, oneZ} {
		require.False(t, sessAlive(s.PID()), "pid %d", s.PID())
		require.True(t, sessClosed(s.Done()))
	}

	// The pool stays usable.
	s := open(two, "x")
	require.NotEqual(t, twoX.PID(), s.PID())
}

func TestPoolCloseAllCancelsDial(t *testing.T) {
	t.Parallel()
	srv, pidFile := sessSilentServer(t, "silent")
	srv.SessionInitTimeout = sessSeconds(30)
	b := poolSetup(t, 0, srv)
	ctx := sessCtx(t)
	errc := make(chan error, 1)
	go func() {
		_, err := b.pool.Session(ctx, poolKey("silent", "u:t"), b.dial(nil))
		errc <- err
	}()
	pid := sessReadPID(t, pidFile)
	require.NoError(t, b.pool.CloseAll())
	require.False(t, sessAlive(pid), "CloseAll waits for the dial to be torn down")
	sessRequireError(t, <-errc, mcpflow.EUnavailable, "MCP session of server 'silent' was closed while it was being created")
	require.Zero(t, b.pool.Len())
}

// TestPoolEvictionSparesBusySessions pins that a session with a call in
// flight is never closed to make room: at capacity the new key waits for
// a slot, and gets it once the call ended.
func TestPoolEvictionSparesBusySessions(t *testing.T) {
	t.Parallel()
	b := poolSetup(t, 1, sessStdioServer(t, "demo"))
	b.pool.SetSlotWait(sessWait)
	busy, next := poolKey("demo", "busy:t"), poolKey("demo", "next:t")
	b.echo(t, busy)
	held := b.session(t, busy)

	busyCtx, cancelBusy := context.WithCancel(sessCtx(t))
	defer cancelBusy()
	busyCtx, sent := poolSent(busyCtx)
	busyErr := make(chan error, 1)
	go func() {
		res, err := b.pool.Call(busyCtx, busy, b.dial(nil), "slow", map[string]any{"seconds": 120}, nil)
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error %q", sessText(res))
		}
		busyErr <- err
	}()
	poolAwait(t, sent, busyErr)

	nextErr := make(chan error, 1)
	go func() {
		_, err := b.pool.Call(sessCtx(t), next, b.dial(nil), "echo", map[string]any{"message": "next"}, nil)
		nextErr <- err
	}()
	poolUntil(t, "the new key waits for a slot", func() bool { return b.pool.Stats().Waiting == 1 }, func() string {
		select {
		case err := <-busyErr:
			return fmt.Sprintf("the call in flight ended while another key took its slot: %v", err)
		case err := <-nextErr:
			return fmt.Sprintf("the new key did not wait for the busy session: %v", err)
		default:
			return ""
		}
	})
	require.True(t, sessAlive(held.PID()), "the busy session is kept")
	require.EqualValues(t, 1, b.dials.Load())

	cancelBusy()
	err := <-busyErr
	require.ErrorIs(t, err, context.Canceled, "the call ends by its own context")
	require.False(t, session.IsDisconnect(err), "the call in flight was not cut: %v", err)
	require.NoError(t, <-nextErr, "the waiting key gets the slot freed by the call")
	require.Eventually(t, func() bool { return !sessAlive(held.PID()) }, sessWait, 10*time.Millisecond, "the idle session made room")
	require.EqualValues(t, 2, b.dials.Load())
	require.Equal(t, 1, b.pool.Len())
}

// TestPoolPinnedSessionsAreNotEvicted pins that a session pinned by a
// running durable task is not evicted for capacity, that a new key then
// answers 503 naming the limit once the slot wait is over, and that the
// slot is free again once the task unpins.
func TestPoolPinnedSessionsAreNotEvicted(t *testing.T) {
	t.Parallel()
	b := poolSetup(t, 1, sessStdioServer(t, "demo"))
	b.pool.SetSlotWait(time.Millisecond)
	task, other := poolKey("demo", "task:t"), poolKey("demo", "other:t")
	b.echo(t, task)
	pinned := b.session(t, task)
	b.pool.Pin(task, "job-1")
	b.pool.Pin(task, "job-2")
	b.pool.Unpin(task, "job-2") // one task still runs

	_, err := b.pool.Call(sessCtx(t), other, b.dial(nil), "echo", map[string]any{"message": "x"}, nil)
	sessRequireError(t, err, mcpflow.EUnavailable,
		"all 1 stdio MCP sessions are in use (0 with a call in flight, 1 backing a running durable task); MCP server 'demo' cannot start another one now, retry shortly")
	require.True(t, sessAlive(pinned.PID()), "the pinned session is kept")
	require.Equal(t, session.PoolStats{Sessions: 1, Pinned: 1}, b.pool.Stats())
	require.Same(t, pinned, b.session(t, task))
	b.echo(t, task)
	require.EqualValues(t, 1, b.dials.Load())

	b.pool.Unpin(task, "job-1")
	b.echo(t, other)
	require.Eventually(t, func() bool { return !sessAlive(pinned.PID()) }, sessWait, 10*time.Millisecond, "the unpinned session made room")
	require.Equal(t, session.PoolStats{Sessions: 1}, b.pool.Stats())
}

// TestPoolPinOutlivesItsProcess pins that a pin belongs to the key: a
// pinned session that died is replaced, and the new one is pinned too.
func TestPoolPinOutlivesItsProcess(t *testing.T) {
	t.Parallel()
	b := poolSetup(t, 1, sessStdioServer(t, "demo"))
	b.pool.SetSlotWait(time.Millisecond)
	task, other := poolKey("demo", "task:t"), poolKey("demo", "other:t")
	old := b.session(t, task)
	b.pool.Pin(task, "job")
	require.NoError(t, syscall.Kill(old.PID(), syscall.SIGKILL))
	<-old.Done()

	fresh := b.session(t, task)
	require.NotEqual(t, old.PID(), fresh.PID())
	_, err := b.pool.Call(sessCtx(t), other, b.dial(nil), "echo", map[string]any{"message": "x"}, nil)
	sessRequireError(t, err, mcpflow.EUnavailable, "")
	require.True(t, sessAlive(fresh.PID()))
}
