package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// generous bounds a wait that normally takes well under a second; it is
// never a performance assertion.
const generous = 30 * time.Second

// demoBinary builds internal/testsupport/demomcp/cmd/demo-mcp once per test process.
func demoBinary(t *testing.T) string {
	t.Helper()
	return testenv.Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp")
}

// startDemoHTTP runs the demo server over "sse" or "http" on 127.0.0.1 with
// its own write_file directory and returns its MCP endpoint URL and a stop
// function (also run at cleanup). kill stops it with SIGKILL instead of
// SIGTERM.
func startDemoHTTP(t *testing.T, transport string) (url string, stop func(kill bool)) {
	t.Helper()
	return startDemoHTTPAt(t, transport, "127.0.0.1:0")
}

// startDemoHTTPAt is startDemoHTTP listening on addr.
func startDemoHTTPAt(t *testing.T, transport, addr string) (url string, stop func(kill bool)) {
	t.Helper()
	out := &testenv.SyncBuffer{}
	cmd := exec.Command(demoBinary(t), "--transport", transport, "--addr", addr, "--workdir", t.TempDir())
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	var once sync.Once
	stop = func(kill bool) {
		once.Do(func() {
			if kill {
				_ = cmd.Process.Kill()
			} else {
				_ = cmd.Process.Signal(syscall.SIGTERM)
			}
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(func() { stop(false) })
	var base string
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(out.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, demomcp.ListeningPrefix); ok {
				base = strings.TrimSpace(rest)
				return true
			}
		}
		return false
	}, generous, 20*time.Millisecond, "demo-mcp --transport %s did not start: %s", transport, out)
	require.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), base)
	if transport == "sse" {
		return base + demomcp.SSEPath, stop
	}
	return base + demomcp.StreamableHTTPPath, stop
}

// startNamedToolsServer serves an in-process mcp-go server over streamable
// HTTP on 127.0.0.1 whose tools have the given names; each answers
// "called <name>".
func startNamedToolsServer(t *testing.T, names ...string) string {
	t.Helper()
	s := server.NewMCPServer("names", "1.0.0", server.WithToolCapabilities(false))
	for _, n := range names {
		s.AddTool(mcp.NewTool(n, mcp.WithDescription("tool "+n)), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("called " + n), nil
		})
	}
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL + "/mcp"
}

// rtBundle is what a runtime test works with.
type rtBundle struct {
	rt    *mcpclient.Runtime
	path  string // extensions_config.json
	root  string // workspace.root
	logs  *testenv.SyncBuffer
	clock *testClock // the runtime's freshness-check clock
}

// testClock is time.Now moved on by what a test added.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// doc is an extensions_config.json document.
type doc = map[string]any

// newRuntime writes cfg (nil: no file) and returns a runtime reading it;
// opts adjust the runtime's options.
func newRuntime(t *testing.T, cfg doc, opts ...func(*mcpclient.Options)) *rtBundle {
	t.Helper()
	dir := t.TempDir()
	b := &rtBundle{
		path:  filepath.Join(dir, "extensions_config.json"),
		root:  filepath.Join(dir, "workspace"),
		logs:  &testenv.SyncBuffer{},
		clock: &testClock{},
	}
	if cfg != nil {
		b.write(t, cfg)
	}
	o := mcpclient.Options{
		ExtensionsPath: b.path,
		WorkspaceRoot:  b.root,
		Logger:         slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	mcpclient.WithClock(b.clock.now)(&o)
	for _, f := range opts {
		f(&o)
	}
	b.rt = mcpclient.NewRuntime(o)
	t.Cleanup(func() { _ = b.rt.Close() })
	return b
}

// write replaces the config file atomically.
func (b *rtBundle) write(t *testing.T, cfg doc) {
	t.Helper()
	data, err := json.MarshalIndent(cfg, "", "  ")
	require.NoError(t, err)
	b.writeRaw(t, data)
}

func (b *rtBundle) writeRaw(t *testing.T, data []byte) {
	t.Helper()
	tmp := b.path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, b.path))
}

func (b *rtBundle) list(t *testing.T) []mcpflow.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	tools, err := b.rt.ListTools(ctx, "alice", "t1")
	require.NoError(t, err)
	return tools
}

// tryList is list for use inside require.Eventually: nil on error (a
// non-nil empty map when there are no tools).
func (b *rtBundle) tryList() map[string]mcpflow.Tool {
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	tools, err := b.rt.ListTools(ctx, "alice", "t1")
	if err != nil {
		return nil
	}
	return byName(tools)
}

// settle moves the runtime's clock past the throttles of its freshness
// check (a stat at most every 250 ms, statEvery, and a full re-hash of an
// unchanged-looking file at most every second), so the next use of the
// runtime reads the config file: for edits that must not change anything
// visible, and edits whose effect must show on the very next call.
func (b *rtBundle) settle() { b.clock.offset.Add(int64(2 * time.Second)) }

func (b *rtBundle) callAs(t *testing.T, user, thread, tool string, args map[string]any) *mcpflow.ToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	res, err := b.rt.CallTool(ctx, mcpflow.ToolCall{UserID: user, ThreadID: thread, Tool: tool, Arguments: args})
	require.NoError(t, err, "call %s", tool)
	require.NotNil(t, res)
	return res
}

func (b *rtBundle) call(t *testing.T, tool string, args map[string]any) *mcpflow.ToolResult {
	t.Helper()
	return b.callAs(t, "alice", "t1", tool, args)
}

// threadWorkspace is where alice's thread t1 runs stdio servers.
func (b *rtBundle) threadWorkspace(user, thread string) string {
	return filepath.Join(b.root, "users", user, "threads", thread, "user-data", "workspace")
}

func byName(tools []mcpflow.Tool) map[string]mcpflow.Tool {
	m := map[string]mcpflow.Tool{}
	for _, tl := range tools {
		m[tl.Name] = tl
	}
	return m
}

func names(tools []mcpflow.Tool) []string {
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

// block is one decoded content block.
type block struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	URI      string `json:"uri"`
	Name     string `json:"name"`
	MIMEType string `json:"mimeType"`
}

