package mcpclient

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// poolDefaultMax is the pool capacity when NewPool gets max <= 0 (spec §3.3
// MAX_SESSIONS).
const poolDefaultMax = 256

// PoolKey identifies a pooled session.
type PoolKey struct {
	// Server is the server name.
	Server string
	// Scope is "<user_id>:<thread_id>".
	Scope string
}

// Pool holds persistent sessions keyed by (server, scope) (spec §3.3):
// creation is single-flight per key, capacity is bounded with least recently
// used eviction, and a session is evicted only after a real disconnect. It
// is safe for concurrent use.
type Pool struct {
	max int
	log *slog.Logger

	mu      sync.Mutex
	entries map[PoolKey]*poolEntry // ready and dialing
	lru     list.List              // ready entries, most recently used first
	closing map[chan struct{}]struct{}
}

// poolEntry is one key's session, or its creation in flight.
type poolEntry struct {
	key      PoolKey
	ready    chan struct{} // closed when the dial finished
	sess     *Session      // set before ready is closed on success
	err      error         // set before ready is closed on failure
	retry    bool          // the dial ended with its owner's context: waiters dial again
	removed  bool          // a Close* removed the entry while it was dialing
	cancel   context.CancelFunc
	finished chan struct{} // closed after the dial, and any teardown, is over
	elem     *list.Element
}

// NewPool returns an empty pool holding at most max sessions (max <= 0 means
// 256). A nil log discards logs.
func NewPool(max int, log *slog.Logger) *Pool {
	if max <= 0 {
		max = poolDefaultMax
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pool{max: max, log: log, entries: map[PoolKey]*poolEntry{}, closing: map[chan struct{}]struct{}{}}
}

// Session returns the session of key, dialing it with dial when there is
// none. Concurrent callers of one key share one dial; a dial failure is
// returned to all of them and nothing is registered. A session whose
// transport is lost is replaced. Adding a session beyond capacity closes the
// least recently used one.
func (p *Pool) Session(ctx context.Context, key PoolKey, dial func(context.Context) (*Session, error)) (*Session, error) {
	for {
		p.mu.Lock()
		e := p.entries[key]
		if e != nil && e.sess != nil {
			if sessLost(e.sess) {
				p.removeLocked(e)
				p.closeLocked(e.sess)
				p.mu.Unlock()
				p.log.Info("evicting lost MCP session", "server", key.Server, "scope", key.Scope, "pid", e.sess.PID())
				continue
			}
			p.lru.MoveToFront(e.elem)
			p.mu.Unlock()
			return e.sess, nil
		}
		if e != nil {
			p.mu.Unlock()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return nil, fmt.Errorf("wait for MCP session of server '%s': %w", key.Server, ctx.Err())
			}
			if e.err == nil {
				return e.sess, nil
			}
			if e.retry && ctx.Err() == nil {
				continue
			}
			return nil, e.err
		}
		dctx, cancel := context.WithCancel(ctx)
		e = &poolEntry{key: key, ready: make(chan struct{}), finished: make(chan struct{}), cancel: cancel}
		p.entries[key] = e
		p.mu.Unlock()
		return p.dial(ctx, dctx, e, dial)
	}
}

// dial runs the dial of e as its owner and publishes the outcome.
func (p *Pool) dial(ctx, dctx context.Context, e *poolEntry, dial func(context.Context) (*Session, error)) (sess *Session, err error) {
	defer close(e.finished)
	defer e.cancel()
	published := false
	defer func() {
		if !published { // dial panicked
			p.mu.Lock()
			p.removeLocked(e)
			e.err = fmt.Errorf("dial MCP server '%s' panicked", e.key.Server)
			close(e.ready)
			p.mu.Unlock()
		}
	}()
	sess, err = dial(dctx)
	if err == nil && sess == nil {
		err = fmt.Errorf("dial MCP server '%s': no session", e.key.Server)
	}

	p.mu.Lock()
	published = true
	if e.removed {
		e.err = &mcpflow.Error{Code: mcpflow.EUnavailable, Err: err,
			Message: fmt.Sprintf("MCP session of server '%s' was closed while it was being created", e.key.Server)}
		close(e.ready)
		p.mu.Unlock()
		if sess != nil {
			_ = sess.Close()
		}
		return nil, e.err
	}
	if err != nil {
		p.removeLocked(e)
		e.err = err
		e.retry = ctx.Err() != nil
		close(e.ready)
		p.mu.Unlock()
		return nil, err
	}
	e.sess = sess
	e.elem = p.lru.PushFront(e)
	p.enforceLocked()
	close(e.ready)
	p.mu.Unlock()
	return sess, nil
}

