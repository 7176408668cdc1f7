package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// TestMCPEndpointMCPGoDefaults: mcp-go v1.2.1 with its defaults probes
// server/discover and speaks 2026-07-28 to mcpflow (stateless: no
// session), lists the thread's tools and calls one.
func TestMCPEndpointMCPGoDefaults(t *testing.T) {
	e := startTaskEnv(t)
	c, err := mcpclient.NewStreamableHttpClient(e.m.URL()+"/mcp/threads/mcpgo-2026",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testUserToken}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.Start(ctx))
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-go-defaults", Version: "1"}
	res, err := c.Initialize(ctx, init)
	require.NoError(t, err)
	require.Equal(t, "2026-07-28", c.ProtocolVersion())
	require.Equal(t, "mcpflow", res.ServerInfo.Name)
	require.Empty(t, c.GetSessionId(), "no session in 2026-07-28")

	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	require.Contains(t, names, "demo_add")
	call := mcp.CallToolRequest{}
	call.Params.Name, call.Params.Arguments = "demo_add", map[string]any{"a": 2, "b": 3}
	out, err := c.CallTool(ctx, call)
	require.NoError(t, err)
	require.False(t, out.IsError)
	require.Equal(t, "5", out.Content[0].(mcp.TextContent).Text)
}

// sseFrames reads the JSON messages of an SSE stream, in order, until it
// ends (then the channel closes).
func sseFrames(body io.Reader) <-chan map[string]any {
	frames := make(chan map[string]any, 16)
	go func() {
		defer close(frames)
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					frames <- m
				}
			}
		}
	}()
	return frames
}

// rpc2026 posts 2026-07-28 requests to one MCP URL (raw HTTP: the wire is
// what the test checks).
type rpc2026 struct {
	url   string
	token string
	ext   bool // declare the Tasks extension
	seq   atomic.Int64
	// extra are more _meta entries for every request.
	extra map[string]any
}

func (c *rpc2026) meta() map[string]any {
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	if c.ext {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-2026", "version": "1"}}
	for k, v := range c.extra {
		meta[k] = v
	}
	return meta
}

// request sends method with params and the standard headers (name is
// Mcp-Name, "" for none) and returns the HTTP response, unread.
func (c *rpc2026) request(t *testing.T, ctx context.Context, method, name string, params map[string]any) *http.Response {
	t.Helper()
	params["_meta"] = c.meta()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.seq.Add(1), "method": method, "params": params})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, "POST", c.url, strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// call sends one request and returns its JSON answer's result (failing on
// a JSON-RPC error).
func (c *rpc2026) call(t *testing.T, method, name string, params map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resp := c.request(t, ctx, method, name, params)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", out)
	require.Nil(t, out["error"], "%s: %v", method, out)
	res := out["result"].(map[string]any)
	return res
}

