package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpclient/route"
	"github.com/mcpflow/mcpflow/mcpclient/session"
	"github.com/mcpflow/mcpflow/mcpclient/workspace"
)

// The MCP surface beyond tools: the prompts and resources of the servers a
// caller's tools come from, relayed as the servers write them. Prompts are
// named like tools ("<server>_<prompt>" unless tool_name_prefix is off);
// resource URIs are kept as written, and a read goes to the first server,
// in configuration order, that has the resource (the same order that
// decides a tool name two servers share).

// surfaceMaxPages bounds the pages of one server's listing mcpflow reads
// (its nextCursor chain).
const surfaceMaxPages = 100

// surfaceServers are the servers of userID's tool listing (reached, in
// configuration order) that ctx's server filter admits.
func (r *Runtime) surfaceServers(ctx context.Context, userID string) ([]*config.Server, map[string]string, error) {
	st, err := r.toolsFor(ctx, userID)
	if err != nil {
		return nil, nil, err
	}
	var out []*config.Server
	for i := range st.ext.Servers {
		srv := &st.ext.Servers[i]
		if _, ok := st.raw[srv.Name]; ok && srv.Enabled && mcpflow.ServerAllowed(ctx, srv.Name) {
			out = append(out, srv)
		}
	}
	return out, st.fps, nil
}

// eachOffering runs op on the session of every server of userID's thread
// that offers prompts (or resources), in configuration order. A server
// that fails is left out of a listing and logged.
func (r *Runtime) eachOffering(ctx context.Context, userID, threadID string, prompts bool, op func(srv *config.Server, s *session.Session) error) error {
	servers, fps, err := r.surfaceServers(ctx, userID)
	if err != nil {
		return err
	}
	for _, srv := range servers {
		err := r.run(ctx, srv, fps[srv.Name], userID, threadID, func(ctx context.Context, s *session.Session, _ *route.Route) error {
			p, res := s.Offers()
			if prompts && !p || !prompts && !res {
				return nil
			}
			return op(srv, s)
		})
		var st *stop
		switch {
		case errors.As(err, &st):
			return st.err
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			r.log.Warn("MCP server left out of a prompt or resource listing", "server", srv.Name, "error", err)
		}
	}
	return nil
}

