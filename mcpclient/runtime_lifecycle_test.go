package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient"
	"github.com/mcpflow/mcpflow/mcpclient/taskdriver"
)

// Session lifecycle across configuration changes, durable tasks and
// shutdown: a session is closed only when its server's effective
// configuration changed, never with a call in flight, and never while it
// backs a running durable task.

// TestRuntimeConfigWriteKeepsUnchangedSessions pins that a configuration
// write (the admin API resets the cache after each one) replaces the
// sessions of the server that changed only, and that an unparsable file
// keeps the last good tools and every session.
func TestRuntimeConfigWriteKeepsUnchangedSessions(t *testing.T) {
	t.Parallel()
	cfg := doc{"mcpServers": doc{"demo": stdioDemo(t, nil), "other": stdioDemo(t, nil)}}
	b := newRuntime(t, cfg)
	require.Equal(t, "a", text(t, b.call(t, "demo_echo", map[string]any{"message": "a"})))
	require.Equal(t, "a", text(t, b.call(t, "other_echo", map[string]any{"message": "a"})))
	demo1, other1 := b.sessionPID(t, "demo", "alice", "t1"), b.sessionPID(t, "other", "alice", "t1")

	// An edit of "other" (and a description of "demo", presentation only).
	cfg = doc{"mcpServers": doc{
		"demo":  stdioDemo(t, doc{"description": "the demo server"}),
		"other": stdioDemo(t, doc{"env": doc{"EDITED": "1"}}),
	}}
	b.write(t, cfg)
	b.rt.ResetCache() // what every admin write does
	require.Len(t, b.list(t), 2*len(demoTools))
	require.Equal(t, "b", text(t, b.call(t, "demo_echo", map[string]any{"message": "b"})))
	require.Equal(t, "b", text(t, b.call(t, "other_echo", map[string]any{"message": "b"})))
	require.Equal(t, demo1, b.sessionPID(t, "demo", "alice", "t1"), "the unchanged server keeps its session")
	require.True(t, alive(demo1))
	other2 := b.sessionPID(t, "other", "alice", "t1")
	require.NotEqual(t, other1, other2, "the edited server runs a new process")
	require.Eventually(t, func() bool { return !alive(other1) }, generous, 10*time.Millisecond, "the edited server's old process is closed")

	// A half-written file: the last good tools and every session stay.
	b.writeRaw(t, []byte(`{"mcpServers": {"demo": `))
	b.rt.ResetCache()
	require.Len(t, b.list(t), 2*len(demoTools))
	require.Equal(t, "c", text(t, b.call(t, "demo_echo", map[string]any{"message": "c"})))
	require.Equal(t, "c", text(t, b.call(t, "other_echo", map[string]any{"message": "c"})))
	require.Equal(t, demo1, b.sessionPID(t, "demo", "alice", "t1"))
	require.Equal(t, other2, b.sessionPID(t, "other", "alice", "t1"))
	require.Contains(t, b.logs.String(), "cannot be loaded")

	// Fixed again, unchanged: nothing is replaced.
	b.write(t, cfg)
	b.rt.ResetCache()
	require.Equal(t, "d", text(t, b.call(t, "other_echo", map[string]any{"message": "d"})))
	require.Equal(t, demo1, b.sessionPID(t, "demo", "alice", "t1"))
	require.Equal(t, other2, b.sessionPID(t, "other", "alice", "t1"))
}