// waitTask polls tasks/get until the task's status is want.
func (c *rpc2026) waitTask(t *testing.T, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res := c.call(t, "tasks/get", id, map[string]any{"taskId": id})
		if res["status"] == want {
			return res
		}
		require.True(t, time.Now().Before(deadline), "task %s is still %v, not %s: %v", id, res["status"], want, res)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMCPEndpointTasksExtension: a 2026-07-28 client that declares the
// Tasks extension gets a durable tool's call as a task (resultType task,
// readable at once), polls it to its result, answers its question with
// tasks/update, cancels one, and follows one with subscriptions/listen;
// a client that does not declare it gets the task's handle, as a 2025
// client without task augmentation does.
func TestMCPEndpointTasksExtension(t *testing.T) {
	e := startInputEnv(t)
	c := &rpc2026{url: e.m.URL() + "/mcp/threads/ext", token: testUserToken, ext: true}

	// A task that completes.
	created := c.call(t, "tools/call", "demo_submit_job", map[string]any{"name": "demo_submit_job",
		"arguments": map[string]any{"duration_seconds": 1}})
	require.Equal(t, "task", created["resultType"], "%v", created)
	id, _ := created["taskId"].(string)
	require.Regexp(t, `^mcp-task-[0-9a-f]{32}$`, id)
	require.Contains(t, []any{"working"}, created["status"])
	require.Equal(t, 1000.0, created["pollIntervalMs"])
	require.Contains(t, created, "ttlMs")
	require.NotContains(t, created, "task", "flat, not the 2025 wrapper")
	got := c.call(t, "tasks/get", id, map[string]any{"taskId": id}) // durable: readable at once
	require.Equal(t, id, got["taskId"])
	done := c.waitTask(t, id, "completed")
	result := done["result"].(map[string]any)
	require.Equal(t, "complete", result["resultType"])
	require.Equal(t, false, result["isError"])
	require.NotNil(t, result["structuredContent"])

	// A task that asks: the question comes as inputRequests, the answer
	// goes with tasks/update and reaches the server before the ack.
	created = c.call(t, "tools/call", "demo_submit_job", map[string]any{"name": "demo_submit_job",
		"arguments": map[string]any{"duration_seconds": 0.5, "outcome": "ask", "answer_duration_seconds": 0.5}})
	qid := created["taskId"].(string)
	asking := c.waitTask(t, qid, "input_required")
	reqs := asking["inputRequests"].(map[string]any)
	require.Len(t, reqs, 1, "%v", asking)
	var key string
	for k, v := range reqs {
		key = k
		el := v.(map[string]any)
		require.Equal(t, "elicitation/create", el["method"])
		require.Equal(t, "Which format should the report have?", el["params"].(map[string]any)["message"])
	}
	ack := c.call(t, "tasks/update", qid, map[string]any{"taskId": qid,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"format": "pdf"}}}})
	require.Equal(t, "complete", ack["resultType"])
	done = c.waitTask(t, qid, "completed")
	require.Equal(t, map[string]any{"action": "accept", "answer": map[string]any{"format": "pdf"}},
		done["result"].(map[string]any)["structuredContent"], "the server used the answer")

	// A task followed with subscriptions/listen, then cancelled.
	created = c.call(t, "tools/call", "demo_submit_job", map[string]any{"name": "demo_submit_job",
		"arguments": map[string]any{"duration_seconds": 300}})
	lid := created["taskId"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resp := c.request(t, ctx, "subscriptions/listen", "", map[string]any{"notifications": map[string]any{"taskIds": []any{lid}}})
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	frames := sseFrames(resp.Body)
	first := <-frames
	require.Equal(t, "notifications/subscriptions/acknowledged", first["method"], "%v", first)
	ack = c.call(t, "tasks/cancel", lid, map[string]any{"taskId": lid})
	require.Equal(t, "complete", ack["resultType"])
	require.NotContains(t, ack, "status")
	var final map[string]any
	for f := range frames {
		if f["method"] == "notifications/tasks" && f["params"].(map[string]any)["status"] == "cancelled" {
			final = f
		}
		if f["id"] != nil {
			break // the listen result: every task ended
		}
	}
	require.NotNil(t, final, "the stream never said the task was cancelled")
	c.waitTask(t, lid, "cancelled")

	// Without the extension, the durable tool answers its handle.
	plain := &rpc2026{url: c.url, token: testUserToken}
	res := plain.call(t, "tools/call", "demo_submit_job", map[string]any{"name": "demo_submit_job",
		"arguments": map[string]any{"duration_seconds": 0.2}})
	require.Equal(t, "complete", res["resultType"])
	handle := res["structuredContent"].(map[string]any)
	require.Equal(t, "job", handle["task_name"], fmt.Sprint(res))
}

// roundRobin is a reverse proxy written for the test: it sends each
// request to the next backend in turn (streams flushed as they come) and
// counts what each backend served.
type roundRobin struct {
	backends []*httputil.ReverseProxy
	next     atomic.Int64
	served   []atomic.Int64
}

func newRoundRobin(t *testing.T, urls ...string) *httptest.Server {
	t.Helper()
	rr := &roundRobin{served: make([]atomic.Int64, len(urls))}
	for _, u := range urls {
		target, err := url.Parse(u)
		require.NoError(t, err)
		p := httputil.NewSingleHostReverseProxy(target)
		p.FlushInterval = -1
		rr.backends = append(rr.backends, p)
	}
	srv := httptest.NewServer(rr)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		for i := range rr.served {
			t.Logf("replica %d served %d requests", i, rr.served[i].Load())
		}
	})
	roundRobins.Store(srv.URL, rr)
	return srv
}

