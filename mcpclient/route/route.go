package route

import (
	"bytes"
	"context"
	"maps"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/mcpflow/mcpflow/mcpclient/session"
	"github.com/mcpflow/mcpflow/mcpclient/workspace"
)

// Route is how one operation reached its session: the pooled stdio session
// of (server, user:thread), running in the thread's workspace, or the
// shared session of an SSE/HTTP server with the call's credential headers.
// It carries what requests on that route add and what their results need.
type Route struct {
	meta      map[string]any       // _meta of a stdio request (the OAuth header); nil otherwise
	ws        *workspace.Workspace // the thread's workspace (stdio only)
	serverCwd string               // the stdio server's working directory
	started   time.Time            // when the operation was routed
}

// New returns the route of an operation routed now: on stdio with its
// requests' _meta, the thread's workspace ws and the server's working
// directory; on a shared session with none of them (nil ws).
func New(meta map[string]any, ws *workspace.Workspace, serverCwd string) *Route {
	return &Route{meta: meta, ws: ws, serverCwd: serverCwd, started: time.Now()}
}

// Stdio reports whether the route runs in a thread's workspace, whose
// paths results translate.
func (rt *Route) Stdio() bool { return rt != nil && rt.ws != nil }

// Meta returns the _meta every request on the route carries: on a stdio
// route of a server with an oauth block {"headers": {"Authorization": …}},
// nil otherwise. The caller may change the copy.
func (rt *Route) Meta() map[string]any {
	if rt == nil || rt.meta == nil {
		return nil
	}
	return maps.Clone(rt.meta)
}

// Started returns when the operation was routed (zero for a nil route).
func (rt *Route) Started() time.Time {
	if rt == nil {
		return time.Time{}
	}
	return rt.started
}

// Translate rewrites, in place, the workspace paths in res's content to
// what the agent sees (workspace.Workspace.TranslateResult) on a stdio
// route; on other routes it does nothing. Files written since since count
// as the result's new files for the bare-filename rule (a zero since
// disables that rule).
func (rt *Route) Translate(res *mcp.CallToolResult, since time.Time) {
	if !rt.Stdio() || res == nil {
		return
	}
	var changed []string
	if !since.IsZero() && hasText(res) {
		changed = rt.ws.ChangedSince(since)
	}
	rt.ws.TranslateResult(res, rt.serverCwd, changed)
}

// NeedsTranslation reports whether a result on the route, as the server
// wrote it (valid JSON), may have paths to translate: a stdio route's
// result with a path hint outside its _meta (pathHint), or with files
// written since the call started (the bare-filename rule). Other results
// pass through unread.
func (rt *Route) NeedsTranslation(raw []byte) bool {
	if !rt.Stdio() || rt.ws.UserData == "" {
		return false
	}
	if hintOutsideMeta(raw) {
		return true
	}
	return len(rt.ws.ChangedSince(rt.started)) > 0
}

// hintOutsideMeta reports whether raw (valid JSON) has a path hint
// anywhere but in the value of a top-level "_meta" member, which
// translation leaves alone: a 2026-07-28 server names itself there under
// "io.modelcontextprotocol/serverInfo" in every answer, and a full read
// of each answer for that costs a call tens of µs. When raw is not an
// object or has a member name with an escape, all of it counts.
func hintOutsideMeta(raw []byte) bool {
	if !pathHint(raw) {
		return false // the common answer: no walk
	}
	i := jsonscan.SkipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return true
	}
	found := false
	plain := jsonscan.Members(raw, i, func(key []byte, v, end int) bool {
		if string(key) == "_meta" {
			return true
		}
		found = pathHint(key) || pathHint(raw[v:end])
		return !found
	})
	return found || !plain
}

// pathHint reports whether b may hold what Translate rewrites: a '/'
// (every candidate path in a text has one; an escaped one is a \u
// escape), a resource (the uri of a resource_link or of an embedded
// resource may be a relative path without one), or any \u escape, which
// may spell either.
func pathHint(b []byte) bool {
	return bytes.IndexByte(b, '/') >= 0 || bytes.Contains(b, []byte(`\u`)) || bytes.Contains(b, []byte("resource"))
}

func hasText(res *mcp.CallToolResult) bool {
	for _, c := range res.Content {
		switch c.(type) {
		case mcp.TextContent, *mcp.TextContent:
			return true
		}
	}
	return false
}

// Op is one operation on the session a call was routed to. ctx carries
// the route's per-request credentials; an error it returns decides what
// happens to the session (a disconnect evicts a pooled session, an
// upstream failure retires a shared one), so an answer the server gave (a
// JSON-RPC error, a malformed result) must be handed back otherwise.
type Op func(ctx context.Context, s *session.Session, rt *Route) error