// TestRuntimeConfigChangeLetsCallsFinish pins that a session whose server
// changed is not closed under a call in flight: new calls already use a
// new process, and the old one is closed once its call ended.
func TestRuntimeConfigChangeLetsCallsFinish(t *testing.T) {
	t.Parallel()
	b := newRuntime(t, doc{"mcpServers": doc{"demo": stdioDemo(t, nil)}})
	require.Equal(t, "a", text(t, b.call(t, "demo_echo", map[string]any{"message": "a"})))
	old := b.sessionPID(t, "demo", "alice", "t1")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx, sent := poolSent(ctx)
	errc := make(chan error, 1)
	go func() {
		res, err := b.rt.CallTool(ctx, mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "demo_slow", Arguments: map[string]any{"seconds": 120}})
		if err == nil && res.IsError {
			err = mcpflow.Errorf(mcpflow.EUpstream, "tool error: %s", text(t, res))
		}
		errc <- err
	}()
	poolAwait(t, sent, errc)

	b.write(t, doc{"mcpServers": doc{"demo": stdioDemo(t, doc{"env": doc{"EDITED": "1"}})}})
	b.rt.ResetCache()
	require.Equal(t, "b", text(t, b.call(t, "demo_echo", map[string]any{"message": "b"})))
	require.NotEqual(t, old, b.sessionPID(t, "demo", "alice", "t1"), "new calls use the new configuration")
	select {
	case err := <-errc:
		t.Fatalf("the call in flight ended when its server's configuration changed: %v", err)
	default:
	}
	require.True(t, alive(old), "the old process still runs its call")

	cancel()
	err := <-errc
	require.ErrorIs(t, err, context.Canceled, "the call ends by its own context")
	require.Eventually(t, func() bool { return !alive(old) }, generous, 10*time.Millisecond, "the old process is closed once idle")
}

// taskDriver is the ordinary task driver over the runtime, as a worker
// wires it: remote calls with the server configuration frozen at start-up.
func taskDriver(t *testing.T, b *rtBundle, server doc) *taskdriver.Ordinary {
	t.Helper()
	data, err := json.Marshal(doc{"mcpServers": doc{"demo": server}})
	require.NoError(t, err)
	ext, err := config.ParseExtensions(data, "start-up", nil)
	require.NoError(t, err)
	frozen := ext.Servers[0]
	return &taskdriver.Ordinary{Call: func(ctx context.Context, _, tool, userID, threadID string, args map[string]any) (*mcp.CallToolResult, error) {
		return b.rt.Call(ctx, &frozen, tool, userID, threadID, args)
	}}
}

// TestRuntimePinnedTaskSession pins that the stdio session holding a
// running durable task is neither evicted for capacity nor retired by a
// configuration change, that a call needing a slot then answers 503 naming
// the limit, and that the task's end frees the slot.
func TestRuntimePinnedTaskSession(t *testing.T) {
	t.Parallel()
	server := stdioDemo(t, nil)
	b := newRuntime(t, doc{"mcpServers": doc{"demo": server}}, func(o *mcpclient.Options) {
		o.MaxSessions = 1
		o.SessionSlotWait = time.Millisecond
	})
	d := taskDriver(t, b, server)
	ctx := sessCtx(t)
	dd := map[string]string{
		mcpflow.DriverDataSubmitTool: "submit_job", mcpflow.DriverDataStatusTool: "get_job_status", mcpflow.DriverDataCancelTool: "cancel_job",
	}
	sub, err := d.Submit(ctx, mcpflow.SubmitRequest{UserID: "alice", ThreadID: "task", ServerName: "demo", TaskName: "job",
		Arguments: mcpflow.Arguments{"duration_seconds": 600}, DriverData: dd, LocalTaskID: "mcp-task-1"})
	require.NoError(t, err)
	ref := mcpflow.TaskReference{LocalTaskID: "mcp-task-1", UserID: "alice", ThreadID: "task", ServerName: "demo", RemoteTaskID: sub.RemoteTaskID, DriverData: dd}
	pid := b.sessionPID(t, "demo", "alice", "task")

	// Every slot backs a running task: another thread's call answers 503.
	_, err = b.rt.CallTool(ctx, mcpflow.ToolCall{UserID: "alice", ThreadID: "other", Tool: "demo_echo", Arguments: map[string]any{"message": "x"}})
	requireCode(t, err, mcpflow.EUnavailable)
	require.Contains(t, mcpflow.ErrorMessage(err), "all 1 stdio MCP sessions are in use")
	require.True(t, alive(pid))
	require.Equal(t, 1, b.rt.Pool().Stats().Pinned)

	// A configuration edit of the server keeps the task's process.
	b.write(t, doc{"mcpServers": doc{"demo": stdioDemo(t, doc{"env": doc{"EDITED": "1"}})}})
	b.rt.ResetCache()
	require.Len(t, b.list(t), len(demoTools))
	snap, err := d.Status(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusWorking, snap.Status, "the task's state is still in its process")
	require.Equal(t, pid, b.sessionPID(t, "demo", "alice", "task"))

	// The task ends: its session is an ordinary idle one again.
	snap, err = d.Cancel(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCancelled, snap.Status)
	require.Zero(t, b.rt.Pool().Stats().Pinned)
	require.Equal(t, "y", text(t, b.callAs(t, "alice", "other", "demo_echo", map[string]any{"message": "y"})))
	require.Eventually(t, func() bool { return !alive(pid) }, generous, 10*time.Millisecond, "the idle session made room")
}