var roundRobins sync.Map // proxy URL → *roundRobin

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(rr.next.Add(1)-1) % len(rr.backends)
	rr.served[i].Add(1)
	rr.backends[i].ServeHTTP(w, r)
}

// TestMCP2026Replicas: 2026-07-28 needs no session, so any replica answers
// any request. Two mcpflow serve processes on one PostgreSQL (and a
// worker) behind a round-robin proxy: a 2026 client that declares the
// Tasks extension submits a task that asks a question, polls it, answers
// it and reads its result, then submits one and cancels it, every request
// going to the other replica than the one before.
func TestMCP2026Replicas(t *testing.T) {
	pg := testenv.PostgresURL(t)
	dir := t.TempDir()
	demo := demoHTTP(t)
	const asking = `"task_toolsets": [{"name": "job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job", "input_tool": "answer_job"}]`
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 30, %s}}}`, demo, asking)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extensions_config.json"), []byte(ext), 0o600))
	queue := fmt.Sprintf("e2e-2026-%d", time.Now().UnixNano())
	mains := map[string]*Main{}
	for _, mode := range []string{"serve-a", "serve-b", "worker"} {
		cfg := filepath.Join(dir, mode+".yaml")
		body := strings.Replace(mcpServiceConfig(testenv.FreeAddr(t), testenv.FreeAddr(t), queue, ""),
			"database: { backend: sqlite, dsn: mcpflow.db }\n", fmt.Sprintf("database: { backend: postgres, dsn: %q }\n", pg), 1)
		require.NoError(t, os.WriteFile(cfg, []byte(body), 0o600))
		m := ModeServe
		if mode == "worker" {
			m = ModeWorker
		}
		mains[mode] = startMain(t, m, cfg, nil)
	}
	require.Eventually(t, func() bool { return mains["worker"].WorkerPolling() }, 30*time.Second, 50*time.Millisecond)
	proxy := newRoundRobin(t, mains["serve-a"].URL(), mains["serve-b"].URL())
	thread := fmt.Sprintf("rr-%d", time.Now().UnixNano()) // the database outlives the test
	c := &rpc2026{url: proxy.URL + "/mcp/threads/" + thread, token: testUserToken, ext: true}

	created := c.call(t, "tools/call", "demo_submit_job", map[string]any{"name": "demo_submit_job",
		"arguments": map[string]any{"duration_seconds": 0.5, "outcome": "ask", "answer_duration_seconds": 0.5}})
	require.Equal(t, "task", created["resultType"], "%v", created)
	id := created["taskId"].(string)
	asking2 := c.waitTask(t, id, "input_required")
	var key string
	for k := range asking2["inputRequests"].(map[string]any) {
		key = k
	}
	require.NotEmpty(t, key, "%v", asking2)
	c.call(t, "tasks/update", id, map[string]any{"taskId": id,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"format": "csv"}}}})
	done := c.waitTask(t, id, "completed")
	require.Equal(t, map[string]any{"action": "accept", "answer": map[string]any{"format": "csv"}},
		done["result"].(map[string]any)["structuredContent"])

	created = c.call(t, "tools/call", "demo_submit_job", map[string]any{"name": "demo_submit_job",
		"arguments": map[string]any{"duration_seconds": 300}})
	long := created["taskId"].(string)
	c.call(t, "tasks/get", long, map[string]any{"taskId": long})
	c.call(t, "tasks/cancel", long, map[string]any{"taskId": long})
	c.waitTask(t, long, "cancelled")

	v, _ := roundRobins.Load(proxy.URL)
	rr := v.(*roundRobin)
	a, b := rr.served[0].Load(), rr.served[1].Load()
	require.GreaterOrEqual(t, a, int64(4))
	require.LessOrEqual(t, a-b, int64(1), "requests alternated: %d and %d", a, b)
	require.LessOrEqual(t, b-a, int64(1), "requests alternated: %d and %d", a, b)
}
