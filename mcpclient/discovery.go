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
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// toolState is one published discovery result. It is not changed once
// published: a retry that brings a server back publishes a new one.
type toolState struct {
	ext      *config.Extensions
	sig      config.Signature  // of ExtensionsPath when ext was read (zero if missing)
	slice    string            // fingerprint of the effective MCP slice
	fps      map[string]string // enabled server → connFingerprint
	raw      map[string][]mcp.Tool
	down     map[string]*serverRetry // servers whose discovery failed: retried
	drifted  map[string]bool         // task servers changed since start-up
	driftMsg string
	native   bool // assembled with a task submitter: native MCP task tools are durable
	tools    []mcpflow.Tool
	byName   map[string]*toolEntry
	skipped  map[string]string // server → why it cannot be used as configured (not retried)
	// perCaller are the enabled servers whose credential is exchanged per
	// caller, in configuration order: discovered per user (caller_tools.go);
	// in a user's view, callerDown holds those whose listing failed for
	// that user, and why.
	perCaller  []string
	callerDown map[string]*callerList
	loadErr    error        // a hard tool-load error (missing task tools)
	hashed     atomic.Int64 // unix nanos of the last full signature check
	statted    atomic.Int64 // unix nanos of the last stat of the file
}

// clone returns a copy of st to publish with changes; maps are shared, so
// the caller replaces (never edits) those it changes.
func (st *toolState) clone() *toolState {
	cp := &toolState{ext: st.ext, sig: st.sig, slice: st.slice, fps: st.fps, raw: st.raw, down: st.down,
		drifted: st.drifted, driftMsg: st.driftMsg, native: st.native, tools: st.tools, byName: st.byName, skipped: st.skipped, loadErr: st.loadErr,
		perCaller: st.perCaller, callerDown: st.callerDown}
	cp.hashed.Store(st.hashed.Load())
	cp.statted.Store(st.statted.Load())
	return cp
}

// statEvery throttles the freshness check on the call path: a config edit
// is noticed within this time (and a same-size, same-mtime rewrite within a
// second), without a system call on every tool call.
const statEvery = 250 * time.Millisecond

type toolEntry struct {
	tool    mcpflow.Tool
	server  *config.Server
	config  string              // connFingerprint of server
	toolset *config.TaskToolset // set for a submit wrapper, and for a native MCP task tool (Native) while tasks run
	drift   string              // set when the server's task configuration changed since start-up
	// needsTasks is set for a tool whose taskSupport is "required" while
	// no task submitter is installed: calling it plainly would fail
	// upstream, so the call answers this tool error.
	needsTasks string
}

type discovery struct {
	gen   uint64 // Runtime.gen when it started: a reset since makes it obsolete
	done  chan struct{}
	state *toolState
}

// startDiscoveryLocked starts a discovery of the current configuration.
func (r *Runtime) startDiscoveryLocked() *discovery {
	d := &discovery{gen: r.gen, done: make(chan struct{})}
	r.inflight = d
	r.bg.Add(1)
	go r.discover(d)
	return d
}

// tools returns the current tool state, discovering when there is none or
// when the config's effective MCP slice changed (spec §3.2 [newer]).
func (r *Runtime) tools(ctx context.Context) (*toolState, error) {
	st, err := r.current(ctx)
	if err == nil && st.loadErr != nil {
		return nil, st.loadErr
	}
	return st, err
}

// current is tools, whose state may hold a tool-load error.
func (r *Runtime) current(ctx context.Context) (*toolState, error) {
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
				return st, nil
			}
			// Rediscover; sessions of the servers whose configuration
			// changed are retired by the discovery, the others kept.
			r.mu.Lock()
			if r.state == st {
				r.state = nil
			}
			r.mu.Unlock()
			continue
		}
		d := r.inflight
		if d == nil {
			d = r.startDiscoveryLocked()
		}
		r.mu.Unlock()
		select {
		case <-d.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return d.state, nil
	}
}

