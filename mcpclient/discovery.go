package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
)

// toolState is one published discovery result.
type toolState struct {
	ext     *config.Extensions
	sig     config.Signature // of ExtensionsPath when ext was read (zero if missing)
	slice   string           // fingerprint of the effective MCP slice
	tools   []mcpflow.Tool
	byName  map[string]*toolEntry
	skipped map[string]string // server → reason
	loadErr error             // a hard tool-load error (missing task tools)
	hashed  atomic.Int64      // unix nanos of the last full signature check
	statted atomic.Int64      // unix nanos of the last stat of the file
}

// statEvery throttles the freshness check on the call path: a config edit
// is noticed within this time (and a same-size, same-mtime rewrite within a
// second), without a system call on every tool call.
const statEvery = 250 * time.Millisecond

type toolEntry struct {
	tool    mcpflow.Tool
	server  *config.Server
	toolset *config.TaskToolset // set for a submit wrapper
	drift   string              // set when the server's task configuration changed since start-up
}

type discovery struct {
	done  chan struct{}
	state *toolState
}

// tools returns the current tool state, discovering when there is none or
// when the config's effective MCP slice changed (spec §3.2 [newer]).
func (r *Runtime) tools(ctx context.Context) (*toolState, error) {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, mcpflow.Errorf(mcpflow.EUnavailable, "the MCP runtime is shutting down")
		}
		st := r.state
		if st != nil {
			r.mu.Unlock()
			fresh, err := r.checkFresh(st)
			if err != nil {
				return nil, err
			}
			if fresh {
				if st.loadErr != nil {
					return nil, st.loadErr
				}
				return st, nil
			}
			r.mu.Lock()
			if r.state == st {
				r.retireLocked()
			}
			r.mu.Unlock()
			continue
		}
		d := r.inflight
		if d == nil {
			d = &discovery{done: make(chan struct{})}
			r.inflight = d
			r.mu.Unlock()
			go r.discover(d)
		} else {
			r.mu.Unlock()
		}
		select {
		case <-d.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if d.state.loadErr != nil {
			return nil, d.state.loadErr
		}
		return d.state, nil
	}
}

// retireLocked drops the published state and its sessions.
func (r *Runtime) retireLocked() {
	r.state = nil
	shared := r.shared
	r.shared = map[string]*sharedSession{}
	old := r.swapPoolLocked()
	go func() {
		closeShared(shared)
		_ = old.CloseAll()
	}()
}

// checkFresh compares the config file with what st was built from. A file
// that is missing now (or was missing then and still is) keeps serving the
// last-known-good tools; a changed signature whose effective MCP slice is
// unchanged adopts the new signature and keeps tools and sessions.
func (r *Runtime) checkFresh(st *toolState) (bool, error) {
	path := r.opts.ExtensionsPath
	if path == "" {
		return true, nil
	}
	nowNS := time.Now().UnixNano()
	if nowNS-st.statted.Load() < int64(statEvery) {
		return true, nil
	}
	st.statted.Store(nowNS)
	// A stat is cheap; the full hash runs when mtime or size moved, and
	// otherwise at most once a second, so a same-size same-second swap is
	// still seen within a second without hashing on every call.
	if fi, err := os.Stat(path); err == nil && !st.sig.IsZero() &&
		fi.Size() == st.sig.Size && fi.ModTime().Equal(st.sig.ModTime) &&
		time.Since(time.Unix(0, st.hashed.Load())) < time.Second {
		return true, nil
	}
	sig, err := config.FileSignature(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return true, nil
		}
		return false, nil // present but unreadable: stale
	}
	if !st.sig.IsZero() && sig.Equal(st.sig) {
		st.hashed.Store(time.Now().UnixNano())
		return true, nil
	}
	ext, err := config.LoadExtensions(path, r.opts.Env)
	if err != nil {
		r.log.Error("MCP configuration changed but cannot be loaded; keeping no tools until it is fixed", "path", path, "error", err)
		return false, nil
	}
	if sliceFingerprint(ext) != st.slice {
		r.log.Info("MCP configuration changed; rediscovering tools", "path", path)
		return false, nil
	}
	r.mu.Lock()
	if r.state == st {
		cp := &toolState{ext: ext, sig: sig, slice: st.slice, tools: st.tools, byName: st.byName, skipped: st.skipped, loadErr: st.loadErr}
		cp.hashed.Store(time.Now().UnixNano())
		r.state = cp
	}
	r.mu.Unlock()
	return true, nil
}

