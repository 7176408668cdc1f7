package mcpclient

import (
	"context"
	"sync"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
)

// sharedSession is the one session of an SSE/HTTP server, or its dial in
// flight. Its counters and retired flag are guarded by Runtime.mu; sess
// and err are written under Runtime.mu before done is closed.
type sharedSession struct {
	server  string
	config  string        // fingerprint of the configuration dialled with
	done    chan struct{} // closed when the dial finished
	sess    *Session
	err     error
	cancel  context.CancelFunc // ends the dial
	waiters int                // callers waiting for the dial
	busy    int                // callers using the session
	retired bool               // out of Runtime.shared: closed once unused
}

// finished reports whether the dial of s is over.
func (s *sharedSession) finished() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// acquireShared returns the process-wide session of an SSE/HTTP server
// with one more user counted (releaseShared ends it), dialling it once
// (single-flight) under the runtime's lifetime, not the caller's. The dial
// is abandoned when every caller waiting for it gave up, so the next call
// dials again even when session_init_timeout is null. config is the
// fingerprint of srv: a session dialled with another configuration is
// retired and dialled again.
func (r *Runtime) acquireShared(ctx context.Context, srv *config.Server, config string) (*sharedSession, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errShuttingDown()
	}
	s := r.shared[srv.Name]
	if s != nil && s.finished() {
		switch {
		case sessLost(s.sess):
			// The transport went away (an SSE stream closed when the server
			// stopped): reconnect instead of reusing a dead session forever.
			r.retireSharedLocked(s)
			s = nil
		case config != "" && s.config != config:
			r.retireSharedLocked(s)
			s = nil
		}
	}
	if s == nil {
		s = r.dialSharedLocked(srv, config)
	}
	if s.finished() {
		s.busy++
		r.mu.Unlock()
		return s, nil
	}
	s.waiters++
	r.mu.Unlock()
	select {
	case <-s.done:
		r.mu.Lock()
		defer r.mu.Unlock()
		s.waiters--
		if s.err != nil {
			return nil, s.err
		}
		s.busy++
		return s, nil
	case <-ctx.Done():
		r.mu.Lock()
		s.waiters--
		if s.waiters == 0 && !s.finished() {
			// Nobody waits for this dial any more: abandon it.
			s.cancel()
			if r.shared[s.server] == s {
				delete(r.shared, s.server)
			}
		}
		r.mu.Unlock()
		if ctx.Err() == context.DeadlineExceeded {
			if d, ok := srv.SessionInitTimeoutDuration(); ok {
				return nil, mcpflow.Errorf(mcpflow.ETimeout, "MCP session initialization for server '%s' timed out after %.1fs", srv.Name, d.Seconds())
			}
			return nil, mcpflow.Errorf(mcpflow.ETimeout, "MCP session initialization for server '%s' timed out", srv.Name)
		}
		return nil, ctx.Err()
	}
}

// dialSharedLocked registers and starts the dial of srv's shared session.
func (r *Runtime) dialSharedLocked(srv *config.Server, config string) *sharedSession {
	dctx, cancel := context.WithCancel(r.ctx)
	s := &sharedSession{server: srv.Name, config: config, done: make(chan struct{}), cancel: cancel}
	r.shared[srv.Name] = s
	r.sharedAll[s] = struct{}{}
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		sess, err := Dial(dctx, srv, DialOptions{Headers: r.connHeaders(srv), Logger: r.log, Questions: r.questions})
		cancel()
		r.mu.Lock()
		defer r.mu.Unlock()
		s.sess, s.err = sess, err
		close(s.done)
		if err != nil {
			if r.shared[s.server] == s {
				delete(r.shared, s.server)
			}
			delete(r.sharedAll, s)
			return
		}
		if s.retired && s.waiters == 0 && s.busy == 0 {
			r.closeSharedLocked(s)
		}
	}()
	return s
}

// releaseShared ends one use of s.
func (r *Runtime) releaseShared(s *sharedSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.busy--
	if s.retired && s.busy == 0 && s.waiters == 0 {
		r.closeSharedLocked(s)
	}
}

// retireSharedLocked unregisters s; its session is closed once no caller
// uses or waits for it.
func (r *Runtime) retireSharedLocked(s *sharedSession) {
	if r.shared[s.server] == s {
		delete(r.shared, s.server)
	}
	s.retired = true
	if s.finished() && s.busy == 0 && s.waiters == 0 {
		r.closeSharedLocked(s)
	}
}

// closeSharedLocked closes the session of s in the background; Close
// waits for it.
func (r *Runtime) closeSharedLocked(s *sharedSession) {
	if _, ok := r.sharedAll[s]; !ok || s.sess == nil {
		return // closed already, or by Close
	}
	delete(r.sharedAll, s)
	r.closers.Add(1)
	go func() {
		defer r.closers.Done()
		_ = s.sess.Close()
	}()
}

// retireStaleSharedLocked retires the shared sessions of servers whose
// configuration is not the live one any more (current: fingerprints by
// server name).
func (r *Runtime) retireStaleSharedLocked(current map[string]string) {
	for name, s := range r.shared {
		if want, ok := current[name]; !ok || s.config != want {
			r.log.Info("closing the shared MCP session: its server's configuration changed", "server", name)
			r.retireSharedLocked(s)
		}
	}
}

// closeAllShared closes every shared session that was dialled, in
// parallel, and returns when they are closed. Dials must be over.
func (r *Runtime) closeAllShared() {
	r.mu.Lock()
	var sessions []*Session
	for s := range r.sharedAll {
		if s.sess != nil {
			sessions = append(sessions, s.sess)
		}
	}
	r.sharedAll = map[*sharedSession]struct{}{}
	r.shared = map[string]*sharedSession{}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, sess := range sessions {
		wg.Go(func() { _ = sess.Close() })
	}
	wg.Wait()
	r.closers.Wait()
}

// sharedBroken reports whether a failed call on a shared SSE/HTTP session
// should retire it: a disconnect, or any other upstream failure (a server
// that restarted may answer an unknown session id with a plain 400, as the
// TypeScript SDK's servers do). Timeouts, rejected arguments and unknown
// tools keep it. The failed call is never replayed; the next one redials.
func sharedBroken(err error) bool {
	return IsDisconnect(err) || mcpflow.ErrorCode(err) == mcpflow.EUpstream
}

// dropShared forgets the shared session s after a failure, if it is still
// the registered one; it is closed once its last user released it.
func (r *Runtime) dropShared(server string, s *sharedSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shared[server] == s {
		r.retireSharedLocked(s)
	}
}

func errShuttingDown() error {
	return mcpflow.Errorf(mcpflow.EUnavailable, "the MCP runtime is shutting down")
}