func blocks(t *testing.T, res *mcpflow.ToolResult) []block {
	t.Helper()
	var out []block
	for _, raw := range res.Content {
		var b block
		require.NoError(t, json.Unmarshal(raw, &b), string(raw))
		out = append(out, b)
	}
	return out
}

// text is the only text block of res.
func text(t *testing.T, res *mcpflow.ToolResult) string {
	t.Helper()
	bs := blocks(t, res)
	require.Len(t, bs, 1, "content: %+v", bs)
	require.Equal(t, "text", bs[0].Type)
	return bs[0].Text
}

// stdioDemo is a stdio server entry running the demo binary.
func stdioDemo(t *testing.T, extra doc) doc {
	s := doc{"type": "stdio", "command": demoBinary(t)}
	maps.Copy(s, extra)
	return s
}

// sessionPID returns the PID of the pooled stdio session of server for
// (user, thread); it fails when there is none.
func (b *rtBundle) sessionPID(t *testing.T, server, user, thread string) int {
	t.Helper()
	none := func(context.Context) (*session.Session, error) { return nil, errors.New("no pooled session") }
	sess, err := b.rt.Pool().Session(context.Background(), session.PoolKey{Server: server, Scope: user + ":" + thread}, none)
	require.NoError(t, err)
	require.NotZero(t, sess.PID())
	return sess.PID()
}

// alive reports whether pid runs (a zombie counts as dead).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, mcpflow.ErrorCode(err), "error: %v", err)
}

var demoTools = demomcp.ToolNames

// TestRuntimeDemoTransports runs discovery, prefixing and calls with text,
// structured content, resource links and errors against the demo server
// over stdio, SSE and streamable HTTP.
func TestRuntimeDemoTransports(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "sse", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var srv doc
			if transport == "stdio" {
				srv = stdioDemo(t, nil)
			} else {
				url, _ := startDemoHTTP(t, transport)
				srv = doc{"type": transport, "url": url}
			}
			plain := maps.Clone(srv)
			plain["tool_name_prefix"] = false
			b := newRuntime(t, doc{"mcpServers": doc{"demo": srv, "plain": plain}})

			tools := byName(b.list(t))
			require.Len(t, tools, 2*len(demoTools), "tools: %v", slices.Collect(maps.Keys(tools)))
			for _, raw := range demoTools {
				p, ok := tools["demo_"+raw]
				require.True(t, ok, "demo_%s is listed", raw)
				require.Equal(t, "demo", p.Server)
				require.Equal(t, raw, p.OriginalName)
				u, ok := tools[raw]
				require.True(t, ok, "%s is listed unprefixed", raw)
				require.Equal(t, "plain", u.Server)
				require.Equal(t, raw, u.OriginalName)
				require.JSONEq(t, string(p.InputSchema), string(u.InputSchema))
				require.Nil(t, p.Routing)
				require.Nil(t, p.TaskToolset)
			}
			echo := tools["demo_echo"]
			require.Equal(t, "Echo a message back as text.", echo.Description)
			var schema struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			}
			require.NoError(t, json.Unmarshal(echo.InputSchema, &schema))
			require.Equal(t, "object", schema.Type)
			require.Contains(t, schema.Properties, "message")
			require.Equal(t, []string{"message"}, schema.Required)

			// Text.
			res := b.call(t, "demo_echo", map[string]any{"message": "hello"})
			require.False(t, res.IsError)
			require.Equal(t, "hello", text(t, res))
			require.Nil(t, res.StructuredContent)
			require.Equal(t, "plain", text(t, b.call(t, "echo", map[string]any{"message": "plain"})))

			// Structured content.
			res = b.call(t, "demo_add", map[string]any{"a": 2, "b": 3.5})
			require.False(t, res.IsError)
			require.Equal(t, map[string]any{"sum": json.Number("5.5")}, res.StructuredContent, "numbers exactly as the server wrote them")
			require.Equal(t, "5.5", text(t, res))

			// Resource link: translated to the thread's virtual path on
			// stdio, left alone on SSE/HTTP (no filesystem work there).
			res = b.call(t, "demo_write_file", map[string]any{"name": "note.txt", "content": "hi"})
			require.False(t, res.IsError)
			bs := blocks(t, res)
			require.Len(t, bs, 2)
			require.Equal(t, "resource_link", bs[1].Type)
			require.Equal(t, "note.txt", bs[1].Name)
			require.Equal(t, "text/plain", bs[1].MIMEType)
			if transport == "stdio" {
				require.Equal(t, "/mnt/user-data/workspace/note.txt", bs[1].URI)
				require.Equal(t, "Wrote /mnt/user-data/workspace/note.txt", bs[0].Text)
			} else {
				require.True(t, strings.HasPrefix(bs[1].URI, "file:///"), bs[1].URI)
				require.True(t, strings.HasSuffix(bs[1].URI, "/note.txt"), bs[1].URI)
			}

			// A tool error is a result, not a Go error.
			res = b.call(t, "demo_fail", map[string]any{"message": "boom"})
			require.True(t, res.IsError)
			require.Equal(t, "boom", text(t, res))

			// Unknown tools, including a raw name of a prefixed server.
			for _, name := range []string{"demo_nope", "demo_", "plain_echo"} {
				_, err := b.rt.CallTool(context.Background(), mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: name})
				requireCode(t, err, mcpflow.ENotFound)
			}
			skipped, err := b.rt.Skipped(context.Background())
			require.NoError(t, err)
			require.Empty(t, skipped)
		})
	}
}

