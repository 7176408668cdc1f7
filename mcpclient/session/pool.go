package session

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// Pool bounds and lifetimes.
const (
	poolDefaultMax = 256 // spec §3.3 MAX_SESSIONS
	// DefaultSlotWait is how long a new session waits for a slot when
	// every slot is busy or pinned (SetSlotWait).
	DefaultSlotWait = 10 * time.Second
	// poolPinTTL: tasks renew pins on every poll (at most 24 h apart), so
	// only a terminated workflow's pin lapses.
	poolPinTTL = 25 * time.Hour
)

// CallPinPrefix starts the pins of calls in flight, which do not count as
// Pinned (only running tasks' remote ids do).
const CallPinPrefix = "call#"

// ErrShuttingDown is the error of a session asked for after shutdown.
func ErrShuttingDown() error {
	return mcpflow.Errorf(mcpflow.EUnavailable, "the MCP runtime is shutting down")
}

// PoolKey identifies a pooled session.
type PoolKey struct {
	Server string
	Scope  string // "<user_id>:<thread_id>"
}

// PoolStats is a snapshot of a pool.
type PoolStats struct {
	Sessions int // held, including those closing after their last call
	Dialing  int
	Busy     int // with a call in flight
	Pinned   int // idle, backing a running durable task
	Waiting  int // callers waiting for a dial or a free slot
}

// Pool holds persistent sessions keyed by (server, scope) (spec §3.3),
// dialled single-flight per key, at most max. A session is never closed
// while a call runs on it (Call, Run), nor for capacity or a configuration
// change while its key is pinned (Pin). At capacity the least recently
// used idle, unpinned session makes room, else a new key waits up to the
// slot wait and fails with EUnavailable. Lost sessions are replaced.
type Pool struct {
	max int
	log *slog.Logger
	now func() time.Time

	mu       sync.Mutex
	slotWait time.Duration
	entries  map[PoolKey]*poolEntry  // ready and dialing
	lru      list.List               // ready entries, most recently used first
	draining map[*poolEntry]struct{} // out of entries, closed after their last call
	closing  map[chan struct{}]struct{}
	pins     map[PoolKey]map[string]time.Time // key → task → expiry
	current  map[string]string                // server → live configuration (nil: not told)
	freed    chan struct{}                    // closed and replaced when a slot may have become free
	waiting  int
	shut     bool // Shutdown was called: no new sessions
}

// poolEntry is one key's session, or its creation in flight.
type poolEntry struct {
	key      PoolKey
	config   string        // fingerprint of the configuration dialled with ("": unknown)
	ready    chan struct{} // closed when the dial finished
	sess     *Session      // set before ready is closed on success
	err      error         // set before ready is closed on failure
	retry    bool          // the dial ended with its owner's context: waiters dial again
	removed  bool          // a Close* removed the entry while it was dialing
	cancel   context.CancelFunc
	finished chan struct{} // closed after the dial, and any teardown, is over
	elem     *list.Element
	busy     int  // calls in flight
	drain    bool // out of entries: closed when busy drops to zero
}

// NewPool returns an empty pool of at most max sessions (<= 0: 256).
func NewPool(max int, log *slog.Logger) *Pool {
	if max <= 0 {
		max = poolDefaultMax
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pool{
		max: max, log: log, now: time.Now, slotWait: DefaultSlotWait,
		entries: map[PoolKey]*poolEntry{}, draining: map[*poolEntry]struct{}{},
		closing: map[chan struct{}]struct{}{}, pins: map[PoolKey]map[string]time.Time{},
		freed: make(chan struct{}),
	}
}

// SetSlotWait sets DefaultSlotWait's value (<= 0: no wait).
func (p *Pool) SetSlotWait(d time.Duration) {
	p.mu.Lock()
	p.slotWait = d
	p.mu.Unlock()
}

// Session returns the session of key, dialing it when there is none
// (concurrent callers share one dial and its failure). Calls made on it
// directly are not counted as in flight: use Call.
func (p *Pool) Session(ctx context.Context, key PoolKey, dial func(context.Context) (*Session, error)) (*Session, error) {
	e, err := p.acquire(ctx, key, "", dial, false)
	if err != nil {
		return nil, err
	}
	return e.sess, nil
}

// Call calls a tool on the session of key through Run; never replayed.
func (p *Pool) Call(ctx context.Context, key PoolKey, dial func(context.Context) (*Session, error), name string, args, meta map[string]any) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := p.Run(ctx, key, "", dial, func(s *Session) error {
		var err error
		res, err = s.CallTool(ctx, name, args, meta)
		return err
	})
	return res, err
}

