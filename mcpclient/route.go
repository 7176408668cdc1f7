package mcpclient

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/mcpflow/mcpflow/mcpclient/credential"
	"github.com/mcpflow/mcpflow/mcpclient/route"
	"github.com/mcpflow/mcpflow/mcpclient/session"
	"github.com/mcpflow/mcpflow/mcpclient/workspace"
)

// Run runs op on the session srv's requests for a user's thread go to:
// stdio through the pooled session of (server, user:thread) in the
// thread's workspace (pinned for a durable task's calls, route.TaskPin),
// SSE/HTTP through the shared session with the call's credential headers
// (OAuth, user_auth for userID, headers_from_context from a
// request-scoped ctx, see WithSecrets), or, for a server whose token is
// exchanged per caller, userID's own session of it. A refused credential
// is a *credential.CredentialError and op does not run.
func (r *Runtime) Run(ctx context.Context, srv *config.Server, userID, threadID string, op route.Op) error {
	return r.run(ctx, srv, connFingerprint(*srv), userID, threadID, op)
}

// Call invokes a raw tool on srv for a user's thread through Run, and
// translates workspace paths in a stdio result (taskdriver.Ordinary's
// calls). A refused credential is a *credential.CredentialError.
func (r *Runtime) Call(ctx context.Context, srv *config.Server, tool, userID, threadID string, args map[string]any) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	var rt *route.Route
	err := r.run(ctx, srv, connFingerprint(*srv), userID, threadID, func(ctx context.Context, s *session.Session, on *route.Route) error {
		var err error
		res, err = s.CallTool(ctx, tool, args, on.Meta())
		rt = on
		return err
	})
	if err != nil {
		return nil, err
	}
	// Files this call wrote are stamped after it started.
	rt.Translate(res, rt.Started())
	return res, nil
}

// callResult is an ordinary call's result in the API's shape, args sent as
// they are (a map, or the caller's json.RawMessage). Only a stdio result
// that may name paths is read fully (they are translated); any other
// passes through with one light decode (readResult).
func (r *Runtime) callResult(ctx context.Context, srv *config.Server, fp, tool, userID, threadID string, args any) (*mcpflow.ToolResult, error) {
	var raw json.RawMessage
	var rt *route.Route
	var sess *session.Session
	err := r.run(ctx, srv, fp, userID, threadID, func(ctx context.Context, s *session.Session, on *route.Route) error {
		var err error
		raw, err = s.CallToolRaw(ctx, tool, args, on.Meta())
		rt, sess = on, s
		return err
	})
	if err != nil {
		return nil, err
	}
	var res *mcpflow.ToolResult
	if !rt.NeedsTranslation(raw) {
		res, err = readResult(raw, func(err error) error { return sess.Unreadable(tool, err) })
	} else {
		parsed, perr := mcp.ParseCallToolResult(&raw)
		if perr != nil {
			return nil, sess.Unreadable(tool, perr)
		}
		rt.Translate(parsed, rt.Started())
		res, err = ConvertResult(parsed)
	}
	if err == nil {
		res.Bound(len(raw), r.opts.MaxContentBytes)
	}
	return res, err
}

// readResult reads a tools/call result in one pass over its members
// (decodeResult), its content blocks kept as the server wrote them.
func readResult(raw json.RawMessage, unreadable func(error) error) (*mcpflow.ToolResult, error) {
	res, err := decodeResult(raw)
	if err != nil {
		return nil, unreadable(err)
	}
	if res.Content == nil {
		return nil, unreadable(errors.New("content is missing"))
	}
	for i, b := range res.Content {
		if len(b) == 0 || b[0] != '{' {
			return nil, unreadable(fmt.Errorf("content block %d is not an object", i))
		}
	}
	out := &mcpflow.ToolResult{Content: res.Content, IsError: res.IsError}
	if sc := bytes.TrimSpace(res.StructuredContent); len(sc) > 0 && !bytes.Equal(sc, []byte("null")) {
		// Decoded as ConvertResult decodes it (numbers as json.Number): the
		// API's value, whatever the route.
		var v any
		if err := mcpflow.DecodeExact(sc, &v); err == nil {
			out.StructuredContent = v
		}
	}
	return out, nil
}

// resultParts are what mcpflow reads of a tools/call result.
type resultParts struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent"`
	IsError           bool              `json:"isError"`
}