// TestRuntimeRoutesByProducingServer pins that a call goes to the server
// that produced the tool, never to one guessed from the name's prefix.
func TestRuntimeRoutesByProducingServer(t *testing.T) {
	t.Parallel()
	b := newRuntime(t, doc{"mcpServers": doc{
		"web":         stdioDemo(t, doc{"env": doc{"WHO": "web"}}),
		"web_scraper": stdioDemo(t, doc{"env": doc{"WHO": "web_scraper"}}),
		"job":         stdioDemo(t, doc{"env": doc{"WHO": "job"}, "tool_name_prefix": false}),
	}})
	tools := byName(b.list(t))
	require.Len(t, tools, 3*len(demoTools))
	require.Equal(t, "web_scraper", tools["web_scraper_env"].Server)
	require.Equal(t, "env", tools["web_scraper_env"].OriginalName)
	require.Equal(t, "web", tools["web_env"].Server)
	require.Equal(t, "job", tools["job_stats"].Server)
	require.Equal(t, "job_stats", tools["job_stats"].OriginalName)

	who := func(tool string) any {
		res := b.call(t, tool, map[string]any{"name": "WHO"})
		require.False(t, res.IsError, "%s: %s", tool, res.Content)
		return res.StructuredContent.(map[string]any)["env"].(map[string]any)["WHO"]
	}
	require.Equal(t, "web", who("web_env"))
	require.Equal(t, "web_scraper", who("web_scraper_env"))
	require.Equal(t, "job", who("env"))

	// An unprefixed server's own tool whose name starts with the server
	// name keeps that name when called (job_stats, not stats).
	res := b.call(t, "job_stats", nil)
	require.False(t, res.IsError, "%s", res.Content)
	require.Contains(t, res.StructuredContent, "submits")
}

// TestRuntimeDropsInvalidToolNames pins the ^[A-Za-z0-9_-]+$ rule on the
// visible name: a bad name is dropped with a warning, its siblings stay.
func TestRuntimeDropsInvalidToolNames(t *testing.T) {
	t.Parallel()
	url := startNamedToolsServer(t, "good", "ok-dash_9", "bad name", "bad<tool>", "dot.tool", "ünïcode", "new\nline")
	b := newRuntime(t, doc{"mcpServers": doc{
		"x": doc{"type": "http", "url": url},
		"y": doc{"type": "http", "url": url, "tool_name_prefix": false},
	}})
	require.Equal(t, []string{"good", "ok-dash_9", "x_good", "x_ok-dash_9"}, names(b.list(t)))
	logs := b.logs.String()
	require.Equal(t, 10, strings.Count(logs, "dropping MCP tool with an invalid name"), "one warning per dropped tool and server: %s", logs)
	require.Contains(t, logs, `tool="bad name"`)
	require.Equal(t, "called good", text(t, b.call(t, "x_good", nil)))
	require.Equal(t, "called ok-dash_9", text(t, b.call(t, "ok-dash_9", nil)))
	_, err := b.rt.CallTool(context.Background(), mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "x_bad name"})
	requireCode(t, err, mcpflow.ENotFound)
}

// TestRuntimeRoutingMetadata pins the effective routing of each tool (the
// server routing with only the fields set in tools.<name>.routing
// overridden) and the rendered hints.
func TestRuntimeRoutingMetadata(t *testing.T) {
	t.Parallel()
	b := newRuntime(t, doc{"mcpServers": doc{
		"demo": stdioDemo(t, doc{
			"routing": doc{"mode": "prefer", "priority": 10, "keywords": []string{"alpha", "beta"}},
			"tools": doc{
				"echo": doc{"routing": doc{"priority": 100}},
				"add":  doc{"routing": doc{"keywords": []string{"sum"}}},
				"fail": doc{"routing": doc{"mode": "off"}},
			},
		}),
		"quiet": stdioDemo(t, doc{
			"tools": doc{
				"env":  doc{"routing": doc{"mode": "prefer", "keywords": []string{"environment <vars>"}}},
				"echo": doc{"routing": doc{"priority": 50, "keywords": []string{"k"}}},
			},
		}),
	}})
	tools := b.list(t)
	m := byName(tools)
	r := func(mode string, prio int, kw ...string) *mcpflow.Routing {
		return &mcpflow.Routing{Mode: mode, Priority: prio, Keywords: kw}
	}
	require.Equal(t, r("prefer", 100, "alpha", "beta"), m["demo_echo"].Routing, "priority overridden, mode and keywords kept")
	require.Equal(t, r("prefer", 10, "sum"), m["demo_add"].Routing, "keywords overridden")
	require.Equal(t, r("prefer", 10, "alpha", "beta"), m["demo_slow"].Routing, "server routing")
	require.Nil(t, m["demo_fail"].Routing, "mode off by override")
	require.Equal(t, r("prefer", 0, "environment <vars>"), m["quiet_env"].Routing, "override turns an off server's tool on")
	require.Nil(t, m["quiet_echo"].Routing, "an override without mode keeps the server's off")
	require.Nil(t, m["quiet_add"].Routing)
	require.JSONEq(t, string(m["quiet_echo"].InputSchema), string(m["demo_echo"].InputSchema), "routing never changes the schema")

	want := "<mcp_routing_hints>\n" +
		"When the user's request involves alpha or beta: prefer the `demo_echo` tool.\n" +
		"When the user's request involves sum: prefer the `demo_add` tool.\n" +
		"When the user's request involves alpha or beta: prefer the `demo_answer_job` tool.\n" +
		"When the user's request involves alpha or beta: prefer the `demo_cancel_job` tool.\n" +
		"When the user's request involves alpha or beta: prefer the `demo_env` tool.\n" +
		"When the user's request involves alpha or beta: prefer the `demo_get_job_status` tool.\n" +
		"When the user's request involves alpha or beta: prefer the `demo_headers` tool.\n" +
		"When the user's request involves alpha or beta: prefer the `demo_job_stats` tool.\n" +
		"When the user's request involves alpha or beta: prefer the `demo_release_answers` tool.\n" +
		"When the user's request involves alpha or beta: prefer the `demo_slow` tool.\n" +
		"When the user's request involves alpha or beta: prefer the `demo_submit_job` tool.\n" +
		"When the user's request involves alpha or beta: prefer the `demo_write_file` tool.\n" +
		"When the user's request involves environment &lt;vars&gt;: prefer the `quiet_env` tool.\n" +
		"</mcp_routing_hints>"
	require.Equal(t, want, b.rt.RoutingHints(tools))
}