// listAll reads every page of a listing (key: "prompts", "resources",
// "resourceTemplates").
func listAll(ctx context.Context, s *session.Session, method mcp.MCPMethod, key string) ([]json.RawMessage, error) {
	var all []json.RawMessage
	cursor := ""
	for range surfaceMaxPages {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := s.Request(ctx, method, "", params)
		if err != nil {
			return nil, err
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("%s of server '%s': %w", method, s.Server(), err)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(page[key], &items); err != nil && len(page[key]) > 0 {
			return nil, fmt.Errorf("%s of server '%s': %s: %w", method, s.Server(), key, err)
		}
		all = append(all, items...)
		var next string
		_ = json.Unmarshal(page["nextCursor"], &next)
		if next == "" || next == cursor {
			return all, nil
		}
		cursor = next
	}
	return all, nil
}

// promptName is the name under which srv's prompt name is listed.
func promptName(srv *config.Server, name string) string {
	if srv.ToolNamePrefix {
		return srv.Name + "_" + name
	}
	return name
}

// ListPrompts lists the prompts of the caller's servers, named as listed.
func (r *Runtime) ListPrompts(ctx context.Context, userID, threadID string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	seen := map[string]bool{}
	err := r.eachOffering(ctx, userID, threadID, true, func(srv *config.Server, s *session.Session) error {
		items, err := listAll(ctx, s, mcp.MethodPromptsList, "prompts")
		if err != nil {
			return err
		}
		for _, it := range items {
			var p map[string]json.RawMessage
			var name string
			if json.Unmarshal(it, &p) != nil || json.Unmarshal(p["name"], &name) != nil || name == "" {
				continue
			}
			visible := promptName(srv, name)
			if seen[visible] {
				continue // the first server in configuration order keeps a name
			}
			seen[visible] = true
			p["name"], _ = json.Marshal(visible)
			b, err := json.Marshal(p)
			if err != nil {
				continue
			}
			out = append(out, b)
		}
		return nil
	})
	return out, err
}

// GetPrompt gets the prompt listed as name, sending params (arguments,
// and a 2026-07-28 retry's inputResponses and requestState) as they are;
// answered as its server wrote it.
func (r *Runtime) GetPrompt(ctx context.Context, userID, threadID, name string, params map[string]any) (json.RawMessage, error) {
	var out json.RawMessage
	err := r.onPrompt(ctx, userID, threadID, name, func(s *session.Session, orig string) error {
		p := map[string]any{"name": orig}
		for k, v := range params {
			if k != "name" && k != "_meta" {
				p[k] = v
			}
		}
		if err := mcpflow.CheckServer(ctx, s.Server()); err != nil {
			return err
		}
		var err error
		out, err = s.Request(ctx, mcp.MethodPromptsGet, orig, p)
		if limit := r.opts.MaxContentBytes; err == nil && limit > 0 && len(out) > limit {
			return mcpflow.Errorf(mcpflow.EUpstream, "prompt '%s' of MCP server '%s' is %d bytes, over server.max_content_bytes (%d)", orig, s.Server(), len(out), limit)
		}
		return err
	})
	return out, err
}

// onPrompt runs op on the session of the server whose prompt is listed as
// name (the first in configuration order), with the prompt's own name; an
// unknown prompt is mcpflow.UnknownPrompt.
func (r *Runtime) onPrompt(ctx context.Context, userID, threadID, name string, op func(s *session.Session, orig string) error) error {
	found := false
	err := r.eachOffering(ctx, userID, threadID, true, func(srv *config.Server, s *session.Session) error {
		if found {
			return nil
		}
		orig := name
		if srv.ToolNamePrefix {
			var ok bool
			if orig, ok = strings.CutPrefix(name, srv.Name+"_"); !ok {
				return nil
			}
		}
		items, err := listAll(ctx, s, mcp.MethodPromptsList, "prompts")
		if err != nil {
			return err
		}
		if !hasName(items, orig) {
			return nil
		}
		found = true
		if err := op(s, orig); err != nil {
			return &stop{err}
		}
		return nil
	})
	if err == nil && !found {
		return mcpflow.UnknownPrompt(name)
	}
	return err
}

// Complete answers completion/complete (params as the client sent them):
// for a prompt's argument from the prompt's server, for a resource
// template's variable from the first server that lists the template. A
// server without completions offers none.
func (r *Runtime) Complete(ctx context.Context, userID, threadID string, params map[string]any) (json.RawMessage, error) {
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	b, _ := json.Marshal(params["ref"])
	if err := json.Unmarshal(b, &ref); err != nil {
		return nil, &mcpflow.RPCError{Code: -32602, Message: "params.ref must be an object"}
	}
	var out json.RawMessage
	complete := func(s *session.Session, p map[string]any) error {
		if !s.OffersCompletions() {
			out = json.RawMessage(`{"completion":{"values":[]}}`)
			return nil
		}
		var err error
		out, err = s.Request(ctx, mcp.MethodCompletionComplete, "", p)
		return err
	}
	switch ref.Type {
	case "ref/prompt":
		err := r.onPrompt(ctx, userID, threadID, ref.Name, func(s *session.Session, orig string) error {
			p := maps.Clone(params)
			p["ref"] = map[string]any{"type": ref.Type, "name": orig}
			return complete(s, p)
		})
		return out, err
	case "ref/resource":
		found := false
		err := r.eachOffering(ctx, userID, threadID, false, func(_ *config.Server, s *session.Session) error {
			if found {
				return nil
			}
			items, err := listAll(ctx, s, mcp.MethodResourcesTemplatesList, "resourceTemplates")
			if err != nil || !hasField(items, "uriTemplate", ref.URI) {
				return err
			}
			found = true
			if err := complete(s, params); err != nil {
				return &stop{err}
			}
			return nil
		})
		if err == nil && !found {
			err = mcpflow.UnknownResource(ref.URI)
		}
		return out, err
	}
	return nil, &mcpflow.RPCError{Code: -32602, Message: `params.ref.type must be "ref/prompt" or "ref/resource"`}
}

// hasName reports whether one of the listed items is named name.
func hasName(items []json.RawMessage, name string) bool { return hasField(items, "name", name) }

// hasField reports whether one of the listed items has value as its string
// field key.
func hasField(items []json.RawMessage, key, value string) bool {
	for _, it := range items {
		var m map[string]json.RawMessage
		var v string
		if json.Unmarshal(it, &m) == nil && json.Unmarshal(m[key], &v) == nil && v == value {
			return true
		}
	}
	return false
}

// stop ends eachOffering with err: an answer of the server's (its to
// tell the caller), or the failure of the server a request is for.
type stop struct{ err error }

func (s *stop) Error() string { return s.err.Error() }

// ListResources lists the resources of the caller's servers, as written;
// a URI two servers list is the first's (the one a read reaches).
func (r *Runtime) ListResources(ctx context.Context, userID, threadID string) ([]json.RawMessage, error) {
	return r.listResources(ctx, userID, threadID, mcp.MethodResourcesList, "resources", "uri")
}

// ListResourceTemplates lists the resource templates of the caller's
// servers, as written, each URI template once.
func (r *Runtime) ListResourceTemplates(ctx context.Context, userID, threadID string) ([]json.RawMessage, error) {
	return r.listResources(ctx, userID, threadID, mcp.MethodResourcesTemplatesList, "resourceTemplates", "uriTemplate")
}

func (r *Runtime) listResources(ctx context.Context, userID, threadID string, method mcp.MCPMethod, key, id string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	seen := map[string]bool{}
	err := r.eachOffering(ctx, userID, threadID, false, func(_ *config.Server, s *session.Session) error {
		items, err := listAll(ctx, s, method, key)
		for _, it := range items {
			var m map[string]json.RawMessage
			if json.Unmarshal(it, &m) != nil || seen[string(m[id])] {
				continue
			}
			seen[string(m[id])] = true
			out = append(out, it)
		}
		return err
	})
	return out, err
}

// notFound reports whether a server's error says it has no such resource:
// -32602, or -32002 (earlier revisions) unless it carries a retry delay,
// as a rate limit's -32002 does (another mcpflow's, say).
func notFound(rpc *mcpflow.RPCError) bool {
	return rpc.Code == mcp.INVALID_PARAMS || rpc.Code == mcp.RESOURCE_NOT_FOUND && !bytes.Contains(rpc.Data, []byte(`"retryAfterSeconds"`))
}

// foreign reports whether uri names files of another user's or thread's
// workspace, which a stdio server (running in the caller's) is not asked
// for: the resource is unknown to the caller.
func (r *Runtime) foreign(srv *config.Server, userID, threadID, uri string) bool {
	if srv.Type != config.TransportStdio {
		return false
	}
	ws, err := workspace.Prepare(r.workspaceRoot(), userID, threadID)
	return err != nil || ws.Foreign(uri)
}

// ReadResource reads uri from the first server, in configuration order,
// that does not answer it unknown; none: -32602 with the URI in its data
// (SEP-2164).
func (r *Runtime) ReadResource(ctx context.Context, userID, threadID, uri string) (json.RawMessage, error) {
	var out json.RawMessage
	err := r.eachOffering(ctx, userID, threadID, false, func(srv *config.Server, s *session.Session) error {
		if out != nil || r.foreign(srv, userID, threadID, uri) {
			return nil
		}
		raw, err := s.Request(ctx, mcp.MethodResourcesRead, uri, map[string]any{"uri": uri})
		var rpc *mcpflow.RPCError
		if errors.As(err, &rpc) && notFound(rpc) {
			return nil // not this server's
		}
		if err == nil {
			err = mcpflow.CheckServer(ctx, srv.Name) // counted once it is the server's
		}
		if err != nil {
			return &stop{err}
		}
		out = mcpflow.BoundResourceRead(raw, uri, r.opts.MaxContentBytes)
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case out == nil:
		return nil, mcpflow.UnknownResource(uri)
	}
	return out, nil
}

// SubscribeResource subscribes to uri at the first server, in
// configuration order, that offers subscriptions and does not answer it
// unknown, and calls updated at each of its updates until unsubscribe. A
// subscription lasts as long as mcpflow's session to that server (a
// reconnect, a configuration change or an idle stdio process ends it).
func (r *Runtime) SubscribeResource(ctx context.Context, userID, threadID, uri string, updated func()) (func(), error) {
	var unsubscribe func()
	err := r.eachOffering(ctx, userID, threadID, false, func(srv *config.Server, s *session.Session) error {
		if unsubscribe != nil || !s.OffersSubscriptions() || r.foreign(srv, userID, threadID, uri) {
			return nil
		}
		u, err := s.Subscribe(ctx, uri, updated)
		var rpc *mcpflow.RPCError
		if errors.As(err, &rpc) && notFound(rpc) {
			return nil // not this server's
		}
		if err != nil {
			return &stop{err}
		}
		unsubscribe = u
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case unsubscribe == nil:
		return nil, mcpflow.UnknownResource(uri)
	}
	return unsubscribe, nil
}

// listWatcher is one WatchLists: a user's thread, the servers its ctx
// admits, and where the changes go.
type listWatcher struct {
	scope   string // "<user>:<thread>"
	allowed func(server string) bool
	changed func(method string)
}

// WatchLists calls changed with notifications/prompts/list_changed or
// notifications/resources/list_changed each time a server of userID's
// thread (one ctx's server filter admits) says its list changed, until
// stop: a stdio server's process of the thread, and the shared sessions
// of the HTTP servers, which are asked for their list changes (once per
// session). It dials no stdio server: one that is not running has no list
// to change.
func (r *Runtime) WatchLists(ctx context.Context, userID, threadID string, changed func(method string)) (func(), error) {
	servers, fps, err := r.surfaceServers(ctx, userID)
	if err != nil {
		return nil, err
	}
	w := &listWatcher{scope: userID + ":" + threadID, changed: changed,
		allowed: func(server string) bool { return mcpflow.ServerAllowed(ctx, server) }}
	r.listMu.Lock()
	if r.listWatchers == nil {
		r.listWatchers = map[*listWatcher]struct{}{}
	}
	r.listWatchers[w] = struct{}{}
	r.listMu.Unlock()
	for _, srv := range servers {
		if srv.Type == config.TransportStdio {
			continue
		}
		err := r.run(ctx, srv, fps[srv.Name], userID, threadID, func(_ context.Context, s *session.Session, _ *route.Route) error {
			if p, res := s.OffersListChanges(); p || res {
				s.HearLists()
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			r.log.Warn("MCP server's list changes not watched", "server", srv.Name, "error", err)
		}
	}
	return func() {
		r.listMu.Lock()
		delete(r.listWatchers, w)
		r.listMu.Unlock()
	}, nil
}

// watchingLists reports whether a stream listens for list changes.
func (r *Runtime) watchingLists() bool {
	r.listMu.Lock()
	defer r.listMu.Unlock()
	return len(r.listWatchers) > 0
}

// listsChanged hands a server's list change to the watchers of scope (a
// stdio process's "<user>:<thread>", a user's session's "<user>:", or ""
// for a shared session) that may reach the server.
func (r *Runtime) listsChanged(server, scope, method string) {
	r.listMu.Lock()
	var ws []*listWatcher
	for w := range r.listWatchers {
		// "" and "<user>:" are prefixes; "<user>:<thread>" is exact.
		if w.scope == scope || (scope == "" || strings.HasSuffix(scope, ":")) && strings.HasPrefix(w.scope, scope) {
			ws = append(ws, w)
		}
	}
	r.listMu.Unlock()
	for _, w := range ws {
		if w.allowed(server) {
			w.changed(method)
		}
	}
}
