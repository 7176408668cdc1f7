package mcpclient

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
)

// taskPin carries, through the context of one remote call of a durable
// task (OrdinaryDriver), the task's claim on the stdio session the call
// runs on: Runtime.Call binds it to the pool key and holds the key pinned
// from the call until release, so the session cannot be evicted between
// the answer and the driver's reading of it; the driver then pins the key
// for the remote task while it runs and unpins it once it ended. Calls
// that do not reach a stdio session leave it unbound, and then it does
// nothing.
type taskPin struct {
	mu    sync.Mutex
	pool  *Pool
	key   PoolKey
	token string // the hold's pin, "" when unbound
}

type taskPinKey struct{}

var taskPinSeq atomic.Uint64

// withTaskPin returns ctx carrying a new taskPin.
func withTaskPin(ctx context.Context) (context.Context, *taskPin) {
	tp := &taskPin{}
	return context.WithValue(ctx, taskPinKey{}, tp), tp
}

func taskPinFrom(ctx context.Context) *taskPin {
	tp, _ := ctx.Value(taskPinKey{}).(*taskPin)
	return tp
}

// hold binds tp to the session key of the call and pins it until release.
func (tp *taskPin) hold(pool *Pool, key PoolKey) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.pool != nil {
		return
	}
	tp.pool, tp.key = pool, key
	tp.token = "call#" + strconv.FormatUint(taskPinSeq.Add(1), 10)
	pool.Pin(key, tp.token)
}

// task pins the bound key for the remote task while running, else unpins
// it.
func (tp *taskPin) task(remoteID string, running bool) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	switch {
	case tp.pool == nil || remoteID == "":
	case running:
		tp.pool.Pin(tp.key, remoteID)
	default:
		tp.pool.Unpin(tp.key, remoteID)
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