// TestRoutingHintsFormat pins the hint text: prefer tools with keywords
// only, priority descending then name, keywords and names HTML-escaped,
// "A", "A or B", "A, B, or C".
func TestRoutingHintsFormat(t *testing.T) {
	t.Parallel()
	tool := func(name, mode string, prio int, kw ...string) mcpflow.Tool {
		return mcpflow.Tool{Name: name, Routing: &mcpflow.Routing{Mode: mode, Priority: prio, Keywords: kw}}
	}
	tools := []mcpflow.Tool{
		tool("b_tool", "prefer", 5, "x"),
		tool("a_tool", "prefer", 5, "x", "y"),
		tool("o'k", "prefer", 1, "four", "five", "six", "seven"),
		tool("top", "prefer", 90, "<script>", "a&b", `"q"`),
		tool("off", "off", 99, "z"),
		tool("nokw", "prefer", 99),
		{Name: "plain"},
	}
	want := "<mcp_routing_hints>\n" +
		"When the user's request involves &lt;script&gt;, a&amp;b, or &quot;q&quot;: prefer the `top` tool.\n" +
		"When the user's request involves x or y: prefer the `a_tool` tool.\n" +
		"When the user's request involves x: prefer the `b_tool` tool.\n" +
		"When the user's request involves four, five, six, or seven: prefer the `o&#x27;k` tool.\n" +
		"</mcp_routing_hints>"
	require.Equal(t, want, mcpclient.RoutingHints(tools))
	slices.Reverse(tools)
	require.Equal(t, want, mcpclient.RoutingHints(tools), "input order does not matter")
	require.Equal(t, "", mcpclient.RoutingHints(nil))
	require.Equal(t, "", mcpclient.RoutingHints(tools[:3]), "no prefer tool with keywords")
}

// TestRuntimeCacheInvalidation walks the content-signature rules of spec
// §3.2 [newer] with one stdio server, watching its pooled session's PID.
func TestRuntimeCacheInvalidation(t *testing.T) {
	t.Parallel()
	cfg := doc{
		"mcpServers": doc{"demo": stdioDemo(t, doc{"routing": doc{"mode": "prefer", "keywords": []string{"aaaa"}}})},
		"skills":     doc{"one": doc{"enabled": true}},
	}
	b := newRuntime(t, cfg)
	first := b.list(t)
	require.Equal(t, []string{"aaaa"}, byName(first)["demo_echo"].Routing.Keywords)
	require.Equal(t, "a", text(t, b.call(t, "demo_echo", map[string]any{"message": "a"})))
	pid1 := b.sessionPID(t, "demo", "alice", "t1")
	require.True(t, alive(pid1))

	// A skills-only edit keeps the tools and the very same session.
	cfg["skills"] = doc{"one": doc{"enabled": true}, "two": doc{"enabled": false}}
	b.write(t, cfg)
	b.settle()
	require.Equal(t, first, b.list(t))
	require.Equal(t, "b", text(t, b.call(t, "demo_echo", map[string]any{"message": "b"})))
	require.Equal(t, pid1, b.sessionPID(t, "demo", "alice", "t1"), "skills-only edit keeps the stdio session")
	require.True(t, alive(pid1))
	require.NotContains(t, b.logs.String(), "rediscovering")

	// A same-size rewrite with the old mtime is still detected (the
	// runtime re-hashes at least once a second).
	fi, err := os.Stat(b.path)
	require.NoError(t, err)
	before, err := os.ReadFile(b.path)
	require.NoError(t, err)
	after := []byte(strings.Replace(string(before), `"aaaa"`, `"bbbb"`, 1))
	require.Len(t, after, len(before))
	require.NoError(t, os.WriteFile(b.path, after, 0o600))
	require.NoError(t, os.Chtimes(b.path, fi.ModTime(), fi.ModTime()))
	require.Eventually(t, func() bool {
		tl, ok := b.tryList()["demo_echo"]
		return ok && tl.Routing != nil && slices.Equal([]string{"bbbb"}, tl.Routing.Keywords)
	}, generous, 100*time.Millisecond, "same-size same-mtime rewrite detected")
	require.Equal(t, "c", text(t, b.call(t, "demo_echo", map[string]any{"message": "c"})))
	require.Equal(t, pid1, b.sessionPID(t, "demo", "alice", "t1"), "a routing edit (presentation only) keeps the session")

	// A server edit rediscovers: names follow tool_name_prefix, and the
	// session, whose connection settings did not change, is kept.
	require.NoError(t, json.Unmarshal(after, &cfg))
	cfg["mcpServers"].(map[string]any)["demo"].(map[string]any)["tool_name_prefix"] = false
	b.write(t, cfg)
	require.Eventually(t, func() bool {
		tools := b.tryList()
		_, raw := tools["echo"]
		_, prefixed := tools["demo_echo"]
		return raw && !prefixed
	}, generous, 50*time.Millisecond, "the server edit is picked up")
	require.Equal(t, "d", text(t, b.call(t, "echo", map[string]any{"message": "d"})))
	require.Equal(t, pid1, b.sessionPID(t, "demo", "alice", "t1"))
	require.Contains(t, b.logs.String(), "rediscovering")

	// An edit of what the process is started with replaces the session.
	cfg["mcpServers"].(map[string]any)["demo"].(map[string]any)["env"] = map[string]any{"EDITED": "1"}
	b.write(t, cfg)
	require.Eventually(t, func() bool {
		res, err := b.rt.CallTool(context.Background(), mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "env", Arguments: map[string]any{"name": "EDITED"}})
		return err == nil && strings.Contains(string(res.Content[0]), "1 environment variable")
	}, generous, 50*time.Millisecond, "the env edit is picked up")
	tools := b.list(t)
	pid3 := b.sessionPID(t, "demo", "alice", "t1")
	require.NotEqual(t, pid1, pid3, "a connection edit replaces the session")
	require.Eventually(t, func() bool { return !alive(pid1) }, generous, 50*time.Millisecond, "old session closed")

	// Deleting the config keeps serving the last-known-good tools and
	// sessions.
	require.NoError(t, os.Remove(b.path))
	b.settle()
	require.Equal(t, names(tools), names(b.list(t)))
	require.Equal(t, "e", text(t, b.call(t, "echo", map[string]any{"message": "e"})))
	require.Equal(t, pid3, b.sessionPID(t, "demo", "alice", "t1"))
	require.True(t, alive(pid3))

	// Disabling the last server empties the tools and closes the sessions.
	cfg["mcpServers"].(map[string]any)["demo"].(map[string]any)["enabled"] = false
	b.write(t, cfg)
	require.Eventually(t, func() bool { tools := b.tryList(); return tools != nil && len(tools) == 0 }, generous, 50*time.Millisecond, "no tools")
	require.Eventually(t, func() bool { return !alive(pid3) }, generous, 50*time.Millisecond, "sessions of a disabled server are closed")
	require.Zero(t, b.rt.Pool().Len())
	_, err = b.rt.CallTool(context.Background(), mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "echo"})
	requireCode(t, err, mcpflow.ENotFound)
}