// Run runs op on the session of key dialled with the configuration whose
// fingerprint is config (another one is replaced unless pinned), counted
// as in flight; after a disconnect (IsDisconnect) the session is evicted.
func (p *Pool) Run(ctx context.Context, key PoolKey, config string, dial func(context.Context) (*Session, error), op func(*Session) error) error {
	e, err := p.acquire(ctx, key, config, dial, true)
	if err != nil {
		return err
	}
	defer p.release(e)
	err = op(e.sess)
	if err != nil && IsDisconnect(err) {
		p.evict(e)
	}
	return err
}

// acquire returns the ready entry of key (one more call on it when track).
func (p *Pool) acquire(ctx context.Context, key PoolKey, config string, dial func(context.Context) (*Session, error), track bool) (*poolEntry, error) {
	var slotTimer *time.Timer
	slotExpired := false
	defer func() {
		if slotTimer != nil {
			slotTimer.Stop()
		}
	}()
	for {
		p.mu.Lock()
		if p.shut {
			p.mu.Unlock()
			return nil, ErrShuttingDown()
		}
		e := p.entries[key]
		if e != nil && e.sess != nil {
			ok := p.takeLocked(e, config, track)
			p.mu.Unlock()
			if ok {
				return e, nil
			}
			continue
		}
		if e != nil {
			p.waiting++
			p.mu.Unlock()
			if err := p.awaitDial(ctx, e); err != nil {
				return nil, err
			}
			continue // take it (or dial again) under the lock
		}
		if !p.reserveLocked() {
			if p.slotWait <= 0 || slotExpired {
				err := p.fullLocked(key)
				p.mu.Unlock()
				return nil, err
			}
			if slotTimer == nil {
				slotTimer = time.NewTimer(p.slotWait)
			}
			freed := p.freed
			p.waiting++
			p.mu.Unlock()
			var err error
			select {
			case <-freed:
			case <-slotTimer.C:
				slotExpired = true // one last look, then fail
			case <-ctx.Done():
				err = fmt.Errorf("wait for a free MCP session slot for server '%s': %w", key.Server, ctx.Err())
			}
			p.mu.Lock()
			p.waiting--
			p.mu.Unlock()
			if err != nil {
				return nil, err
			}
			continue
		}
		dctx, cancel := context.WithCancel(ctx)
		e = &poolEntry{key: key, config: config, ready: make(chan struct{}), finished: make(chan struct{}), cancel: cancel}
		p.entries[key] = e
		p.mu.Unlock()
		return p.dial(ctx, dctx, e, dial, track)
	}
}

// takeLocked takes e, or retires it and reports false when it is lost or
// of another configuration than config and unpinned.
func (p *Pool) takeLocked(e *poolEntry, config string, track bool) bool {
	switch {
	case e.sess.Lost():
		p.log.Info("evicting lost MCP session", "server", e.key.Server, "scope", e.key.Scope, "pid", e.sess.PID())
		p.retireLocked(e)
		return false
	case config != "" && e.config != "" && e.config != config && !p.pinnedLocked(e.key):
		p.log.Info("replacing MCP session started with another configuration", "server", e.key.Server, "scope", e.key.Scope, "pid", e.sess.PID())
		p.retireLocked(e)
		return false
	}
	p.lru.MoveToFront(e.elem)
	if track {
		e.busy++
	}
	return true
}

// awaitDial waits for another caller's dial of e: nil when the caller
// should look again, else the dial's or ctx's error.
func (p *Pool) awaitDial(ctx context.Context, e *poolEntry) error {
	var err error
	select {
	case <-e.ready:
	case <-ctx.Done():
		err = fmt.Errorf("wait for MCP session of server '%s': %w", e.key.Server, ctx.Err())
	}
	p.mu.Lock()
	p.waiting--
	p.mu.Unlock()
	switch {
	case err != nil:
		return err
	case e.err == nil, e.retry && ctx.Err() == nil:
		return nil
	}
	return e.err
}

// fullLocked is the error of a new session that found no free slot.
func (p *Pool) fullLocked(key PoolKey) error {
	busy, pinned := len(p.draining), 0
	for _, e := range p.entries {
		switch {
		case e.sess == nil || e.busy > 0:
			busy++
		case p.pinnedLocked(e.key):
			pinned++
		}
	}
	return mcpflow.Errorf(mcpflow.EUnavailable,
		"all %d stdio MCP sessions are in use (%d with a call in flight, %d backing a running durable task); MCP server '%s' cannot start another one now, retry shortly",
		p.max, busy, pinned, key.Server)
}