// TestRuntimeSharedDialWithoutInitTimeout pins that a shared SSE/HTTP dial
// with session_init_timeout null is abandoned when its last caller gives
// up: the next call dials again instead of waiting forever.
func TestRuntimeSharedDialWithoutInitTimeout(t *testing.T) {
	t.Parallel()
	var hold atomic.Bool
	held := make(chan struct{}, 1)
	stop := make(chan struct{})
	url, _ := testenv.DemoInProcess(t, config.TransportHTTP, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			switch {
			case opensSession(body) && hold.CompareAndSwap(true, false):
				held <- struct{}{}
				select { // a server that never answers
				case <-r.Context().Done():
				case <-stop:
				}
				return
			case bytes.Contains(body, []byte(`"drop-me"`)):
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					_ = conn.Close()
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	t.Cleanup(func() { close(stop) }) // runs before the server's cleanup
	b := newRuntime(t, doc{"mcpServers": doc{"demo": doc{"type": "http", "url": url, "session_init_timeout": nil}}})
	require.Equal(t, "a", text(t, b.call(t, "demo_echo", map[string]any{"message": "a"})))
	_, err := b.rt.CallTool(sessCtx(t), mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "demo_echo", Arguments: map[string]any{"message": "drop-me"}})
	requireCode(t, err, mcpflow.EUpstream) // the shared session is dropped

	hold.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := b.rt.CallTool(ctx, mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "demo_echo", Arguments: map[string]any{"message": "b"}})
		errc <- err
	}()
	select {
	case <-held:
	case err := <-errc:
		t.Fatalf("the call ended before its dial reached the server: %v", err)
	}
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	require.Equal(t, "c", text(t, b.call(t, "demo_echo", map[string]any{"message": "c"})), "the next call dials again")
}

// TestRuntimeCloseWaitsForSharedSessions pins that Close returns only after
// the shared SSE/HTTP sessions are closed (the server saw the HTTP
// session's DELETE; a 2025-11-25 session, as 2026-07-28 has none).
func TestRuntimeCloseWaitsForSharedSessions(t *testing.T) {
	t.Parallel()
	var deletes atomic.Int32
	url, _ := testenv.DemoInProcess(t, config.TransportHTTP, func(next http.Handler) http.Handler {
		return legacyOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete {
				deletes.Add(1)
			}
			next.ServeHTTP(w, r)
		}))
	})
	b := newRuntime(t, doc{"mcpServers": doc{"demo": doc{"type": "http", "url": url}}})
	require.Equal(t, "a", text(t, b.call(t, "demo_echo", map[string]any{"message": "a"})))
	require.NoError(t, b.rt.Close())
	require.EqualValues(t, 1, deletes.Load(), "the shared session was closed before Close returned")
	_, err := b.tryCall("demo_echo", map[string]any{"message": "b"})
	requireCode(t, err, mcpflow.EUnavailable)
}
