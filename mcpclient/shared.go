package mcpclient

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpclient/credential"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// sharedKey names a shared session: the one session of an SSE/HTTP server,
// or, for a server whose credential is exchanged per caller (perCaller),
// the session of one user of it.
type sharedKey struct {
	server  string
	user    string
	perUser bool
}

// sharedSession is the session of an SSE/HTTP server (or of one user of a
// perCaller server), or its dial in flight. Its counters, retired flag,
// used and signedIn are guarded by Runtime.mu; sess and err are written
// under Runtime.mu before done is closed.
type sharedSession struct {
	key     sharedKey
	server  string
	config  string        // fingerprint of the configuration dialled with
	done    chan struct{} // closed when the dial finished
	sess    *session.Session
	err     error
	cancel  context.CancelFunc // ends the dial
	waiters int                // callers waiting for the dial
	busy    int                // callers using the session
	pins    int                // running native tasks started on it (Runtime.taskShared)
	retired bool               // out of Runtime.shared: closed once unused

	// A user's session of a perCaller server: own are the headers its
	// own requests (initialize, tools/list of discovery, notifications,
	// the GET stream) carry, the OAuth and user_auth layers of the user's
	// latest signed-in call; signedIn says it was dialled with them; used
	// is when it was last acquired.
	own      atomic.Pointer[map[string]string]
	signedIn bool
	used     time.Time
}

// unused reports whether nobody uses, waits for or pins s.
func (s *sharedSession) unused() bool { return s.busy == 0 && s.waiters == 0 && s.pins == 0 }