// dial runs the dial of e as its owner and publishes the outcome.
func (p *Pool) dial(ctx, dctx context.Context, e *poolEntry, dial func(context.Context) (*Session, error), track bool) (_ *poolEntry, err error) {
	defer close(e.finished)
	defer e.cancel()
	published := false
	defer func() {
		if !published { // dial panicked
			p.mu.Lock()
			p.removeLocked(e)
			e.err = fmt.Errorf("dial MCP server '%s' panicked", e.key.Server)
			close(e.ready)
			p.signalLocked()
			p.mu.Unlock()
		}
	}()
	sess, err := dial(dctx)
	if err == nil && sess == nil {
		err = fmt.Errorf("dial MCP server '%s': no session", e.key.Server)
	}

	p.mu.Lock()
	published = true
	p.signalLocked()
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
	defer p.mu.Unlock()
	if err != nil {
		p.removeLocked(e)
		e.err = err
		e.retry = ctx.Err() != nil
		close(e.ready)
		return nil, err
	}
	e.sess = sess
	if track {
		e.busy = 1
	}
	e.elem = p.lru.PushFront(e)
	if p.staleLocked(e) { // the dialling call runs, then it closes
		p.log.Info("MCP session was started with a configuration that changed meanwhile", "server", e.key.Server, "scope", e.key.Scope)
		p.retireLocked(e)
	}
	close(e.ready)
	return e, nil
}

// release ends one call on e.
func (p *Pool) release(e *poolEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.busy--
	if e.busy > 0 {
		return
	}
	if e.drain {
		if _, ok := p.draining[e]; ok {
			delete(p.draining, e)
			p.closeLocked(e.sess)
		}
	}
	p.signalLocked()
}

// evict retires e after a disconnect if it is still the session of its key.
func (p *Pool) evict(e *poolEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.entries[e.key] != e {
		return
	}
	p.log.Info("evicting disconnected MCP session", "server", e.key.Server, "scope", e.key.Scope, "pid", e.sess.PID())
	p.retireLocked(e)
}

// Pin marks key as backing the running durable task task (its remote id):
// its session is kept through capacity and configuration changes. The pin
// belongs to the key, not the process; it lapses after 25 h unless renewed.
func (p *Pool) Pin(key PoolKey, task string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.pins[key]
	if m == nil {
		m = map[string]time.Time{}
		p.pins[key] = m
	}
	m[task] = p.now().Add(poolPinTTL)
}

// Unpin ends the pin of task on key.
func (p *Pool) Unpin(key PoolKey, task string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.pins[key]; m != nil {
		delete(m, task)
		if len(m) == 0 {
			delete(p.pins, key)
		}
	}
	p.signalLocked()
}

// PinnedScopes returns how many keys of the scope prefix (a user's
// "<user_id>:"), other than except, back a running durable task.
func (p *Pool) PinnedScopes(prefix string, except PoolKey) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for key := range p.pins {
		if key != except && strings.HasPrefix(key.Scope, prefix) && p.taskPinnedLocked(key) {
			n++
		}
	}
	return n
}

// Pinned reports whether key backs a running durable task.
func (p *Pool) Pinned(key PoolKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.taskPinnedLocked(key)
}

// taskPinnedLocked is pinnedLocked not counting calls in flight.
func (p *Pool) taskPinnedLocked(key PoolKey) bool {
	if !p.pinnedLocked(key) {
		return false
	}
	for task := range p.pins[key] {
		if !strings.HasPrefix(task, CallPinPrefix) {
			return true
		}
	}
	return false
}

// pinnedLocked reports whether key has a pin, dropping lapsed ones.
func (p *Pool) pinnedLocked(key PoolKey) bool {
	m := p.pins[key]
	if len(m) == 0 {
		return false
	}
	now := p.now()
	for task, until := range m {
		if !now.Before(until) {
			delete(m, task)
		}
	}
	if len(m) == 0 {
		delete(p.pins, key)
		return false
	}
	return true
}

// Retire tells the pool each enabled server's configuration fingerprint
// and retires unpinned sessions of another one or of unlisted servers
// (idle ones now, busy ones after their last call).
func (p *Pool) Retire(current map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current = current
	for _, e := range p.entries {
		if e.sess != nil && p.staleLocked(e) {
			p.log.Info("closing MCP session: its server's configuration changed", "server", e.key.Server, "scope", e.key.Scope, "pid", e.sess.PID())
			p.retireLocked(e)
		}
	}
}

