package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/lru"
	"github.com/mcpflow/mcpflow/mcpclient/credential"
	"github.com/mcpflow/mcpflow/mcpclient/route"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// Servers whose credential is exchanged per caller (an oauth block with the
// token-exchange grant, RFC 8693) are discovered per user, never without a
// caller: the process-wide discovery leaves them out, and a listing (or
// call) for a user signed in with an identity provider lists them on that
// user's own session (acquireShared), whose initialize and tools/list carry
// the user's exchanged token. Each user's tools are kept until the
// configuration changes or the cache is reset, like the process-wide ones;
// a failed listing is tried again after the discovery backoff
// (DiscoveryRetry, doubling to DiscoveryRetryMax), at the user's next
// listing or call. At most callerToolsMax users' listings are kept, least
// recently used first out. A caller without a token (a static mcpflow
// token) does not see such a server's tools: the listing names the server
// as unavailable, and a call of one of its tools is refused as a tool error.

// callerToolsMax bounds the users whose listings of perCaller servers a
// process keeps.
const callerToolsMax = 1024

// perCaller reports whether srv's sessions and tool listings are per user:
// its credential is exchanged per caller.
func perCaller(srv *config.Server) bool {
	return credential.ExchangesToken(srv) && srv.Type != config.TransportStdio
}

// callerTools is one user's view of the tools: its listings of the
// perCaller servers and the state assembled from them. Guarded by
// Runtime.mu.
type callerTools struct {
	lists  map[string]*callerList // server → the user's latest listing of it
	gen    uint64                 // Runtime.gen the listings were made at
	base   *toolState             // the process-wide state view was built on
	view   *toolState
	flight chan struct{} // closed when the listing in flight ends; nil when none runs
}

// callerList is a user's listing of one perCaller server.
type callerList struct {
	fp       string // connFingerprint of the server listed
	tools    []mcp.Tool
	err      bool
	cause    string                      // why it failed (no secret)
	refused  *credential.CredentialError // the failure was a refused credential (an exchange the token endpoint refused)
	attempts int                         // failed listings in a row
	next     time.Time                   // when a failed listing is due again
}

// due reports whether c must list again before its view serves st.
func (c *callerTools) due(st *toolState, gen uint64, now time.Time) bool {
	if c.base != st || c.gen != gen {
		return true
	}
	for _, name := range st.perCaller {
		l := c.lists[name]
		if l == nil || l.fp != st.fps[name] || (l.err && !now.Before(l.next)) {
			return true
		}
	}
	return false
}

// toolsFor is tools as userID sees them: with the tools of the perCaller
// servers listed for userID when ctx carries a caller token, without them
// otherwise.
func (r *Runtime) toolsFor(ctx context.Context, userID string) (*toolState, error) {
	st, err := r.tools(ctx)
	if err != nil || len(st.perCaller) == 0 {
		return st, err
	}
	token := mcpflow.CallerToken(ctx)
	if token == "" {
		return st, nil
	}
	for range 3 {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, session.ErrShuttingDown()
		}
		if r.callers == nil {
			r.callers = lru.New[string, *callerTools](callerToolsMax)
		}
		c, ok := r.callers.Get(userID)
		if !ok {
			c = &callerTools{lists: map[string]*callerList{}}
			r.callers.Add(userID, c)
		}
		if c.flight == nil {
			if !c.due(st, r.gen, time.Now()) {
				v := c.view
				r.mu.Unlock()
				return v, nil
			}
			c.flight = make(chan struct{})
			r.bg.Add(1)
			go r.listForCaller(c, st, r.gen, userID, token, c.flight)
		}
		flight := c.flight
		r.mu.Unlock()
		select {
		case <-flight:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		r.mu.Lock()
		v, base := c.view, c.base
		r.mu.Unlock()
		if v != nil && base == st {
			return v, nil
		}
		// The configuration changed while the listing ran: list for the
		// new one.
		if st, err = r.tools(ctx); err != nil || len(st.perCaller) == 0 {
			return st, err
		}
	}
	return st, nil
}