// TestRuntimeConfigAppears pins that a cache built while no config existed
// goes stale once one appears.
func TestRuntimeConfigAppears(t *testing.T) {
	t.Parallel()
	b := newRuntime(t, nil)
	require.Empty(t, b.list(t))
	b.write(t, doc{"mcpServers": doc{"demo": stdioDemo(t, nil)}})
	require.Eventually(t, func() bool { _, ok := b.tryList()["demo_echo"]; return ok }, generous, 50*time.Millisecond)
}

// TestRuntimeResetCache pins that ResetCache makes the next use discover
// again, and keeps the sessions of servers whose configuration did not
// change.
func TestRuntimeResetCache(t *testing.T) {
	t.Parallel()
	spawns := filepath.Join(t.TempDir(), "spawns")
	counting := doc{"type": "stdio", "command": "sh", "args": []string{"-c", `echo x >> "$SPAWNS"; exec "$0"`, demoBinary(t)}, "env": doc{"SPAWNS": spawns}}
	b := newRuntime(t, doc{"mcpServers": doc{"demo": counting}})
	count := func() int {
		data, err := os.ReadFile(spawns)
		require.NoError(t, err)
		return strings.Count(string(data), "x")
	}
	require.Equal(t, "a", text(t, b.call(t, "demo_echo", map[string]any{"message": "a"})))
	require.Equal(t, 2, count(), "one discovery, one session")
	pid1 := b.sessionPID(t, "demo", "alice", "t1")
	b.rt.ResetCache()
	require.Len(t, b.list(t), len(demoTools))
	require.Equal(t, 3, count(), "the tools were discovered again")
	require.Equal(t, "b", text(t, b.call(t, "demo_echo", map[string]any{"message": "b"})))
	require.Equal(t, pid1, b.sessionPID(t, "demo", "alice", "t1"), "the unchanged server keeps its session")
	require.Equal(t, 1, b.rt.Pool().Len())
}

// TestRuntimeTaskToolsets pins the submit wrapper (visible, task_toolset
// set, description suffix), hidden status/cancel tools, the answer without
// a task runtime, and the hard error for a missing raw tool.
func TestRuntimeTaskToolsets(t *testing.T) {
	t.Parallel()
	toolset := doc{"name": "Demo job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job"}
	b := newRuntime(t, doc{"mcpServers": doc{"demo": stdioDemo(t, doc{"task_toolsets": []any{toolset}})}})
	tools := byName(b.list(t))
	require.Len(t, tools, len(demoTools)-2)
	require.NotContains(t, tools, "demo_get_job_status")
	require.NotContains(t, tools, "demo_cancel_job")
	sub := tools["demo_submit_job"]
	require.NotNil(t, sub.TaskToolset)
	require.Equal(t, "Demo job", *sub.TaskToolset)
	require.Equal(t, "submit_job", sub.OriginalName)
	require.Equal(t, "Start a simulated long-running job; answers structuredContent {\"task_id\", \"status\": \"running\"}.\n\n"+
		"Submitted as durable background task 'Demo job'; returns an mcpflow task ID immediately and status polling is handled automatically.",
		sub.Description)
	require.Nil(t, tools["demo_job_stats"].TaskToolset)

	res := b.call(t, "demo_submit_job", map[string]any{"duration_seconds": 1})
	require.True(t, res.IsError)
	require.Contains(t, text(t, res), "The MCP task runtime is not initialized")

	type submitted struct {
		call    mcpflow.ToolCall
		tool    mcpflow.Tool
		toolset config.TaskToolset
	}
	got := make(chan submitted, 1)
	b.rt.SetSubmitter(func(_ context.Context, call mcpflow.ToolCall, tool mcpflow.Tool, ts config.TaskToolset) (*mcpflow.ToolResult, error) {
		got <- submitted{call, tool, ts}
		return &mcpflow.ToolResult{StructuredContent: map[string]any{"task_id": "mcp-task-x"}}, nil
	})
	res = b.call(t, "demo_submit_job", nil)
	require.Equal(t, map[string]any{"task_id": "mcp-task-x"}, res.StructuredContent)
	s := <-got
	require.Equal(t, "demo_submit_job", s.call.Tool)
	require.Equal(t, map[string]any{}, s.call.Arguments, "nil arguments become {}")
	require.Equal(t, "demo", s.tool.Server)
	require.Equal(t, config.TaskToolset{Name: "Demo job", SubmitTool: "submit_job", StatusTool: "get_job_status", CancelTool: "cancel_job"}, s.toolset)

	missing := doc{"name": "Broken", "submit_tool": "submit_job", "status_tool": "status_missing", "cancel_tool": "cancel_missing"}
	b2 := newRuntime(t, doc{"mcpServers": doc{"demo": stdioDemo(t, doc{"task_toolsets": []any{missing}})}})
	_, err := b2.rt.ListTools(context.Background(), "alice", "t1")
	require.Error(t, err)
	require.Equal(t, "MCP server 'demo' task_toolsets reference missing raw tool(s): cancel_missing, status_missing", mcpflow.ErrorMessage(err))
	_, err = b2.rt.CallTool(context.Background(), mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "demo_echo"})
	require.ErrorContains(t, err, "task_toolsets reference missing raw tool(s)")
}

