package mcpclient

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// taskPin carries, through the context of one remote call of a durable
// task, the task's claim on the session the call runs on.
//
// On stdio (both drivers) Runtime.Call binds it to the pool key and holds
// the key pinned from the call until release, so the session cannot be
// evicted between the answer and the driver's reading of it; the driver
// then pins the key for the remote task while it runs and unpins it once
// it ended.
//
// On SSE/HTTP, for native MCP tasks only (an upstream may keep its tasks
// per MCP session), the call goes to the shared session the task was
// started on in this process while that session lives, and the driver
// pins that session for the task while it runs: a newer shared session
// (after a configuration change, say) serves everything else. Calls that
// reach neither leave it unbound, and then it does nothing.
type taskPin struct {
	mu    sync.Mutex
	pool  *session.Pool
	key   session.PoolKey
	token string // the hold's pin, "" when unbound

	// submit is set for a task's submit: on stdio it may pin one more
	// session of the user (Options.MaxPinnedPerUser).
	submit bool

	// Native tasks on SSE/HTTP.
	native bool   // pins shared sessions (NativeDriver)
	remote string // the remote task the call is about ("" for a submit)
	rt     *Runtime
	server string
	sess   *sharedSession // the shared session the call ran on
	moved  bool           // the task's own session was not there (lost, or started by another process)
}

type taskPinKey struct{}

var taskPinSeq atomic.Uint64

// withTaskPin returns ctx carrying a new taskPin.
func withTaskPin(ctx context.Context) (context.Context, *taskPin) {
	tp := &taskPin{}
	return context.WithValue(ctx, taskPinKey{}, tp), tp
}

// withSubmitPin returns ctx carrying a new taskPin of a task's submit.
func withSubmitPin(ctx context.Context) (context.Context, *taskPin) {
	tp := &taskPin{submit: true}
	return context.WithValue(ctx, taskPinKey{}, tp), tp
}

// withNativeTaskPin returns ctx carrying a new taskPin of a native task's
// call; remoteID is the upstream task id, "" for its submit.
func withNativeTaskPin(ctx context.Context, remoteID string) (context.Context, *taskPin) {
	tp := &taskPin{native: true, remote: remoteID, submit: remoteID == ""}
	return context.WithValue(ctx, taskPinKey{}, tp), tp
}

func taskPinFrom(ctx context.Context) *taskPin {
	tp, _ := ctx.Value(taskPinKey{}).(*taskPin)
	return tp
}

// hold binds tp to the session key of the call and pins it until release.
func (tp *taskPin) hold(pool *session.Pool, key session.PoolKey) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.pool != nil {
		return
	}
	tp.pool, tp.key = pool, key
	tp.token = session.CallPinPrefix + strconv.FormatUint(taskPinSeq.Add(1), 10)
	pool.Pin(key, tp.token)
}

// sharedTask returns the remote task whose own shared session the call
// should reach: "" unless it is a native task's call after its submit.
func (tp *taskPin) sharedTask() string {
	if tp == nil || !tp.native {
		return ""
	}
	return tp.remote
}

// bindShared records the shared session s of server the call ran on;
// moved says it is not the session the task was started on here.
func (tp *taskPin) bindShared(rt *Runtime, server string, s *sharedSession, moved bool) {
	if tp == nil || !tp.native {
		return
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.rt, tp.server, tp.sess = rt, server, s
	tp.moved = tp.moved || moved
}

// movedSession reports whether a call of the task reached a shared
// session other than the one the task was started on in this process
// (that one was lost, or the task was started by another process).
func (tp *taskPin) movedSession() bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.moved
}

// forgotten reports that the server did not know the task on the session
// the call reached after its own session was gone.
func (tp *taskPin) forgotten() {
	tp.mu.Lock()
	rt, server := tp.rt, tp.server
	tp.mu.Unlock()
	if rt != nil {
		rt.noteTasksForgotten(server)
	}
}

// task pins the bound key or shared session for the remote task while
// running, else unpins it.
func (tp *taskPin) task(remoteID string, running bool) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if remoteID == "" {
		return
	}
	if tp.pool != nil {
		if running {
			tp.pool.Pin(tp.key, remoteID)
		} else {
			tp.pool.Unpin(tp.key, remoteID)
		}
	}
	if tp.rt != nil && tp.sess != nil {
		if running {
			tp.rt.pinTaskShared(tp.server, remoteID, tp.sess)
		} else {
			tp.rt.unpinTaskShared(tp.server, remoteID)
		}
	}
}

// release ends the hold of the call.
func (tp *taskPin) release() {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.pool != nil && tp.token != "" {
		tp.pool.Unpin(tp.key, tp.token)
		tp.token = ""
	}
}