// sliceFingerprint hashes the enabled servers' parsed config in
// declaration order plus mcpInterceptors, with the transport alias
// normalized away, so presentation-neutral edits (skills, middlewares) keep
// the cache.
func sliceFingerprint(ext *config.Extensions) string {
	type entry struct {
		Server config.Server
		Extra  json.RawMessage
	}
	var servers []entry
	for _, s := range ext.Servers {
		if !s.Enabled {
			continue
		}
		cp := s
		var extra json.RawMessage
		if s.Extra != nil {
			o := s.Extra.Clone()
			o.Delete("transport")
			extra, _ = o.MarshalJSON()
		}
		cp.Extra = nil
		servers = append(servers, entry{Server: cp, Extra: extra})
	}
	b, err := json.Marshal(struct {
		Servers      []entry
		Interceptors []string
	}{servers, ext.MCPInterceptors})
	if err != nil {
		return "unmarshalable:" + err.Error()
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// discover loads the config if needed, lists every enabled server's tools
// concurrently (each bounded by its session_init_timeout) and publishes the
// result if the config did not change meanwhile.
func (r *Runtime) discover(d *discovery) {
	st := &toolState{byName: map[string]*toolEntry{}, skipped: map[string]string{}}
	defer func() {
		r.mu.Lock()
		if r.inflight == d {
			r.inflight = nil
		}
		if !r.closed {
			r.state = st
		}
		r.mu.Unlock()
		d.state = st
		close(d.done)
	}()

	r.mu.Lock()
	ext, sig := r.opts.Initial, config.Signature{}
	if r.opts.ExtensionsPath != "" {
		r.opts.Initial = nil // used once
	}
	r.mu.Unlock()
	if r.opts.ExtensionsPath != "" && ext == nil {
		s, err := config.FileSignature(r.opts.ExtensionsPath)
		if err == nil {
			sig = s
		}
		loaded, err := config.LoadExtensions(r.opts.ExtensionsPath, r.opts.Env)
		switch {
		case err == nil:
			ext = loaded
		case errors.Is(err, os.ErrNotExist):
			ext = nil
		default:
			r.log.Error("cannot load the MCP configuration; serving no MCP tools", "path", r.opts.ExtensionsPath, "error", err)
			ext = nil
		}
	}
	// With the start-up configuration the signature stays zero: that
	// configuration was read before this runtime existed, and the file may
	// have changed since. The first freshness check then reads the file
	// once and compares the MCP slice.
	if ext == nil {
		ext = &config.Extensions{}
	}
	st.ext, st.sig, st.slice = ext, sig, sliceFingerprint(ext)
	st.hashed.Store(time.Now().UnixNano())

	type found struct {
		tools []mcp.Tool
		err   error
	}
	results := make([]found, len(ext.Servers))
	var wg sync.WaitGroup
	for i := range ext.Servers {
		srv := &ext.Servers[i]
		if !srv.Enabled {
			continue
		}
		if err := srv.ConnectionProblem(); err != nil {
			st.skipped[srv.Name] = err.Error()
			r.log.Warn("skipping MCP server", "server", srv.Name, "reason", err.Error())
			continue
		}
		if srv.Type == config.TransportStdio {
			if srv.UserAuth != nil && srv.UserAuth.Enabled {
				r.log.Warn("user_auth applies to sse/http MCP servers only; ignoring it for this stdio server", "server", srv.Name)
			}
			if srv.HeadersFromContext != nil && srv.HeadersFromContext.Enabled {
				r.log.Warn("headers_from_context applies to sse/http MCP servers only; ignoring it for this stdio server", "server", srv.Name)
			}
		}
		wg.Add(1)
		go func(i int, srv *config.Server) {
			defer wg.Done()
			tools, err := r.discoverServer(srv)
			results[i] = found{tools, err}
		}(i, srv)
	}
	wg.Wait()

	drifted, driftMsg := r.taskDrift(ext)
	if driftMsg != "" {
		r.log.Error(driftMsg)
	}
	for i := range ext.Servers {
		srv := &ext.Servers[i]
		if !srv.Enabled || st.skipped[srv.Name] != "" {
			continue
		}
		res := results[i]
		if res.err != nil {
			var reason string
			if mcpflow.ErrorCode(res.err) == mcpflow.ETimeout {
				d, _ := srv.SessionInitTimeoutDuration()
				reason = fmt.Sprintf("Skipping MCP server '%s' after tool discovery timed out (%.1fs)", srv.Name, d.Seconds())
			} else {
				reason = fmt.Sprintf("Skipping MCP server '%s' after tool discovery failed: %s", srv.Name, mcpflow.ErrorMessage(res.err))
			}
			st.skipped[srv.Name] = reason
			r.log.Warn(reason, "server", srv.Name, "error", res.err)
			continue
		}
		if err := r.addServerTools(st, srv, res.tools); err != nil {
			st.loadErr = err
			r.log.Error("MCP tool loading failed", "server", srv.Name, "error", err)
		}
		if drifted[srv.Name] {
			for _, e := range st.byName {
				if e.server == srv {
					e.drift = driftMsg
				}
			}
		}
	}
}

// taskDrift compares the task servers of ext with those frozen at start-up
// (spec §4.6) and returns the servers whose tools must fail, with the
// restart error. Presentation fields (description, routing, tools,
// tool_name_prefix) may change freely; servers without task toolsets and
// servers disabled both times are not task servers.
func (r *Runtime) taskDrift(ext *config.Extensions) (map[string]bool, string) {
	frozen := r.opts.FrozenTaskServers
	if frozen == nil {
		return nil, ""
	}
	current := map[string]*config.Server{}
	for i := range ext.Servers {
		if s := &ext.Servers[i]; s.Enabled && len(s.TaskToolsets) > 0 {
			current[s.Name] = s
		}
	}
	drifted := map[string]bool{}
	for name, s := range current {
		f, ok := frozen[name]
		if !ok || taskServerFingerprint(*s) != taskServerFingerprint(f) {
			drifted[name] = true
		}
	}
	for name := range frozen {
		if _, ok := current[name]; !ok {
			drifted[name] = true
		}
	}
	interceptors := len(frozen) > 0 && !slices.Equal(ext.MCPInterceptors, r.opts.FrozenInterceptors)
	if len(drifted) == 0 && !interceptors {
		return nil, ""
	}
	names := slices.Sorted(maps.Keys(drifted))
	if interceptors {
		for name := range current {
			drifted[name] = true
		}
		names = append(names, "mcpInterceptors")
	}
	return drifted, fmt.Sprintf("MCP task-enabled server configuration changed after mcpflow startup (%s); restart mcpflow before using durable task tools", strings.Join(names, ", "))
}

// taskServerFingerprint identifies the runtime configuration of a task
// server: everything but the presentation fields, with the transport alias
// normalized away, and empty lists and maps counted as absent (the admin
// API writes them out).
func taskServerFingerprint(s config.Server) string {
	s.Description, s.Routing, s.Tools, s.ToolNamePrefix = "", config.Routing{}, nil, false
	var extra json.RawMessage
	if s.Extra != nil {
		o := s.Extra.Clone()
		o.Delete("transport")
		extra, _ = o.MarshalJSON()
	}
	s.Extra = nil
	b, _ := json.Marshal(struct {
		S     config.Server
		Extra json.RawMessage
	}{s, extra})
	var v any
	if json.Unmarshal(b, &v) == nil {
		b, _ = json.Marshal(pruneEmpty(v))
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// pruneEmpty drops nulls, empty objects and empty lists from a decoded JSON
// value (json.Marshal then sorts object keys).
func pruneEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e = pruneEmpty(e); e == nil {
				delete(x, k)
			} else {
				x[k] = e
			}
		}
		if len(x) == 0 {
			return nil
		}
	case []any:
		if len(x) == 0 {
			return nil
		}
		for i, e := range x {
			x[i] = pruneEmpty(e)
		}
	}
	return v
}

var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// addServerTools applies prefixing, name validation, routing and the task
// toolset rules (submit wrapped, status and cancel hidden) to one server's
// tools.
func (r *Runtime) addServerTools(st *toolState, srv *config.Server, tools []mcp.Tool) error {
	raw := map[string]bool{}
	for _, t := range tools {
		raw[t.Name] = true
	}
	submit := map[string]*config.TaskToolset{}
	hidden := map[string]bool{}
	var missing []string
	for i := range srv.TaskToolsets {
		ts := &srv.TaskToolsets[i]
		for _, n := range []string{ts.SubmitTool, ts.StatusTool, ts.CancelTool} {
			if !raw[n] {
				missing = append(missing, n)
			}
		}
		submit[ts.SubmitTool] = ts
		hidden[ts.StatusTool] = true
		hidden[ts.CancelTool] = true
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return mcpflow.Errorf(mcpflow.EUnavailable, "MCP server '%s' task_toolsets reference missing raw tool(s): %s", srv.Name, strings.Join(missing, ", "))
	}
	for _, t := range tools {
		if hidden[t.Name] {
			continue
		}
		name := t.Name
		if srv.ToolNamePrefix {
			name = srv.Name + "_" + t.Name
		}
		if !toolNamePattern.MatchString(name) {
			r.log.Warn("dropping MCP tool with an invalid name", "server", srv.Name, "tool", t.Name)
			continue
		}
		if prev, dup := st.byName[name]; dup {
			r.log.Warn("dropping MCP tool whose visible name is already taken", "server", srv.Name, "tool", t.Name, "taken_by", prev.tool.Server)
			continue
		}
		schema, err := json.Marshal(t.InputSchema)
		if t.RawInputSchema != nil {
			schema, err = t.RawInputSchema, nil
		}
		if err != nil || len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		tool := mcpflow.Tool{
			Name: name, Description: t.Description, InputSchema: schema,
			Server: srv.Name, OriginalName: t.Name,
		}
		if rt := srv.EffectiveRouting(t.Name); rt.Mode != "" && rt.Mode != config.RoutingOff {
			tool.Routing = &mcpflow.Routing{Mode: rt.Mode, Priority: rt.Priority, Keywords: append([]string{}, rt.Keywords...)}
		}
		entry := &toolEntry{server: srv}
		if ts := submit[t.Name]; ts != nil {
			n := ts.Name
			tool.TaskToolset = &n
			tool.Description = submitDescription(t.Description, ts.Name)
			entry.toolset = ts
		}
		entry.tool = tool
		st.byName[name] = entry
		st.tools = append(st.tools, tool)
	}
	return nil
}

// submitDescription appends the durable-task sentence of spec §2.9.
func submitDescription(orig, name string) string {
	s := fmt.Sprintf("Submitted as durable background task '%s'; returns an mcpflow task ID immediately and status polling is handled automatically.", name)
	if strings.TrimSpace(orig) == "" {
		return s
	}
	return orig + "\n\n" + s
}

// discoverServer lists one server's tools: stdio through a short-lived
// process in a discovery directory, SSE/HTTP through the shared session.
func (r *Runtime) discoverServer(srv *config.Server) ([]mcp.Tool, error) {
	ctx := context.Background()
	if d, ok := srv.SessionInitTimeoutDuration(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if srv.Type == config.TransportStdio {
		dir, env, err := r.discoveryDir()
		if err != nil {
			return nil, err
		}
		sess, err := Dial(ctx, srv, DialOptions{Dir: dir, Env: env, Logger: r.log})
		if err != nil {
			return nil, err
		}
		defer sess.Close()
		return r.listWithin(ctx, srv, sess)
	}
	sess, err := r.sharedSession(ctx, srv)
	if err != nil {
		return nil, err
	}
	tools, err := r.listWithin(ctx, srv, sess)
	if err != nil && sharedBroken(err) {
		r.dropShared(srv.Name, sess)
	}
	return tools, err
}

func (r *Runtime) listWithin(ctx context.Context, srv *config.Server, sess *Session) ([]mcp.Tool, error) {
	tools, err := sess.ListTools(ctx)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		d, _ := srv.SessionInitTimeoutDuration()
		return nil, mcpflow.Errorf(mcpflow.ETimeout, "MCP tool discovery for server '%s' timed out after %.1fs", srv.Name, d.Seconds())
	}
	return tools, err
}

func (r *Runtime) discoveryDir() (string, map[string]string, error) {
	root := r.opts.WorkspaceRoot
	if root == "" {
		root = os.TempDir()
	}
	dir := filepath.Join(root, ".discovery")
	tmp := filepath.Join(dir, ".mcp", "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return "", nil, fmt.Errorf("create discovery directory: %w", err)
	}
	return dir, map[string]string{"TMPDIR": tmp, "TMP": tmp, "TEMP": tmp}, nil
}
