package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
)

// Session bounds.
const (
	// sessionCacheTTL bounds how long a replica trusts a session it read
	// without reading it again: a DELETE through another replica is seen
	// within this time.
	sessionCacheTTL = 5 * time.Second
	sessionCacheMax = 100_000
	// sessionTouchEvery is how stale a stored last use may get before a
	// request writes a new one (not one write per request).
	sessionTouchEvery = time.Minute
	// DefaultSessionIdleTTL removes sessions unused this long.
	DefaultSessionIdleTTL = 30 * 24 * time.Hour
	// pruneEvery is how often a replica removes idle sessions.
	pruneEvery = time.Hour
	// MaxClientDataBytes caps a session's stored clientInfo and
	// capabilities (compact JSON), which bounds a stored session.
	MaxClientDataBytes = 16 << 10
	// DefaultMaxSessionsPerUser is server.max_mcp_sessions_per_user's
	// default.
	DefaultMaxSessionsPerUser = 100
)

// sessionIDPrefix starts every session id.
const sessionIDPrefix = "mcp-session-"

func newSessionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return sessionIDPrefix + hex.EncodeToString(b[:])
}

func validSessionID(id string) bool {
	if len(id) != len(sessionIDPrefix)+32 || id[:len(sessionIDPrefix)] != sessionIDPrefix {
		return false
	}
	for _, c := range id[len(sessionIDPrefix):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// session is a stored session with its client's capabilities decoded:
// once per session and replica, as the cache keeps it.
type session struct {
	*mcpflow.MCPSession
	caps *clientCaps
}

// clientCaps are what mcpflow reads of a client's capabilities.
type clientCaps struct {
	elicits  bool // elicitation: tasks/result asks a task's question
	tasksExt bool // extensions[ExtTasks] is an object (2026-07-28)
	// answers are the kinds of requests a 2025-11-25 client answers (the
	// methods of the capabilities it declared at initialize), and upstream
	// the capabilities its calls declare to a 2026-07-28 server: its
	// elicitation, sampling and roots, and the Tasks extension when durable
	// tasks run here (the task is then mcpflow's).
	answers  []string
	upstream json.RawMessage
}

// sessionAsks are the capabilities of requests a server may ask a
// 2025-11-25 client during a call, and their methods.
var sessionAsks = []struct {
	capability string
	method     mcp.MCPMethod
}{{"elicitation", mcp.MethodElicitationCreate}, {"sampling", mcp.MethodSamplingCreateMessage}, {"roots", mcp.MethodListRoots}}

// newClientCaps decodes a client's capabilities; a session's (with
// answers and upstream) with session set.
func newClientCaps(raw json.RawMessage, session, tasks bool) *clientCaps {
	cc := &clientCaps{}
	var view struct {
		Elicitation json.RawMessage `json:"elicitation"`
		Extensions  json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(raw, &view) == nil {
		cc.elicits = len(view.Elicitation) > 0 && !bytes.Equal(view.Elicitation, []byte("null"))
		var ext map[string]json.RawMessage
		cc.tasksExt = isJSONObject(view.Extensions) && json.Unmarshal(view.Extensions, &ext) == nil && isJSONObject(ext[ExtTasks])
	}
	if !session {
		return cc
	}
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(raw, &caps)
	out := map[string]json.RawMessage{}
	for _, a := range sessionAsks {
		if v, ok := caps[a.capability]; ok && string(v) != "null" {
			cc.answers = append(cc.answers, string(a.method))
			out[a.capability] = v
		}
	}
	if tasks {
		out["extensions"] = json.RawMessage(`{"` + ExtTasks + `":{}}`)
	}
	cc.upstream, _ = json.Marshal(out)
	return cc
}

// newSession wraps a stored session for the cache.
func (s *Server) newSession(sess *mcpflow.MCPSession) *session {
	return &session{MCPSession: sess, caps: newClientCaps(sess.ClientCapabilities, true, s.tasksEnabled())}
}

// sessionCache remembers sessions read from the store for a few seconds.
type sessionCache struct {
	mu sync.Mutex
	m  map[string]cachedSession
}

type cachedSession struct {
	s   *session
	exp time.Time
}

func (c *sessionCache) get(id string, now time.Time) (*session, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || now.After(e.exp) {
		return nil, false
	}
	return e.s, true
}

func (c *sessionCache) put(s *session, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= sessionCacheMax {
		c.m = map[string]cachedSession{} // crude but bounded
	}
	c.m[s.ID] = cachedSession{s: s, exp: now.Add(sessionCacheTTL)}
}

func (c *sessionCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// session returns the request's session of the caller's user and thread,
// else ENotFound, and records a use at most every sessionTouchEvery.
func (s *Server) session(ctx context.Context, id string, req *mcpflow.MCPRequest) (*session, error) {
	now := s.now()
	if !validSessionID(id) {
		return nil, mcpflow.Errorf(mcpflow.ENotFound, "MCP session not found")
	}
	sess, ok := s.sessions.get(id, now)
	if !ok {
		stored, err := s.opts.Sessions.GetMCPSession(ctx, id)
		if err != nil {
			return nil, err
		}
		if now.Sub(stored.LastUsedAt) > sessionTouchEvery {
			if err := s.opts.Sessions.TouchMCPSession(ctx, id, now); err != nil && mcpflow.ErrorCode(err) != mcpflow.ENotFound {
				s.log.Warn("could not record an MCP session's use", "error", err)
			}
			c := *stored
			c.LastUsedAt = now
			stored = &c
		}
		sess = s.newSession(stored)
		s.sessions.put(sess, now)
	}
	if sess.UserID != req.UserID || sess.ThreadID != req.ThreadID {
		return nil, mcpflow.Errorf(mcpflow.ENotFound, "MCP session not found")
	}
	return sess, nil
}

// pruneSessions removes idle sessions, at most once per pruneEvery per
// process, in the background.
func (s *Server) pruneSessions() {
	now := s.now()
	s.pruneMu.Lock()
	due := now.Sub(s.lastPrune) >= pruneEvery
	if due {
		s.lastPrune = now
	}
	s.pruneMu.Unlock()
	if !due {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n, err := s.opts.Sessions.DeleteIdleMCPSessions(ctx, now.Add(-s.opts.SessionIdleTTL))
		switch {
		case err != nil:
			s.log.Warn("could not remove idle MCP sessions", "error", err)
		case n > 0:
			s.log.Info("removed idle MCP sessions", "count", n, "idle_for", s.opts.SessionIdleTTL.String())
		}
		s.dropEndedSubscriptions(ctx)
	}()
}