// listForCaller lists, for userID signed in with token, the perCaller
// servers of st that c has no current listing of, and publishes c's view
// of st.
func (r *Runtime) listForCaller(c *callerTools, st *toolState, gen uint64, userID, token string, done chan struct{}) {
	defer r.bg.Done()
	now := time.Now()
	r.mu.Lock()
	if c.gen != gen {
		c.lists, c.gen = map[string]*callerList{}, gen
	}
	type listing struct {
		srv   *config.Server
		prev  *callerList
		tools []mcp.Tool
		err   error
	}
	var todo []*listing
	for _, name := range st.perCaller {
		l := c.lists[name]
		if l == nil || l.fp != st.fps[name] || (l.err && !now.Before(l.next)) {
			srv, _ := st.ext.Lookup(name)
			todo = append(todo, &listing{srv: srv, prev: l})
		}
	}
	r.mu.Unlock()

	var wg sync.WaitGroup
	for _, l := range todo {
		wg.Go(func() { l.tools, l.err = r.listAsCaller(l.srv, userID, token) })
	}
	wg.Wait()

	r.mu.Lock()
	defer r.mu.Unlock()
	defer close(done)
	c.flight = nil
	for _, l := range todo {
		name, fp := l.srv.Name, st.fps[l.srv.Name]
		if l.err == nil {
			c.lists[name] = &callerList{fp: fp, tools: l.tools}
			r.known[name] = toolNames(l.tools)
			continue
		}
		n := 1
		if l.prev != nil && l.prev.err && l.prev.fp == fp {
			n = l.prev.attempts + 1
		}
		cl := &callerList{fp: fp, err: true, attempts: n, next: time.Now().Add(r.backoff(n)), cause: r.discoveryCause(l.srv, l.err)}
		if errors.As(l.err, &cl.refused) {
			cl.cause = "tool discovery failed: " + cl.refused.Message
		}
		c.lists[name] = cl
		if r.ctx.Err() == nil {
			r.log.Warn("MCP tool discovery for a signed-in user failed; retried at that user's next listing or call",
				"server", name, "user", userID, "reason", cl.cause, "attempts", n, "retry_in", r.backoff(n))
		}
	}
	v := st.clone()
	v.raw = maps.Clone(st.raw)
	v.callerDown = map[string]*callerList{}
	for _, name := range st.perCaller {
		if l := c.lists[name]; l != nil && !l.err {
			v.raw[name] = l.tools
		} else if l != nil {
			v.callerDown[name] = l
		}
	}
	r.assemble(v)
	c.view, c.base = v, st
}

// listAsCaller lists srv's tools on userID's session of it, with the token
// exchanged from token, bounded as a discovery is (discoveryBound) and
// ended by Close.
func (r *Runtime) listAsCaller(srv *config.Server, userID, token string) ([]mcp.Tool, error) {
	bound := r.discoveryBound(srv)
	ctx, cancel := context.WithTimeout(mcpflow.WithCallerToken(r.ctx, token), bound)
	defer cancel()
	var tools []mcp.Tool
	err := r.run(ctx, srv, connFingerprint(*srv), userID, "", func(ctx context.Context, s *session.Session, _ *route.Route) error {
		var err error
		tools, err = s.ListTools(ctx)
		return err
	})
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, &mcpflow.Error{Code: mcpflow.ETimeout, Err: err,
			Message: fmt.Sprintf("MCP tool discovery for server '%s' timed out after %.1fs", srv.Name, bound.Seconds())}
	}
	return tools, err
}

// callerOwner returns the perCaller server of st that may own the visible
// tool name, which st does not list: one whose listing for any user in this
// process, or whose configuration (tools overrides), has a tool of that
// name, or, for a prefixed server, any "<server>_..." name. Nil when there
// is none.
func (r *Runtime) callerOwner(st *toolState, name string) *config.Server {
	if len(st.perCaller) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, server := range st.perCaller {
		srv, ok := st.ext.Lookup(server)
		if !ok {
			continue
		}
		visible := func(raw string) bool {
			if srv.ToolNamePrefix {
				return srv.Name+"_"+raw == name
			}
			return raw == name
		}
		if srv.ToolNamePrefix && strings.HasPrefix(name, srv.Name+"_") {
			return srv
		}
		for _, raw := range r.known[srv.Name] {
			if visible(raw) {
				return srv
			}
		}
		for raw := range srv.Tools {
			if visible(raw) {
				return srv
			}
		}
	}
	return nil
}

// callerMissing is the answer to a call of the tool name that st (the
// tools as the caller sees them) does not list but a perCaller server srv
// may own: a *credential.CredentialError for a caller without a token or whose
// credential the listing of srv was refused, EUnavailable while the
// caller's listing of srv fails otherwise, nil when it did not fail (an
// unknown tool).
func (r *Runtime) callerMissing(ctx context.Context, st *toolState, name string) error {
	srv := r.callerOwner(st, name)
	if srv == nil {
		return nil
	}
	if mcpflow.CallerToken(ctx) == "" {
		return credential.NoCallerError(srv)
	}
	l := st.callerDown[srv.Name]
	switch {
	case l == nil:
		return nil
	case l.refused != nil:
		return l.refused
	}
	return mcpflow.Errorf(mcpflow.EUnavailable, "MCP server '%s' is unavailable (%s); it is retried at your next call or listing", srv.Name, l.cause)
}

// callerUnavailable appends to out the perCaller servers of st whose tools
// the caller of ctx does not see, and why.
func callerUnavailable(ctx context.Context, st *toolState, out []mcpflow.UnavailableServer) []mcpflow.UnavailableServer {
	signedIn := mcpflow.CallerToken(ctx) != ""
	for i := range st.ext.Servers {
		name := st.ext.Servers[i].Name
		if !st.isPerCaller(name) {
			continue
		}
		switch {
		case !signedIn:
			out = append(out, mcpflow.UnavailableServer{Server: name,
				Reason: "its credential is exchanged per caller (RFC 8693): its tools are listed for callers signed in with the identity provider only"})
		case st.callerDown[name] != nil:
			out = append(out, mcpflow.UnavailableServer{Server: name, Reason: st.callerDown[name].cause})
		}
	}
	return out
}

// isPerCaller reports whether name is one of st's perCaller servers.
func (st *toolState) isPerCaller(name string) bool {
	for _, n := range st.perCaller {
		if n == name {
			return true
		}
	}
	return false
}