// Call calls a tool on the session of key (dialing it when needed). After a
// real disconnect (IsDisconnect) the session is evicted if it is still the
// registered one, and the next call dials a fresh one; timeouts, isError
// results and other errors keep it. The call is never replayed.
func (p *Pool) Call(ctx context.Context, key PoolKey, dial func(context.Context) (*Session, error), name string, args, meta map[string]any) (*mcp.CallToolResult, error) {
	sess, err := p.Session(ctx, key, dial)
	if err != nil {
		return nil, err
	}
	res, err := sess.CallTool(ctx, name, args, meta)
	if err != nil && IsDisconnect(err) {
		p.evict(key, sess)
	}
	return res, err
}

// evict removes and closes sess if it is still the session of key.
func (p *Pool) evict(key PoolKey, sess *Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e == nil || e.sess != sess {
		return
	}
	p.log.Info("evicting disconnected MCP session", "server", key.Server, "scope", key.Scope, "pid", sess.PID())
	p.removeLocked(e)
	p.closeLocked(sess)
}

// CloseServer closes every session of server and waits for them.
func (p *Pool) CloseServer(server string) {
	if err := p.closeWhere(func(k PoolKey) bool { return k.Server == server }, false); err != nil {
		p.log.Warn("close MCP sessions", "server", server, "err", err)
	}
}

// CloseScope closes every session of scope and waits for them.
func (p *Pool) CloseScope(scope string) {
	if err := p.closeWhere(func(k PoolKey) bool { return k.Scope == scope }, false); err != nil {
		p.log.Warn("close MCP sessions", "scope", scope, "err", err)
	}
}

// CloseAll closes every session, cancels sessions being created, and waits
// until every stdio server they started is gone. The pool stays usable.
func (p *Pool) CloseAll() error {
	return p.closeWhere(func(PoolKey) bool { return true }, true)
}

// Len returns the number of sessions held (not counting those being
// created).
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.Len()
}

func (p *Pool) closeWhere(match func(PoolKey) bool, all bool) error {
	p.mu.Lock()
	var sessions []*Session
	var wait []chan struct{}
	for k, e := range p.entries {
		if !match(k) {
			continue
		}
		p.removeLocked(e)
		if e.sess != nil {
			sessions = append(sessions, e.sess)
			continue
		}
		e.removed = true
		e.cancel()
		wait = append(wait, e.finished)
	}
	if all {
		for ch := range p.closing {
			wait = append(wait, ch)
		}
	}
	p.mu.Unlock()

	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() { errs[i] = s.Close() })
	}
	wg.Wait()
	for _, ch := range wait {
		<-ch
	}
	return errors.Join(errs...)
}

// removeLocked unregisters e.
func (p *Pool) removeLocked(e *poolEntry) {
	if p.entries[e.key] == e {
		delete(p.entries, e.key)
	}
	if e.elem != nil {
		p.lru.Remove(e.elem)
		e.elem = nil
	}
}

// enforceLocked closes sessions beyond capacity: lost ones first, then the
// least recently used.
func (p *Pool) enforceLocked() {
	for el := p.lru.Back(); el != nil && p.lru.Len() > p.max; {
		prev := el.Prev()
		if e := el.Value.(*poolEntry); sessLost(e.sess) {
			p.removeLocked(e)
			p.closeLocked(e.sess)
		}
		el = prev
	}
	for p.lru.Len() > p.max {
		e := p.lru.Back().Value.(*poolEntry)
		p.log.Info("closing least recently used MCP session", "server", e.key.Server, "scope", e.key.Scope, "pid", e.sess.PID())
		p.removeLocked(e)
		p.closeLocked(e.sess)
	}
}

// closeLocked closes sess in the background; CloseAll waits for it.
func (p *Pool) closeLocked(sess *Session) {
	done := make(chan struct{})
	p.closing[done] = struct{}{}
	go func() {
		if err := sess.Close(); err != nil {
			p.log.Warn("close MCP session", "server", sess.Server(), "err", err)
		}
		p.mu.Lock()
		delete(p.closing, done)
		p.mu.Unlock()
		close(done)
	}()
}