// TestRuntimeTaskToolsetInputTool pins that a toolset's input_tool is
// hidden like status and cancel, reaches the submitter with the toolset,
// and must exist on the server.
func TestRuntimeTaskToolsetInputTool(t *testing.T) {
	t.Parallel()
	toolset := doc{"name": "job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job", "input_tool": "answer_job"}
	b := newRuntime(t, doc{"mcpServers": doc{"demo": stdioDemo(t, doc{"task_toolsets": []any{toolset}})}})
	tools := byName(b.list(t))
	require.Len(t, tools, len(demoTools)-3)
	require.NotContains(t, tools, "demo_answer_job")
	got := make(chan config.TaskToolset, 1)
	b.rt.SetSubmitter(func(_ context.Context, _ mcpflow.ToolCall, _ mcpflow.Tool, ts config.TaskToolset) (*mcpflow.ToolResult, error) {
		got <- ts
		return &mcpflow.ToolResult{StructuredContent: map[string]any{"task_id": "mcp-task-x"}}, nil
	})
	b.call(t, "demo_submit_job", nil)
	require.Equal(t, "answer_job", (<-got).InputTool)

	missing := doc{"name": "job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job", "input_tool": "answer_missing"}
	b2 := newRuntime(t, doc{"mcpServers": doc{"demo": stdioDemo(t, doc{"task_toolsets": []any{missing}})}})
	_, err := b2.rt.ListTools(context.Background(), "alice", "t1")
	require.Equal(t, "MCP server 'demo' task_toolsets reference missing raw tool(s): answer_missing", mcpflow.ErrorMessage(err))
}

// TestRuntimeStdioWorkspace pins that stdio calls run in the thread's
// workspace with TMPDIR inside it, and that result paths are translated.
func TestRuntimeStdioWorkspace(t *testing.T) {
	t.Parallel()
	b := newRuntime(t, doc{"mcpServers": doc{"demo": stdioDemo(t, nil)}})
	for _, who := range [][2]string{{"alice", "t1"}, {"bob", "t2"}} {
		res := b.callAs(t, who[0], who[1], "demo_write_file", map[string]any{"name": "out/report.md", "content": "# " + who[0]})
		require.False(t, res.IsError, "%s", res.Content)
		bs := blocks(t, res)
		require.Len(t, bs, 2)
		require.Equal(t, block{Type: "text", Text: "Wrote /mnt/user-data/workspace/out/report.md"}, bs[0])
		require.Equal(t, "resource_link", bs[1].Type)
		require.Equal(t, "/mnt/user-data/workspace/out/report.md", bs[1].URI)
		data, err := os.ReadFile(filepath.Join(b.threadWorkspace(who[0], who[1]), "out", "report.md"))
		require.NoError(t, err)
		require.Equal(t, "# "+who[0], string(data))

		res = b.callAs(t, who[0], who[1], "demo_env", map[string]any{"name": "TMPDIR"})
		tmp := filepath.Join(b.threadWorkspace(who[0], who[1]), ".mcp", "tmp")
		require.Equal(t, map[string]any{"env": map[string]any{"TMPDIR": tmp}}, res.StructuredContent)
		fi, err := os.Stat(tmp)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	}
}

// TestRuntimeStdioEnvIsolation pins that a stdio child gets the server's
// env but never mcpflow's own settings (MCPFLOW_*, the database DSN).
// Not parallel: it uses t.Setenv.
func TestRuntimeStdioEnvIsolation(t *testing.T) {
	const dsn = "postgres://mcpflow:s3cret-pw@127.0.0.1:5432/mcpflow"
	t.Setenv("MCPFLOW_DATABASE_DSN", dsn)
	t.Setenv("MCPFLOW_AUTH_ADMIN_TOKENS", "admin-token-secret")
	t.Setenv("DATABASE_URL", dsn)
	t.Setenv("GREETING_SOURCE", "from-env")
	b := newRuntime(t, doc{"mcpServers": doc{"demo": stdioDemo(t, doc{"env": doc{"GREETING": "hello", "FROM_VAR": "$GREETING_SOURCE"}})}})
	res := b.call(t, "demo_env", nil)
	require.False(t, res.IsError)
	env := res.StructuredContent.(map[string]any)["env"].(map[string]any)
	require.Equal(t, "hello", env["GREETING"])
	require.Equal(t, "from-env", env["FROM_VAR"])
	for k, v := range env {
		require.False(t, strings.HasPrefix(strings.ToUpper(k), "MCPFLOW_"), "the stdio child sees %s", k)
		require.NotContains(t, v, "s3cret-pw", "the stdio child sees the DSN in %s", k)
		require.NotContains(t, v, "admin-token-secret", "the stdio child sees a token in %s", k)
	}
}

// TestRuntimeSkipsHangingServer pins that a server that never answers
// initialize is skipped after its session_init_timeout while the others
// work.
func TestRuntimeSkipsHangingServer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(release)
		stall.CloseClientConnections()
		stall.Close()
	})
	b := newRuntime(t, doc{"mcpServers": doc{
		"hang":  doc{"type": "stdio", "command": "sleep", "args": []string{"300"}, "session_init_timeout": 1},
		"stall": doc{"type": "http", "url": stall.URL + "/mcp", "session_init_timeout": 1.5},
		"demo":  stdioDemo(t, nil),
	}})
	tools := b.list(t) // returns once the two timeouts skipped their servers
	require.Len(t, tools, len(demoTools))
	for _, tl := range tools {
		require.Equal(t, "demo", tl.Server)
	}
	skipped, err := b.rt.Skipped(context.Background())
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"hang":  "Skipping MCP server 'hang' after tool discovery timed out (1.0s)",
		"stall": "Skipping MCP server 'stall' after tool discovery timed out (1.5s)",
	}, skipped)
	require.Contains(t, b.logs.String(), "Skipping MCP server 'hang' after tool discovery timed out (1.0s)")
	require.Equal(t, "ok", text(t, b.call(t, "demo_echo", map[string]any{"message": "ok"})))
}

// TestRuntimeSharedSessionAfterServerRestart pins that an SSE/HTTP server
// that goes away fails calls with an upstream error, and that once it is
// back the runtime reconnects by itself: at most one call fails (a failing
// call is never replayed).
func TestRuntimeSharedSessionAfterServerRestart(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"sse", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			addr := testenv.FreeAddr(t)
			url, stop := startDemoHTTPAt(t, transport, addr)
			b := newRuntime(t, doc{"mcpServers": doc{"demo": doc{"type": transport, "url": url}}})
			require.Equal(t, "1", text(t, b.call(t, "demo_echo", map[string]any{"message": "1"})))

			stop(true)
			_, err := b.rt.CallTool(context.Background(), mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "demo_echo", Arguments: map[string]any{"message": "down"}})
			requireCode(t, err, mcpflow.EUpstream)

			startDemoHTTPAt(t, transport, addr)
			ctx, cancel := context.WithTimeout(context.Background(), generous)
			defer cancel()
			call := mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "demo_echo", Arguments: map[string]any{"message": "2"}}
			res, err := b.rt.CallTool(ctx, call)
			if err != nil {
				t.Logf("first call after the restart failed: %v", err)
				res, err = b.rt.CallTool(ctx, call)
			}
			require.NoError(t, err, "the runtime reconnects after a server restart")
			require.Equal(t, "2", text(t, res))
		})
	}
}