// decodeResult is json.Unmarshal(raw, &res), from a scan of raw's
// members where it can: a 2026-07-28 answer's _meta and resultType are
// skipped rather than decoded (json.Unmarshal cost about 7 µs a call in
// serve's profile). Anything the scan would read otherwise (a name in
// another case or escaped, a value of another type) goes to
// json.Unmarshal. The blocks are slices of raw.
func decodeResult(raw json.RawMessage) (resultParts, error) {
	var res resultParts
	i := jsonscan.SkipWS(raw, 0)
	if json.Valid(raw) && i < len(raw) && raw[i] == '{' && jsonscan.Members(raw, i, func(key []byte, v, end int) bool {
		val := raw[v:end]
		switch string(key) {
		case "content":
			if string(val) == "null" {
				res.Content = nil
				return true
			}
			res.Content = make([]json.RawMessage, 0, 1)
			return val[0] == '[' && jsonscan.Elements(raw, v, func(e, eend int) bool {
				res.Content = append(res.Content, raw[e:eend])
				return true
			})
		case "structuredContent":
			res.StructuredContent = val
		case "isError":
			switch string(val) {
			case "true", "false":
				res.IsError = val[0] == 't'
			case "null": // leaves it as it was, as encoding/json does
			default:
				return false
			}
		default:
			return !jsonscan.FoldsTo(key, "content", "structuredContent", "isError")
		}
		return true
	}) {
		return res, nil
	}
	res = resultParts{}
	err := json.Unmarshal(raw, &res)
	return res, err
}

// run is Run with the fingerprint of srv's connection settings.
func (r *Runtime) run(ctx context.Context, srv *config.Server, fp, userID, threadID string, op route.Op) error {
	if srv.Type == config.TransportStdio {
		meta, err := r.creds.StdioMeta(srv)
		if err != nil {
			return err
		}
		ws, err := workspace.Prepare(r.workspaceRoot(), userID, threadID)
		if err != nil {
			return err
		}
		rt := route.New(meta, ws, cmp.Or(srv.Cwd, ws.Dir))
		key := session.PoolKey{Server: srv.Name, Scope: userID + ":" + threadID}
		dial := func(dctx context.Context) (*session.Session, error) {
			return r.dial(dctx, srv, fp, session.DialOptions{Dir: ws.Dir, Env: ws.Env(), Logger: r.log, Questions: r.questions,
				Lists: func(method string) { r.listsChanged(srv.Name, key.Scope, method) }})
		}
		if tp := route.PinFrom(ctx); tp != nil {
			if err := r.checkPinned(tp, key, userID); err != nil {
				return err
			}
			tp.Hold(r.pool, key)
		}
		return r.pool.Run(ctx, key, fp, dial, func(s *session.Session) error { return op(ctx, s, rt) })
	}
	headers, own, err := r.creds.Headers(ctx, srv, userID)
	if err != nil {
		return err
	}
	rt := route.New(nil, nil, "")
	tp := route.PinFrom(ctx)
	task := tp.SharedTask()
	var s *sharedSession
	if task != "" {
		// A native task's call goes to the session the task was started
		// on while it lives: the upstream may know the task there only.
		s = r.acquireTaskShared(srv.Name, task)
	}
	moved := s == nil && task != ""
	if s == nil {
		if s, err = r.acquireShared(ctx, srv, fp, userID, own, mcpflow.CallerToken(ctx) != ""); err != nil {
			return err
		}
	}
	if tp != nil { // a durable task's call (no allocation for the others)
		tp.BindShared(taskSession{r, s}, moved)
	}
	defer r.releaseShared(s)
	err = op(credential.WithCallHeaders(ctx, headers), s.sess, rt)
	if err != nil && sharedBroken(err) {
		r.dropShared(s)
	}
	return err
}

// checkPinned refuses the submit of a durable task on a stdio session that
// would make userID hold more than MaxPinnedPerUser sessions pinned by
// running tasks (ETooMany); a session the user pins already (another task
// of the same thread) costs nothing more.
func (r *Runtime) checkPinned(tp *route.TaskPin, key session.PoolKey, userID string) error {
	max := r.opts.MaxPinnedPerUser
	if max <= 0 || !tp.Submit() {
		return nil
	}
	if n := r.pool.PinnedScopes(userID+":", key); n >= max && !r.pool.Pinned(key) {
		return mcpflow.Errorf(mcpflow.ETooMany, "this user's running durable tasks already hold %d stdio sessions, the most one user may (mcp_tasks.max_pinned_sessions_per_user); wait for one of them to finish or cancel one, or start the task in a thread that already runs one", n)
	}
	return nil
}