// taskSharedKey names a native task of an SSE/HTTP server by its remote id.
type taskSharedKey struct{ server, taskID string }

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
//
// A server whose credential is exchanged per caller (perCaller) has one
// session per user instead: userID's, whose own requests carry own, the
// credential headers of the user's signed-in call (signedIn); a session of
// that user dialled without them (a durable poll's) is replaced by the
// first signed-in call.
func (r *Runtime) acquireShared(ctx context.Context, srv *config.Server, config, userID string, own map[string]string, signedIn bool) (*sharedSession, error) {
	key := sharedKey{server: srv.Name}
	if perCaller(srv) {
		key.user, key.perUser = userID, true
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, session.ErrShuttingDown()
	}
	s := r.shared[key]
	if s != nil && s.finished() {
		switch {
		case s.sess.Lost():
			// The transport went away (an SSE stream closed when the server
			// stopped): reconnect instead of reusing a dead session forever.
			r.retireSharedLocked(s)
			s = nil
		case config != "" && s.config != config:
			r.retireSharedLocked(s)
			s = nil
		case key.perUser && signedIn && !s.signedIn:
			r.retireSharedLocked(s)
			s = nil
		}
	}
	if s == nil {
		s = r.dialSharedLocked(srv, config, key, own, signedIn)
	}
	if key.perUser {
		s.used = time.Now()
		if signedIn {
			s.own.Store(&own) // the freshest token for the session's own requests
		}
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
			if r.shared[s.key] == s {
				delete(r.shared, s.key)
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

// dialSharedLocked registers and starts the dial of the shared session
// key of srv. A user's session of a perCaller server dials with own as
// the headers of its own requests, after the least recently used such
// session was retired when MaxCallerSessions are open.
func (r *Runtime) dialSharedLocked(srv *config.Server, config string, key sharedKey, own map[string]string, signedIn bool) *sharedSession {
	dctx, cancel := context.WithCancel(r.ctx)
	s := &sharedSession{key: key, server: srv.Name, config: config, done: make(chan struct{}), cancel: cancel}
	headers := r.creds.ConnHeaders(srv)
	if key.perUser {
		r.boundCallerSessionsLocked()
		s.signedIn = signedIn
		s.own.Store(&own)
		headers = s.ownHeaders
	}
	r.shared[key] = s
	r.sharedAll[s] = struct{}{}
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		scope := "" // a shared session's list changes are every caller's
		if key.perUser {
			scope = key.user + ":"
		}
		sess, err := r.dial(dctx, srv, s.config, session.DialOptions{Headers: headers, Logger: r.log, Questions: r.questions,
			Lists: func(method string) { r.listsChanged(srv.Name, scope, method) }})
		if err == nil && r.watchingLists() {
			if p, res := sess.OffersListChanges(); p || res {
				sess.HearLists() // a redial: the streams open now still listen
			}
		}
		cancel()
		r.mu.Lock()
		defer r.mu.Unlock()
		s.sess, s.err = sess, err
		close(s.done)
		if err != nil {
			if r.shared[s.key] == s {
				delete(r.shared, s.key)
			}
			delete(r.sharedAll, s)
			return
		}
		if s.retired && s.unused() {
			r.closeSharedLocked(s)
		}
	}()
	return s
}

// ownHeaders is the per-request header function of a user's session of a
// perCaller server: the headers computed for the call in flight, or, for
// the session's own requests, those of the user's latest signed-in call.
func (s *sharedSession) ownHeaders(ctx context.Context) map[string]string {
	if h, ok := credential.CallHeaders(ctx); ok {
		return h
	}
	if h := s.own.Load(); h != nil {
		return *h
	}
	return nil
}

// boundCallerSessionsLocked retires the least recently used users'
// sessions of perCaller servers until one more fits in MaxCallerSessions;
// a retired session is closed once its calls end.
func (r *Runtime) boundCallerSessionsLocked() {
	for {
		var oldest *sharedSession
		n := 0
		for k, s := range r.shared {
			if !k.perUser {
				continue
			}
			n++
			if oldest == nil || s.used.Before(oldest.used) {
				oldest = s
			}
		}
		if n < r.opts.MaxCallerSessions {
			return
		}
		r.retireSharedLocked(oldest)
	}
}

// releaseShared ends one use of s.
func (r *Runtime) releaseShared(s *sharedSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.busy--
	if s.retired && s.unused() {
		r.closeSharedLocked(s)
	}
}

// retireSharedLocked unregisters s; its session is closed once no caller
// uses or waits for it and no running native task is pinned to it.
func (r *Runtime) retireSharedLocked(s *sharedSession) {
	if r.shared[s.key] == s {
		delete(r.shared, s.key)
	}
	s.retired = true
	if s.finished() && s.unused() {
		r.closeSharedLocked(s)
	}
}

// acquireTaskShared returns, with one more user counted (releaseShared
// ends it), the live shared session the native task taskID of server was
// started on in this process; nil when there is none: the task was started
// by another process (or before a restart), or its session was lost, in
// which case the pin is dropped.
func (r *Runtime) acquireTaskShared(server, taskID string) *sharedSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := taskSharedKey{server, taskID}
	s := r.taskShared[key]
	if s == nil {
		return nil
	}
	if r.closed || s.sess == nil || s.sess.Lost() {
		r.log.Info("the MCP session a native task was started on is gone; the task's requests go to the server's current session",
			"server", server)
		r.unpinTaskLocked(key)
		return nil
	}
	s.busy++
	return s
}

// taskSession is the shared session s a native task's call ran on, lent
// to the task's route.TaskPin.
type taskSession struct {
	r *Runtime
	s *sharedSession
}

// PinTask keeps s open for the task's later requests while the task runs,
// even once a new session replaced it for other calls: an upstream may
// keep its tasks per session.
func (t taskSession) PinTask(taskID string) {
	r, s := t.r, t.s
	r.mu.Lock()
	defer r.mu.Unlock()
	key := taskSharedKey{s.server, taskID}
	if old := r.taskShared[key]; old == s {
		return
	} else if old != nil {
		r.unpinTaskLocked(key)
	}
	if r.closed {
		return
	}
	if _, open := r.sharedAll[s]; !open {
		return // closed already: nothing to keep
	}
	r.taskShared[key] = s
	s.pins++
}

// UnpinTask ends the pin of the native task taskID.
func (t taskSession) UnpinTask(taskID string) {
	t.r.mu.Lock()
	defer t.r.mu.Unlock()
	t.r.unpinTaskLocked(taskSharedKey{t.s.server, taskID})
}

func (r *Runtime) unpinTaskLocked(key taskSharedKey) {
	s := r.taskShared[key]
	if s == nil {
		return
	}
	delete(r.taskShared, key)
	s.pins--
	if s.retired && s.unused() {
		r.closeSharedLocked(s)
	}
}

// Forgotten records, once per server and process, that the server did not
// know a native task after the session the task was started on ended: it
// keeps its tasks per session, so its native tasks do not survive a
// reconnect.
func (t taskSession) Forgotten() {
	r, server := t.r, t.s.server
	r.mu.Lock()
	first := !r.forgetful[server]
	r.forgetful[server] = true
	r.mu.Unlock()
	if first {
		r.log.Warn("MCP server forgets its native tasks when their session ends (server restart, lost connection or mcpflow worker restart): such tasks fail as task_not_found",
			"server", server)
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
	for key, s := range r.shared {
		if want, ok := current[key.server]; !ok || s.config != want {
			r.log.Info("closing the shared MCP session: its server's configuration changed", "server", key.server)
			r.retireSharedLocked(s)
		}
	}
}

// closeAllShared closes every shared session that was dialled, in
// parallel, and returns when they are closed. Dials must be over.
func (r *Runtime) closeAllShared() {
	r.mu.Lock()
	var sessions []*session.Session
	for s := range r.sharedAll {
		if s.sess != nil {
			sessions = append(sessions, s.sess)
		}
	}
	r.sharedAll = map[*sharedSession]struct{}{}
	r.shared = map[sharedKey]*sharedSession{}
	r.taskShared = map[taskSharedKey]*sharedSession{}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, sess := range sessions {
		wg.Go(func() { _ = sess.Close() })
	}
	wg.Wait()
	r.closers.Wait()
}

// sharedBroken reports whether a failed call on a shared SSE/HTTP session
// should retire it: only the loss of the session itself, that is a
// disconnect or an answer saying the server does not know the session
// (a 404, or the 400 "No valid session ID" of servers built like the
// TypeScript SDK's examples; Session.classify reports both as
// disconnects). Everything else a server answers (a JSON-RPC error such
// as -32603 from one user's tool call, a timeout, rejected arguments, an
// unknown tool) keeps it: the session is every user's, and the upstream
// may bind running native tasks to it. The failed call is never replayed;
// the next one redials.
func sharedBroken(err error) bool {
	return session.IsDisconnect(err)
}

// dropShared forgets the shared session s after a failure, if it is still
// the registered one; it is closed once its last user released it.
func (r *Runtime) dropShared(s *sharedSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shared[s.key] == s {
		r.retireSharedLocked(s)
	}
}

// dial connects to srv (configuration fingerprint fp) with the revision
// its protocol_version pins, which the session must then speak, or else
// with the revision an earlier dial of the same configuration settled on
// when that was not 2026-07-28: a server without server/discover (or whose
// tasks need 2025-11-25) is not probed again on every new session (a stdio
// server is a new process per user and thread).
func (r *Runtime) dial(ctx context.Context, srv *config.Server, fp string, o session.DialOptions) (*session.Session, error) {
	key := srv.Name + "\x00" + fp
	r.mu.Lock()
	o.Protocol = cmp.Or(srv.ProtocolVersion, r.protocols[key])
	r.mu.Unlock()
	sess, err := session.Dial(ctx, srv, o)
	switch {
	case err != nil:
	case srv.ProtocolVersion != "" && sess.Protocol() != srv.ProtocolVersion:
		_ = sess.Close()
		return nil, mcpflow.Errorf(mcpflow.EUpstream, "MCP server '%s' answered in protocol revision %s, not %s, which its protocol_version pins", srv.Name, sess.Protocol(), srv.ProtocolVersion)
	case o.Protocol == "" && !sess.Modern():
		r.mu.Lock()
		r.protocols[key] = sess.Protocol()
		r.mu.Unlock()
	}
	return sess, err
}