// staleLocked reports whether e's configuration is no longer live (and e
// is not pinned).
func (p *Pool) staleLocked(e *poolEntry) bool {
	if p.current == nil || p.pinnedLocked(e.key) {
		return false
	}
	want, ok := p.current[e.key.Server]
	if !ok {
		return true
	}
	return e.config != "" && e.config != want
}

// CloseServer closes every session of server: idle ones now (waiting for
// them), busy ones after their last call.
func (p *Pool) CloseServer(server string) {
	if err := p.closeWhere(func(k PoolKey) bool { return k.Server == server }, false); err != nil {
		p.log.Warn("close MCP sessions", "server", server, "err", err)
	}
}

// CloseScope is CloseServer for a scope.
func (p *Pool) CloseScope(scope string) {
	if err := p.closeWhere(func(k PoolKey) bool { return k.Scope == scope }, false); err != nil {
		p.log.Warn("close MCP sessions", "scope", scope, "err", err)
	}
}

// CloseAll closes every session, busy or pinned, cancels dials and waits
// for every stdio server to be gone. The pool stays usable.
func (p *Pool) CloseAll() error {
	return p.closeWhere(func(PoolKey) bool { return true }, true)
}

// Shutdown is CloseAll refusing new sessions.
func (p *Pool) Shutdown() error {
	p.mu.Lock()
	p.shut = true
	p.mu.Unlock()
	return p.CloseAll()
}

// Len returns the number of sessions held (not being created).
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.Len() + len(p.draining)
}

// Stats returns a snapshot of the pool.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := PoolStats{Waiting: p.waiting}
	for _, e := range p.entries {
		switch {
		case e.sess == nil:
			s.Dialing++
			continue
		case e.busy > 0:
			s.Busy++
		case p.pinnedLocked(e.key):
			s.Pinned++
		}
		s.Sessions++
	}
	s.Sessions += len(p.draining)
	s.Busy += len(p.draining)
	return s
}

func (p *Pool) closeWhere(match func(PoolKey) bool, force bool) error {
	p.mu.Lock()
	var sessions []*Session
	var wait []chan struct{}
	for k, e := range p.entries {
		if !match(k) {
			continue
		}
		switch {
		case e.sess == nil:
			p.removeLocked(e)
			e.removed = true
			e.cancel()
			wait = append(wait, e.finished)
		case e.busy > 0 && !force:
			p.retireLocked(e)
		default:
			p.removeLocked(e)
			sessions = append(sessions, e.sess)
		}
	}
	if force {
		for e := range p.draining {
			if match(e.key) {
				delete(p.draining, e)
				sessions = append(sessions, e.sess)
			}
		}
		for ch := range p.closing {
			wait = append(wait, ch)
		}
	}
	p.signalLocked()
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

func (p *Pool) removeLocked(e *poolEntry) {
	if p.entries[e.key] == e {
		delete(p.entries, e.key)
	}
	if e.elem != nil {
		p.lru.Remove(e.elem)
		e.elem = nil
	}
}

// retireLocked unregisters e and closes it when idle, else after its last call.
func (p *Pool) retireLocked(e *poolEntry) {
	p.removeLocked(e)
	if e.busy > 0 {
		e.drain = true
		p.draining[e] = struct{}{}
	} else {
		p.closeLocked(e.sess)
	}
	p.signalLocked()
}

// reserveLocked reports whether a new session fits, closing an idle lost
// session, else the least recently used unpinned idle one, to make room.
func (p *Pool) reserveLocked() bool {
	if len(p.entries)+len(p.draining) < p.max {
		return true
	}
	var victim *poolEntry
	lost := false
	for el := p.lru.Back(); el != nil; el = el.Prev() {
		e := el.Value.(*poolEntry)
		if e.busy > 0 {
			continue
		}
		if e.sess.Lost() {
			victim, lost = e, true
			break
		}
		if victim == nil && !p.pinnedLocked(e.key) {
			victim = e
		}
	}
	if victim == nil {
		return false
	}
	if !lost {
		p.log.Info("closing least recently used MCP session", "server", victim.key.Server, "scope", victim.key.Scope, "pid", victim.sess.PID())
	}
	p.removeLocked(victim)
	p.closeLocked(victim.sess)
	return len(p.entries)+len(p.draining) < p.max
}

// signalLocked wakes the callers waiting for a slot.
func (p *Pool) signalLocked() {
	if p.waiting > 0 {
		close(p.freed)
		p.freed = make(chan struct{})
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
