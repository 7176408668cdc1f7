package mcpserver

import (
	"context"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// Resource subscriptions (2025-11-25): resources/subscribe subscribes the
// session at the resource's server through the runtime, and each update
// the server announces is written as notifications/resources/updated on
// the session's GET stream when it is open on this replica (the one that
// took the subscribe: route a session's requests to one replica to hear
// every update). Unsubscribing, or the session ending here, ends it.

// streamNotes bounds the notifications waiting for a GET stream; beyond
// it an update is dropped (the client reads the resource again anyway).
const streamNotes = 64

// maxSessionSubscriptions bounds a session's resource subscriptions.
const maxSessionSubscriptions = 100

// subscribe answers resources/subscribe.
func subscribe(c *call, ctx context.Context, sr mcpflow.SurfaceRuntime) (any, *rpcError) {
	uri, rerr := c.uri()
	if rerr != nil {
		return nil, rerr
	}
	s, sid := c.s, c.session
	s.mu.Lock()
	n := len(s.subs[sid])
	_, again := s.subs[sid][uri]
	s.mu.Unlock()
	if n >= maxSessionSubscriptions && !again {
		return nil, invalidParams("a session subscribes to at most %d resources: unsubscribe from one first", maxSessionSubscriptions)
	}
	unsubscribe, err := sr.SubscribeResource(ctx, c.req.UserID, c.req.ThreadID, uri, func() {
		s.pushNote(sid, notification{JSONRPC: mcp.JSONRPC_VERSION, Method: mcp.MethodNotificationResourceUpdated,
			Params: map[string]any{"uri": uri}})
	})
	if err != nil {
		return nil, c.surfaceError(err)
	}
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[string]map[string]func(){}
	}
	if s.subs[sid] == nil {
		s.subs[sid] = map[string]func(){}
	}
	old, again := s.subs[sid][uri]
	over := !again && len(s.subs[sid]) >= maxSessionSubscriptions // a concurrent subscribe took the last
	if !over {
		s.subs[sid][uri] = unsubscribe
	}
	s.mu.Unlock()
	switch {
	case over:
		unsubscribe()
		return nil, invalidParams("a session subscribes to at most %d resources: unsubscribe from one first", maxSessionSubscriptions)
	case old != nil:
		old() // subscribed again: one subscription per session and URI
	}
	if _, err := s.session(ctx, sid, c.req); mcpflow.ErrorCode(err) == mcpflow.ENotFound {
		s.forgetSessions(sid) // ended meanwhile (a DELETE): its subscriptions with it
	}
	return struct{}{}, nil
}

// dropEndedSubscriptions ends the subscriptions of the sessions that have
// ended since (idle, or through another replica).
func (s *Server) dropEndedSubscriptions(ctx context.Context) {
	s.mu.Lock()
	sids := slices.Collect(maps.Keys(s.subs))
	s.mu.Unlock()
	for _, sid := range sids {
		if _, err := s.opts.Sessions.GetMCPSession(ctx, sid); mcpflow.ErrorCode(err) == mcpflow.ENotFound {
			s.forgetSessions(sid)
		}
	}
}

// unsubscribe answers resources/unsubscribe ({} also for a URI the session
// did not subscribe to here).
func unsubscribe(c *call, _ context.Context, _ mcpflow.SurfaceRuntime) (any, *rpcError) {
	uri, rerr := c.uri()
	if rerr != nil {
		return nil, rerr
	}
	s := c.s
	s.mu.Lock()
	u := s.subs[c.session][uri]
	delete(s.subs[c.session], uri)
	s.mu.Unlock()
	if u != nil {
		u()
	}
	return struct{}{}, nil
}

// pushNote writes n on the session's GET stream when it is open here.
func (s *Server) pushNote(sid string, n notification) {
	s.mu.Lock()
	st := s.streams[sid]
	s.mu.Unlock()
	if st == nil {
		return
	}
	select {
	case st.notes <- n:
	default:
	}
}