// TestRuntimeInitialConfigIsNotStale pins that the configuration loaded at
// start-up (Options.Initial) never hides a later edit of the file: after
// an explicit ResetCache (what every config write does) the file is read
// again, and an edit made before the first use is picked up by the next
// freshness check.
func TestRuntimeInitialConfigIsNotStale(t *testing.T) {
	t.Parallel()
	withInitial := func(t *testing.T) *rtBundle {
		cfg := doc{"mcpServers": doc{"demo": stdioDemo(t, nil)}}
		data, err := json.Marshal(cfg)
		require.NoError(t, err)
		ext, err := config.ParseExtensions(data, "start-up", nil)
		require.NoError(t, err)
		return newRuntime(t, cfg, func(o *mcpclient.Options) { o.Initial = ext })
	}
	edited := doc{"mcpServers": doc{"demo": stdioDemo(t, doc{"tool_name_prefix": false})}}

	t.Run("reset after a write", func(t *testing.T) {
		t.Parallel()
		b := withInitial(t)
		b.write(t, edited)
		b.rt.ResetCache()
		require.Contains(t, names(b.list(t)), "echo", "the file is read after a reset")
	})
	t.Run("edit before first use", func(t *testing.T) {
		t.Parallel()
		b := withInitial(t)
		b.write(t, edited)
		_ = b.list(t) // may still answer from the start-up config
		require.Contains(t, names(b.list(t)), "echo", "the edit is seen by the next check")
	})
}

// TestRuntimeSingleFlight pins that concurrent first uses share one
// discovery and that concurrent calls of one thread share one stdio
// session.
func TestRuntimeSingleFlight(t *testing.T) {
	t.Parallel()
	spawns := filepath.Join(t.TempDir(), "spawns")
	counting := doc{"type": "stdio", "command": "sh", "args": []string{"-c", `echo x >> "$SPAWNS"; exec "$0"`, demoBinary(t)}, "env": doc{"SPAWNS": spawns}}
	b := newRuntime(t, doc{"mcpServers": doc{"demo": counting}})
	count := func() int {
		data, err := os.ReadFile(spawns)
		require.NoError(t, err)
		return strings.Count(string(data), "x")
	}
	run := func(n int, f func(i int)) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { f(i) })
		}
		wg.Wait()
	}
	run(8, func(int) {
		tools, err := b.rt.ListTools(context.Background(), "alice", "t1")
		assert.NoError(t, err)
		assert.Len(t, tools, len(demoTools))
	})
	require.Equal(t, 1, count(), "one discovery process")
	run(8, func(i int) {
		thread := []string{"t1", "t2"}[i%2]
		res, err := b.rt.CallTool(context.Background(), mcpflow.ToolCall{UserID: "alice", ThreadID: thread, Tool: "demo_echo", Arguments: map[string]any{"message": thread}})
		if assert.NoError(t, err) && assert.Len(t, res.Content, 1) {
			assert.JSONEq(t, `{"type":"text","text":"`+thread+`"}`, string(res.Content[0]))
		}
	})
	require.Equal(t, 3, count(), "one session per thread")
	require.Equal(t, 2, b.rt.Pool().Len())
}

// TestRuntimeSkipsBrokenServers pins that servers that cannot be used are
// skipped with their reason while the others work.
func TestRuntimeSkipsBrokenServers(t *testing.T) {
	t.Parallel()
	b := newRuntime(t, doc{"mcpServers": doc{
		"nocmd":   doc{"type": "stdio"},
		"nourl":   doc{"type": "http"},
		"missing": doc{"type": "stdio", "command": filepath.Join(t.TempDir(), "no-such-binary")},
		"refused": doc{"type": "http", "url": "http://" + testenv.FreeAddr(t) + "/mcp"},
		"off":     stdioDemo(t, doc{"enabled": false}),
		"demo":    stdioDemo(t, nil),
	}})
	tools := b.list(t)
	require.Len(t, tools, len(demoTools))
	skipped, err := b.rt.Skipped(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"missing", "nocmd", "nourl", "refused"}, slices.Sorted(maps.Keys(skipped)))
	require.Equal(t, "MCP server 'nocmd' with stdio transport requires 'command' field", skipped["nocmd"])
	require.Equal(t, "MCP server 'nourl' with http transport requires 'url' field", skipped["nourl"])
	require.True(t, strings.HasPrefix(skipped["missing"], "Skipping MCP server 'missing' after tool discovery failed: "), skipped["missing"])
	require.True(t, strings.HasPrefix(skipped["refused"], "Skipping MCP server 'refused' after tool discovery failed: "), skipped["refused"])
	require.Equal(t, "ok", text(t, b.call(t, "demo_echo", map[string]any{"message": "ok"})))
}

// TestRuntimeStdioExplicitCwd pins that a server's own cwd wins over the
// thread workspace, and that paths outside the thread's user-data are
// never translated.
func TestRuntimeStdioExplicitCwd(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	b := newRuntime(t, doc{"mcpServers": doc{"demo": stdioDemo(t, doc{"cwd": cwd})}})
	res := b.call(t, "demo_write_file", map[string]any{"name": "x.txt", "content": "x"})
	require.False(t, res.IsError)
	bs := blocks(t, res)
	require.Len(t, bs, 2)
	require.Equal(t, "Wrote "+filepath.Join(cwd, "x.txt"), bs[0].Text)
	require.Equal(t, "file://"+filepath.Join(cwd, "x.txt"), bs[1].URI)
	require.FileExists(t, filepath.Join(cwd, "x.txt"))
	require.NoFileExists(t, filepath.Join(b.threadWorkspace("alice", "t1"), "x.txt"))
}

