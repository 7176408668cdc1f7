package mcpclient

import (
	"context"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
)

type sharedSession struct {
	done chan struct{}
	sess *Session
	err  error
}

func closeShared(m map[string]*sharedSession) {
	for _, s := range m {
		go func(s *sharedSession) {
			<-s.done
			if s.sess != nil {
				_ = s.sess.Close()
			}
		}(s)
	}
}

// sharedSession returns the process-wide session of an SSE/HTTP server,
// dialling it once (single-flight).
func (r *Runtime) sharedSession(ctx context.Context, srv *config.Server) (*Session, error) {
	r.mu.Lock()
	s := r.shared[srv.Name]
	if s != nil && s.lost() {
		// The transport went away (an SSE stream closed when the server
		// stopped): reconnect instead of reusing a dead session forever.
		delete(r.shared, srv.Name)
		go func(sess *Session) { _ = sess.Close() }(s.sess)
		s = nil
	}
	if s == nil {
		s = &sharedSession{done: make(chan struct{})}
		r.shared[srv.Name] = s
		r.mu.Unlock()
		go func() {
			dctx := context.Background()
			if d, ok := srv.SessionInitTimeoutDuration(); ok {
				var cancel context.CancelFunc
				dctx, cancel = context.WithTimeout(dctx, d)
				defer cancel()
			}
			s.sess, s.err = Dial(dctx, srv, DialOptions{Headers: r.connHeaders(srv), Logger: r.log})
			if s.err != nil {
				r.mu.Lock()
				if r.shared[srv.Name] == s {
					delete(r.shared, srv.Name)
				}
				r.mu.Unlock()
			}
			close(s.done)
		}()
	} else {
		r.mu.Unlock()
	}
	select {
	case <-s.done:
		return s.sess, s.err
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			d, _ := srv.SessionInitTimeoutDuration()
			return nil, mcpflow.Errorf(mcpflow.ETimeout, "MCP session initialization for server '%s' timed out after %.1fs", srv.Name, d.Seconds())
		}
		return nil, ctx.Err()
	}
}

// lost reports whether s finished dialling and its transport is gone since.
func (s *sharedSession) lost() bool {
	select {
	case <-s.done:
	default:
		return false
	}
	if s.sess == nil {
		return false
	}
	select {
	case <-s.sess.Done():
		return true
	default:
		return false
	}
}

// sharedBroken reports whether a failed call on a shared SSE/HTTP session
// should retire it: a disconnect, or any other upstream failure (a server
// that restarted may answer an unknown session id with a plain 400, as the
// TypeScript SDK's servers do). Timeouts, rejected arguments and unknown
// tools keep it. The failed call is never replayed; the next one redials.
func sharedBroken(err error) bool {
	return IsDisconnect(err) || mcpflow.ErrorCode(err) == mcpflow.EUpstream
}

// dropShared forgets a shared session after a real disconnect, if it is
// still the registered one.
func (r *Runtime) dropShared(server string, sess *Session) {
	r.mu.Lock()
	s := r.shared[server]
	if s != nil && s.sess == sess {
		delete(r.shared, server)
	} else {
		s = nil
	}
	r.mu.Unlock()
	if s != nil {
		_ = sess.Close()
	}
}
