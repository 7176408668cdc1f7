package route

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// TaskPin carries, through the context of one remote call of a durable
// task, the task's claim on the session the call runs on.
//
// On stdio (both drivers) the Runtime binds it to the pool key and holds
// the key pinned from the call until Release, so the session cannot be
// evicted between the answer and the driver's reading of it; the driver
// then pins the key for the remote task while it runs (Task).
//
// On SSE/HTTP, for native MCP tasks only (an upstream may keep its tasks
// per MCP session), the call goes to the shared session the task was
// started on in this process while that session lives, and the driver
// pins that session for the task while it runs: a newer shared session
// serves everything else. Calls that reach neither leave it unbound, and
// then it does nothing.
type TaskPin struct {
	mu     sync.Mutex
	pool   *session.Pool
	key    session.PoolKey
	token  string // the hold's pin, "" when unbound
	submit bool   // a task's submit: it may pin one more stdio session of the user

	// Native tasks on SSE/HTTP.
	native bool       // pins shared sessions
	remote string     // the remote task the call is about ("" for a submit)
	shared SharedPins // the shared session the call ran on
	moved  bool       // the task's own session was not there (lost, or started by another process)
}

// SharedPins is the shared session a native task's call ran on, as the
// Runtime lends it to the task's pin.
type SharedPins interface {
	// PinTask keeps the session open for the remote task taskID while
	// it runs, even once a newer session serves other calls.
	PinTask(taskID string)
	// UnpinTask ends the pin of taskID.
	UnpinTask(taskID string)
	// Forgotten notes that the server did not know a task on the session
	// the call reached after the task's own session was gone.
	Forgotten()
}

type pinKey struct{}

var pinSeq atomic.Uint64

func withPin(ctx context.Context, tp *TaskPin) (context.Context, *TaskPin) {
	return context.WithValue(ctx, pinKey{}, tp), tp
}

// WithTaskPin returns ctx carrying a new TaskPin of an ordinary task's call.
func WithTaskPin(ctx context.Context) (context.Context, *TaskPin) { return withPin(ctx, &TaskPin{}) }

// WithSubmitPin returns ctx carrying a new TaskPin of an ordinary task's submit.
func WithSubmitPin(ctx context.Context) (context.Context, *TaskPin) {
	return withPin(ctx, &TaskPin{submit: true})
}

// WithNativePin returns ctx carrying a new TaskPin of a native task's
// call; remoteID is the upstream task id, "" for its submit.
func WithNativePin(ctx context.Context, remoteID string) (context.Context, *TaskPin) {
	return withPin(ctx, &TaskPin{native: true, remote: remoteID, submit: remoteID == ""})
}

// PinFrom returns the TaskPin ctx carries, or nil.
func PinFrom(ctx context.Context) *TaskPin {
	tp, _ := ctx.Value(pinKey{}).(*TaskPin)
	return tp
}

// Submit reports whether tp is a task's submit.
func (tp *TaskPin) Submit() bool { return tp.submit }

// Hold binds tp to the stdio session key of the call and pins it until
// Release.
func (tp *TaskPin) Hold(pool *session.Pool, key session.PoolKey) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.pool != nil {
		return
	}
	tp.pool, tp.key = pool, key
	tp.token = session.CallPinPrefix + strconv.FormatUint(pinSeq.Add(1), 10)
	pool.Pin(key, tp.token)
}

// SharedTask returns the remote task whose own shared session the call
// should reach: "" unless it is a native task's call after its submit.
func (tp *TaskPin) SharedTask() string {
	if tp == nil || !tp.native {
		return ""
	}
	return tp.remote
}

// BindShared records the shared session the call ran on; moved says it is
// not the session the task was started on here.
func (tp *TaskPin) BindShared(s SharedPins, moved bool) {
	if tp == nil || !tp.native {
		return
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.shared = s
	tp.moved = tp.moved || moved
}

// Moved reports whether a call of the task reached a shared session other
// than the one the task was started on in this process.
func (tp *TaskPin) Moved() bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.moved
}

// Forgotten reports that the server did not know the task on the session
// the call reached after its own session was gone.
func (tp *TaskPin) Forgotten() {
	tp.mu.Lock()
	s := tp.shared
	tp.mu.Unlock()
	if s != nil {
		s.Forgotten()
	}
}

// Task pins the bound stdio key or shared session for the remote task
// while running, else unpins it.
func (tp *TaskPin) Task(remoteID string, running bool) {
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
	if tp.shared != nil {
		if running {
			tp.shared.PinTask(remoteID)
		} else {
			tp.shared.UnpinTask(remoteID)
		}
	}
}

// Release ends the hold of the call.
func (tp *TaskPin) Release() {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.pool != nil && tp.token != "" {
		tp.pool.Unpin(tp.key, tp.token)
		tp.token = ""
	}
}