// Spec §4.6: task servers are frozen at start-up.
func TestRuntimeTaskServerDrift(t *testing.T) {
	t.Parallel()
	url, _ := startDemoHTTP(t, "http")
	toolset := []any{doc{"name": "job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job"}}
	start := doc{"mcpServers": doc{
		"tasks":   doc{"type": "http", "url": url, "env": doc{}, "task_toolsets": toolset, "description": "old"},
		"plain":   doc{"type": "http", "url": url},
		"offboth": doc{"type": "http", "url": url, "enabled": false, "task_toolsets": toolset},
	}}
	b := newRuntime(t, start, func(o *mcpclient.Options) {
		dir := t.TempDir()
		data, _ := json.Marshal(start)
		p := filepath.Join(dir, "start.json")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		ext, err := config.LoadExtensions(p, nil)
		require.NoError(t, err)
		o.FrozenTaskServers = map[string]config.Server{}
		for _, s := range ext.Servers {
			if s.Enabled && len(s.TaskToolsets) > 0 {
				o.FrozenTaskServers[s.Name] = s
			}
		}
	})
	callErr := func(tool string) error {
		ctx, cancel := context.WithTimeout(context.Background(), generous)
		defer cancel()
		res, err := b.rt.CallTool(ctx, mcpflow.ToolCall{UserID: "u", ThreadID: "t1", Tool: tool, Arguments: map[string]any{"message": "x"}})
		if err == nil && res.IsError {
			return errors.New(text(t, res))
		}
		return err
	}
	edit := func(f func(d doc)) {
		data, _ := json.Marshal(start)
		var d doc
		require.NoError(t, json.Unmarshal(data, &d))
		f(d)
		b.write(t, d)
		b.settle()
		b.list(t)
	}
	require.NoError(t, callErr("tasks_echo"))

	// Presentation edits, servers without toolsets and servers disabled at
	// both times stay hot.
	edit(func(d doc) {
		s := d["mcpServers"].(doc)
		s["tasks"].(doc)["description"] = "new"
		s["tasks"].(doc)["routing"] = doc{"mode": "prefer", "keywords": []any{"jobs"}}
		s["plain"].(doc)["headers"] = doc{"X-A": "1"}
		s["offboth"].(doc)["url"] = url + "?changed"
	})
	require.NoError(t, callErr("tasks_echo"))

	for name, change := range map[string]func(d doc){
		"env":          func(d doc) { d["mcpServers"].(doc)["tasks"].(doc)["env"] = doc{"X": "1"} },
		"timeout":      func(d doc) { d["mcpServers"].(doc)["tasks"].(doc)["tool_call_timeout"] = 5 },
		"interceptors": func(d doc) { d["mcpInterceptors"] = []any{"my.module:builder"} },
	} {
		edit(change)
		err := callErr("tasks_echo")
		requireCode(t, err, mcpflow.EUnavailable)
		want := "(tasks)"
		if name == "interceptors" {
			want = "(mcpInterceptors)"
		}
		require.Contains(t, mcpflow.ErrorMessage(err), "MCP task-enabled server configuration changed after mcpflow startup "+want, name)
		require.Contains(t, mcpflow.ErrorMessage(err), "restart mcpflow before using durable task tools")
		require.NoError(t, callErr("plain_echo"), "%s: an unrelated server keeps working", name)
	}
	edit(func(d doc) {
		d["mcpServers"].(doc)["late"] = doc{"type": "http", "url": url, "task_toolsets": toolset}
	})
	err := callErr("late_echo")
	requireCode(t, err, mcpflow.EUnavailable)
	require.Contains(t, mcpflow.ErrorMessage(err), "(late)", "a task server added after start-up is not frozen")
}

// A tool's structured content keeps its numbers exactly (json.Number), so
// an integer beyond 2^53 reaches the agent digit for digit.
func TestConvertResultKeepsStructuredNumbers(t *testing.T) {
	res := &mcp.CallToolResult{RawStructuredContent: json.RawMessage(`{"id":9007199254740993,"ratio":0.10000000000000000555,"list":[1,"x"]}`)}
	out, err := mcpclient.ConvertResult(res)
	require.NoError(t, err)
	b, err := json.Marshal(out.StructuredContent)
	require.NoError(t, err)
	require.Equal(t, `{"id":9007199254740993,"list":[1,"x"],"ratio":0.10000000000000000555}`, string(b))
}

// TestLookupTool: the runtime finds one tool of the listing by name (the
// MCP endpoint's call path) as ListTools lists it, the built-in task tools
// only while the task runtime runs, and nil for a name the listing lacks.
func TestLookupTool(t *testing.T) {
	t.Parallel()
	url := startNamedToolsServer(t, "alpha", "beta")
	b := newRuntime(t, doc{"mcpServers": doc{"x": doc{"type": "http", "url": url}}})
	ctx := context.Background()
	lookup := func(name string) *mcpflow.Tool {
		t.Helper()
		tool, err := b.rt.LookupTool(ctx, "alice", "t1", name)
		require.NoError(t, err)
		return tool
	}
	listed := b.list(t)
	require.NotEmpty(t, listed)
	for _, want := range listed {
		got := lookup(want.Name)
		require.NotNil(t, got, want.Name)
		require.Equal(t, want, *got)
	}
	require.Nil(t, lookup("x_gamma"))
	require.Nil(t, lookup(mcpclient.ToolListBackgroundTasks), "no task runtime: no built-in tools")

	b.rt.SetSubmitter(func(context.Context, mcpflow.ToolCall, mcpflow.Tool, config.TaskToolset) (*mcpflow.ToolResult, error) {
		return nil, nil
	})
	b.rt.SetBackgroundTasks(noBackgroundTasks{})
	got := lookup(mcpclient.ToolListBackgroundTasks)
	require.NotNil(t, got)
	i := slices.IndexFunc(b.list(t), func(t mcpflow.Tool) bool { return t.Name == mcpclient.ToolListBackgroundTasks })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, b.list(t)[i], *got)
}

// noBackgroundTasks is a task store without tasks.
type noBackgroundTasks struct{}

func (noBackgroundTasks) ListTasks(context.Context, mcpflow.TaskFilter) ([]*mcpflow.Task, error) {
	return nil, nil
}
func (noBackgroundTasks) CancelTask(context.Context, *mcpflow.Task) error { return nil }