// checkFresh compares the config file with what st was built from. A file
// that is missing now (or was missing then and still is) keeps serving the
// last-known-good tools, and so does a file that cannot be loaded (an edit
// in progress, a typo: logged once per version of the file); a changed
// signature whose effective MCP slice is unchanged adopts the new
// signature and keeps tools and sessions.
func (r *Runtime) checkFresh(st *toolState) (bool, error) {
	path := r.opts.ExtensionsPath
	if path == "" {
		return true, nil
	}
	nowNS := r.opts.now().UnixNano()
	if nowNS-st.statted.Load() < int64(statEvery) {
		return true, nil
	}
	st.statted.Store(nowNS)
	// A stat is cheap; the full hash runs when mtime or size moved, and
	// otherwise at most once a second, so a same-size same-second swap is
	// still seen within a second without hashing on every call.
	if fi, err := os.Stat(path); err == nil && !st.sig.IsZero() &&
		fi.Size() == st.sig.Size && fi.ModTime().Equal(st.sig.ModTime) &&
		nowNS-st.hashed.Load() < int64(time.Second) {
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
		st.hashed.Store(r.opts.now().UnixNano())
		return true, nil
	}
	ext, err := config.LoadExtensions(path, r.opts.Env)
	if err != nil {
		r.log.Error("MCP configuration changed but cannot be loaded; keeping the last good tools and sessions until it is fixed", "path", path, "error", err)
		ext = st.ext // this version of the file is not read again
	} else if sliceFingerprint(ext) != st.slice {
		r.log.Info("MCP configuration changed; rediscovering tools", "path", path)
		return false, nil
	}
	r.mu.Lock()
	if cur := r.state; cur != nil && cur.slice == st.slice {
		cp := cur.clone()
		cp.ext, cp.sig = ext, sig
		cp.hashed.Store(r.opts.now().UnixNano())
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

// connFingerprint identifies what a session of s is started with: every
// setting but the presentation fields (description, routing, tools,
// tool_name_prefix), task_toolsets and unknown keys, with empty lists and
// maps counted as absent. Sessions of a server whose fingerprint did not
// change survive a configuration change.
func connFingerprint(s config.Server) string {
	s.Enabled = true
	s.Description, s.Routing, s.Tools, s.ToolNamePrefix = "", config.Routing{}, nil, false
	s.TaskToolsets, s.Extra = nil, nil
	b, _ := json.Marshal(s)
	var v any
	if json.Unmarshal(b, &v) == nil {
		b, _ = json.Marshal(pruneEmpty(v))
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// discover loads the config if needed, retires the sessions of servers
// whose connection settings changed, lists every enabled server's tools
// concurrently (each bounded by its session_init_timeout, or by
// DiscoveryTimeout when that is null) and publishes the result. Servers
// whose discovery failed are published as down and retried later. Servers
// whose credential is exchanged per caller are not contacted: they are
// listed per signed-in user (toolsFor).
func (r *Runtime) discover(d *discovery) {
	defer r.bg.Done()
	st := &toolState{byName: map[string]*toolEntry{}, skipped: map[string]string{},
		fps: map[string]string{}, raw: map[string][]mcp.Tool{}, down: map[string]*serverRetry{}}
	defer func() {
		r.mu.Lock()
		if r.inflight == d {
			r.inflight = nil
		}
		if !r.closed && d.gen == r.gen {
			if native := r.submitter != nil; st.native != native {
				// SetSubmitter ran while this discovery assembled.
				st.native = native
				r.assemble(st)
			}
			r.state = st
		}
		r.mu.Unlock()
		d.state = st
		close(d.done)
	}()

	ext, sig := r.loadExtensions()
	st.ext, st.sig, st.slice = ext, sig, sliceFingerprint(ext)
	st.hashed.Store(r.opts.now().UnixNano())
	for i := range ext.Servers {
		if srv := &ext.Servers[i]; srv.Enabled {
			st.fps[srv.Name] = connFingerprint(*srv)
		}
	}
	r.mu.Lock()
	if d.gen == r.gen && !r.closed { // an obsolete discovery retires nothing
		r.lastExt = ext
		r.pool.Retire(st.fps)
		r.retireStaleSharedLocked(st.fps)
	}
	r.mu.Unlock()

	results := r.listServers(st, ext)

	st.drifted, st.driftMsg = r.taskDrift(ext)
	if st.driftMsg != "" {
		r.log.Error(st.driftMsg)
	}
	r.mu.Lock()
	r.recordListings(st, ext, results)
	st.native = r.submitter != nil
	r.mu.Unlock()
	r.assemble(st)
}

// loadExtensions returns the configuration a discovery publishes: the
// start-up one once, else the file's (with its signature), the last good
// one while the file cannot be loaded, or none.
func (r *Runtime) loadExtensions() (*config.Extensions, config.Signature) {
	r.mu.Lock()
	ext, sig := r.opts.Initial, config.Signature{}
	if r.opts.ExtensionsPath != "" {
		r.opts.Initial = nil // used once
	}
	last := r.lastExt
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
		case last != nil:
			r.log.Error("MCP configuration cannot be loaded; keeping the last good configuration until it is fixed", "path", r.opts.ExtensionsPath, "error", err)
			ext = last
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
	return ext, sig
}

// listed is one server's listing by a discovery.
type listed struct {
	tools []mcp.Tool
	err   error
}

// listServers lists the tools of ext's enabled servers concurrently, by
// index, recording in st the servers it skips (a connection problem) and
// those listed per caller instead.
func (r *Runtime) listServers(st *toolState, ext *config.Extensions) []listed {
	results := make([]listed, len(ext.Servers))
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
		if perCaller(srv) {
			// Listed per signed-in user, with that user's token.
			st.perCaller = append(st.perCaller, srv.Name)
			continue
		}
		wg.Add(1)
		go func(i int, srv *config.Server) {
			defer wg.Done()
			tools, err := r.discoverServer(srv)
			results[i] = listed{tools, err}
		}(i, srv)
	}
	wg.Wait()
	return results
}

// recordListings records in st the listings of a discovery, or the retry
// of each server whose listing failed. r.mu is held.
func (r *Runtime) recordListings(st *toolState, ext *config.Extensions, results []listed) {
	now := time.Now()
	for i := range ext.Servers {
		srv := &ext.Servers[i]
		if !srv.Enabled || st.skipped[srv.Name] != "" || st.isPerCaller(srv.Name) {
			continue
		}
		res := results[i]
		if res.err != nil {
			sr := &serverRetry{srv: srv, attempts: 1, next: now.Add(r.backoff(1)), cause: r.discoveryCause(srv, res.err)}
			st.down[srv.Name] = sr
			reason := "Skipping MCP server '" + srv.Name + "' after " + sr.cause
			r.log.Warn(reason, "server", srv.Name, "error", withoutURL(res.err), "retry_in", r.backoff(1))
			continue
		}
		st.raw[srv.Name] = res.tools
		r.known[srv.Name] = toolNames(res.tools)
	}
}

// assemble builds the tools of st from the raw tools of its available
// servers, in configuration order.
func (r *Runtime) assemble(st *toolState) {
	st.tools, st.byName, st.loadErr = nil, map[string]*toolEntry{}, nil
	for i := range st.ext.Servers {
		srv := &st.ext.Servers[i]
		tools, ok := st.raw[srv.Name]
		if !ok {
			continue
		}
		if err := r.addServerTools(st, srv, tools); err != nil {
			st.loadErr = err
			r.log.Error("MCP tool loading failed", "server", srv.Name, "error", err)
		}
		if st.drifted[srv.Name] {
			for _, e := range st.byName {
				if e.server == srv {
					e.drift = st.driftMsg
				}
			}
		}
	}
}

func toolNames(tools []mcp.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// taskDrift compares the task servers of ext with those frozen at start-up
// (spec §4.6) and returns the servers whose tools must fail, with the
// restart error. Presentation fields (description, routing, tools,
// tool_name_prefix) may change freely; servers without task toolsets or
// native_tasks, and servers disabled both times, are not task servers.
func (r *Runtime) taskDrift(ext *config.Extensions) (map[string]bool, string) {
	frozen := r.opts.FrozenTaskServers
	if frozen == nil {
		return nil, ""
	}
	current := map[string]*config.Server{}
	for i := range ext.Servers {
		if s := &ext.Servers[i]; IsTaskServer(s) {
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

// IsTaskServer reports whether srv is a task server, frozen at start-up
// (spec §4.6): enabled, with task_toolsets or native_tasks. A server whose
// only durable tools are native tools with taskSupport "required" is not
// one.
func IsTaskServer(srv *config.Server) bool {
	return srv.Enabled && (len(srv.TaskToolsets) > 0 || srv.NativeTasks)
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

// addServerTools applies prefixing, name validation, routing, the task
// toolset rules (submit wrapped, status, cancel and input hidden) and the native
// MCP task rules (nativeToolMode) to one server's tools.
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
		for _, n := range ts.Tools() {
			if !raw[n] {
				missing = append(missing, n)
			}
		}
		submit[ts.SubmitTool] = ts
		for _, n := range ts.HiddenTools() {
			hidden[n] = true
		}
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
		tool := visibleTool(srv, t, name)
		entry := &toolEntry{server: srv, config: st.fps[srv.Name]}
		if ts := submit[t.Name]; ts != nil {
			n := ts.Name
			tool.TaskToolset = &n
			tool.Description = submitDescription(t.Description, ts.Name)
			entry.toolset = ts
		} else if durable, required := nativeToolMode(srv, t); durable && st.native {
			n := t.Name
			tool.TaskToolset = &n
			tool.Description = submitDescription(t.Description, t.Name)
			entry.toolset = &config.TaskToolset{Name: t.Name, SubmitTool: t.Name, Native: true}
		} else if required {
			entry.needsTasks = fmt.Sprintf("MCP tool '%s' of server '%s' runs only as a task (execution.taskSupport \"required\"): enable mcpflow's durable tasks (mcp_tasks.enabled=true, with a running worker) to use it.", t.Name, srv.Name)
		}
		entry.tool = tool
		st.byName[name] = entry
		st.tools = append(st.tools, tool)
	}
	return nil
}

// visibleTool is the listing of srv's tool t under its visible name.
func visibleTool(srv *config.Server, t mcp.Tool, name string) mcpflow.Tool {
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
		Title: t.Title, OutputSchema: t.RawOutputSchema,
		Annotations: session.NonEmptyJSON(t.Annotations), Meta: session.NonEmptyJSON(t.Meta),
	}
	if len(t.Icons) > 0 {
		tool.Icons = session.NonEmptyJSON(t.Icons)
	}
	if t.Execution != nil {
		tool.Execution = session.NonEmptyJSON(t.Execution)
	}
	if rt := srv.EffectiveRouting(t.Name); rt.Mode != "" && rt.Mode != config.RoutingOff {
		tool.Routing = &mcpflow.Routing{Mode: rt.Mode, Priority: rt.Priority, Keywords: append([]string{}, rt.Keywords...)}
	}
	return tool
}

// nativeToolMode reports whether t runs as a durable native MCP task while the
// task runtime runs: its execution.taskSupport is "required", or
// "optional" on a server with native_tasks. required reports the former.
func nativeToolMode(srv *config.Server, t mcp.Tool) (durable, required bool) {
	if t.Execution == nil {
		return false, false
	}
	switch t.Execution.TaskSupport {
	case mcp.TaskSupportRequired:
		return true, true
	case mcp.TaskSupportOptional:
		return srv.NativeTasks, false
	}
	return false, false
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
// It is bounded by discoveryBound and ends at Close.
func (r *Runtime) discoverServer(srv *config.Server) ([]mcp.Tool, error) {
	bound := r.discoveryBound(srv)
	ctx, cancel := context.WithTimeout(r.ctx, bound)
	defer cancel()
	tools, err := r.listServer(ctx, srv)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, &mcpflow.Error{Code: mcpflow.ETimeout, Err: err,
			Message: fmt.Sprintf("MCP tool discovery for server '%s' timed out after %.1fs", srv.Name, bound.Seconds())}
	}
	return tools, err
}

func (r *Runtime) listServer(ctx context.Context, srv *config.Server) ([]mcp.Tool, error) {
	if srv.Type == config.TransportStdio {
		dir, env, err := r.discoveryDir()
		if err != nil {
			return nil, err
		}
		sess, err := r.dial(ctx, srv, connFingerprint(*srv), session.DialOptions{Dir: dir, Env: env, Logger: r.log, Questions: r.questions})
		if err != nil {
			return nil, err
		}
		defer sess.Close()
		return sess.ListTools(ctx)
	}
	s, err := r.acquireShared(ctx, srv, connFingerprint(*srv), "", nil, false)
	if err != nil {
		return nil, err
	}
	defer r.releaseShared(s)
	tools, err := s.sess.ListTools(ctx)
	if err != nil && sharedBroken(err) {
		r.dropShared(s)
	}
	return tools, err
}

// discoveryBound is how long the discovery of srv may take: its
// session_init_timeout, or DiscoveryTimeout when that is null.
func (r *Runtime) discoveryBound(srv *config.Server) time.Duration {
	if d, ok := srv.SessionInitTimeoutDuration(); ok {
		return d
	}
	return r.opts.DiscoveryTimeout
}

// discoveryCause says why the discovery of srv failed, for the listing, the
// log and the EUnavailable of its calls: domain messages only, which never
// hold a header, environment or URL value.
func (r *Runtime) discoveryCause(srv *config.Server, err error) string {
	if mcpflow.ErrorCode(err) == mcpflow.ETimeout {
		return fmt.Sprintf("tool discovery timed out (%.1fs)", r.discoveryBound(srv).Seconds())
	}
	return "tool discovery failed: " + mcpflow.ErrorMessage(err)
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
