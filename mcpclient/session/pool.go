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
	// poolDefaultMax is the pool capacity when NewPool gets max <= 0 (spec
	// §3.3 MAX_SESSIONS).
	poolDefaultMax = 256
	// DefaultSlotWait is how long a new session waits for a slot when
	// every slot holds a session that is busy or pinned (SetSlotWait).
	DefaultSlotWait = 10 * time.Second
	// poolPinTTL is how long a pin lasts without being renewed: a durable
	// task renews it on every status poll (polls are at most 24 h apart),
	// so only the pin of a task that stopped being polled without ending
	// (its workflow was terminated) lapses.
	poolPinTTL = 25 * time.Hour
)

// CallPinPrefix starts the pins of calls in flight (a durable task's call
// holds its key pinned until the driver read the answer), as opposed to
// those of running tasks (their remote ids): only the latter count as
// Pinned sessions.
const CallPinPrefix = "call#"

// ErrShuttingDown is the error of a session asked for after shutdown.
func ErrShuttingDown() error {
	return mcpflow.Errorf(mcpflow.EUnavailable, "the MCP runtime is shutting down")
}

// PoolKey identifies a pooled session.
type PoolKey struct {
	// Server is the server name.
	Server string
	// Scope is "<user_id>:<thread_id>".
	Scope string
}

// PoolStats is a snapshot of a pool.
type PoolStats struct {
	// Sessions held: server processes, including those that close after
	// their last call.
	Sessions int
	// Dialing is the number of sessions being created.
	Dialing int
	// Busy is the number of held sessions with a call in flight.
	Busy int
	// Pinned is the number of held sessions whose key backs a running
	// durable task (and that have no call in flight).
	Pinned int
	// Waiting is the number of callers waiting for another caller's dial
	// of their key or for a free slot.
	Waiting int
}

// Pool holds persistent sessions keyed by (server, scope) (spec §3.3):
// creation is single-flight per key and capacity is bounded. A session is
// never closed while a call runs on it (Call counts them), and, while its
// key is pinned by a running durable task (Pin), never for capacity or a
// configuration change. At capacity the least recently used idle,
// unpinned session makes room; when there is none, a new key waits up to
// the slot wait for one and then fails with EUnavailable naming the limit.
// A session is evicted after a real disconnect, and replaced when its
// transport is lost. It is safe for concurrent use.
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

// NewPool returns an empty pool holding at most max sessions (max <= 0 means
// 256). A nil log discards logs.
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

// SetSlotWait sets how long a new session waits for a slot when the pool
// is full of busy or pinned sessions (default 10 s; <= 0: no wait).
func (p *Pool) SetSlotWait(d time.Duration) {
	p.mu.Lock()
	p.slotWait = d
	p.mu.Unlock()
}

// Session returns the session of key, dialing it with dial when there is
// none. Concurrent callers of one key share one dial; a dial failure is
// returned to all of them and nothing is registered. A session whose
// transport is lost is replaced. At capacity the least recently used idle,
// unpinned session is closed to make room. A call made on the returned
// session directly is not counted as in flight: use Call.
func (p *Pool) Session(ctx context.Context, key PoolKey, dial func(context.Context) (*Session, error)) (*Session, error) {
	e, err := p.acquire(ctx, key, "", dial, false)
	if err != nil {
		return nil, err
	}
	return e.sess, nil
}

// Call calls a tool on the session of key (dialing it when needed), counted
// as in flight until it returns. After a real disconnect (IsDisconnect)
// the session is evicted if it is still the registered one, and the next
// call dials a fresh one; timeouts, isError results and other errors keep
// it. The call is never replayed.
func (p *Pool) Call(ctx context.Context, key PoolKey, dial func(context.Context) (*Session, error), name string, args, meta map[string]any) (*mcp.CallToolResult, error) {
	return p.call(ctx, key, "", dial, name, args, meta)
}

// call is Call for a session dialled with the configuration whose
// fingerprint is config: a registered session of another configuration
// is replaced (unless its key is pinned).
func (p *Pool) call(ctx context.Context, key PoolKey, config string, dial func(context.Context) (*Session, error), name string, args, meta map[string]any) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := p.Run(ctx, key, config, dial, func(s *Session) error {
		var err error
		res, err = s.CallTool(ctx, name, args, meta)
		return err
	})
	return res, err
}

// Run runs op on the session of key (dialing it when needed), counted as
// in flight until op returns, like call: after a real disconnect
// (IsDisconnect) of op's error the session is evicted if it is still the
// registered one.
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

// acquire returns the ready entry of key, with one more call counted on it
// when track, dialing it when needed.
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

// takeLocked counts one more call on e (when track) and reports true, or
// retires e and reports false when its session is lost or was started with
// another configuration than config while its key is not pinned.
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

// awaitDial waits, counted as waiting, for another caller's dial of e: nil
// when the caller should look again (the dial succeeded, or ended with its
// owner's context and is to be retried), else the dial's or ctx's error.
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
	if p.staleLocked(e) {
		// Its server's configuration changed while it was being created:
		// the call that dialled it runs, and it is closed after.
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
// its session holds the task's state, so it is neither evicted for
// capacity nor replaced after a configuration change until every task of
// the key is unpinned. A pin belongs to the key, not to a process: a
// session that died is replaced and the new one is pinned too. Pinning
// again renews the pin, which otherwise lapses after 25 hours.
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

// Unpin ends the pin of task on key (the task ended).
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
// "<user_id>:") back a running durable task, other than except: the
// sessions that user's tasks hold pinned. Pins of a call in flight (taskPin
// holds) do not count.
func (p *Pool) PinnedScopes(prefix string, except PoolKey) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for key := range p.pins {
		if key == except || !strings.HasPrefix(key.Scope, prefix) || !p.pinnedLocked(key) {
			continue
		}
		for task := range p.pins[key] {
			if !strings.HasPrefix(task, CallPinPrefix) {
				n++
				break
			}
		}
	}
	return n
}

// pinned reports whether key backs a running durable task.
func (p *Pool) Pinned(key PoolKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
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

// pinnedLocked reports whether key backs a running task, dropping lapsed
// pins.
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

// Retire tells the pool the live configuration of each enabled server (a
// fingerprint by name) and retires the sessions started with another one,
// and those of servers no longer listed, unless their key is pinned: idle
// ones are closed now, busy ones after their last call. Sessions of
// servers whose configuration did not change are kept.
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

// staleLocked reports whether e runs a configuration that is no longer the
// live one of its server (and its key is not pinned).
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

// CloseServer closes every session of server: idle ones now (and waits for
// them), busy ones after their last call.
func (p *Pool) CloseServer(server string) {
	if err := p.closeWhere(func(k PoolKey) bool { return k.Server == server }, false); err != nil {
		p.log.Warn("close MCP sessions", "server", server, "err", err)
	}
}

// CloseScope closes every session of scope: idle ones now (and waits for
// them), busy ones after their last call.
func (p *Pool) CloseScope(scope string) {
	if err := p.closeWhere(func(k PoolKey) bool { return k.Scope == scope }, false); err != nil {
		p.log.Warn("close MCP sessions", "scope", scope, "err", err)
	}
}

// CloseAll is for shutdown: it closes every session, even with calls in
// flight or pinned, cancels sessions being created, and waits until every
// stdio server they started is gone. The pool stays usable.
func (p *Pool) CloseAll() error {
	return p.closeWhere(func(PoolKey) bool { return true }, true)
}

// shutdown closes every session like CloseAll and refuses new ones.
func (p *Pool) Shutdown() error {
	p.mu.Lock()
	p.shut = true
	p.mu.Unlock()
	return p.CloseAll()
}

// Len returns the number of sessions held (not counting those being
// created).
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

// retireLocked unregisters the ready entry e and closes its session now
// when it is idle, else after its last call.
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

// reserveLocked reports whether a new session fits, closing an idle
// session to make room when needed: a lost one first, else the least
// recently used one whose key is not pinned. Busy sessions are never
// closed.
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
