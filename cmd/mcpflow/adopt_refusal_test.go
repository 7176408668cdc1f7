package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/worker"
)

// upstreamTap is a reverse proxy in front of an MCP server, written for
// the tests (an instrument, not a mock: the server answers): it records the
// JSON-RPC requests that pass and the task ids the server answered
// tools/call with, and injects failures on demand (a tools/call answer
// held back, tasks/cancel refused with 503).
type upstreamTap struct {
	url   string
	proxy *httputil.ReverseProxy

	mu       sync.Mutex
	created  []string // task ids tools/call answers carried, in order
	cancels  []string // task ids of tasks/cancel requests, in order
	submits  int      // tools/call requests of submitTool
	hold     chan struct{}
	held     chan string
	changed  chan struct{} // closed and replaced on every record
	refusing atomic.Bool   // answer tasks/cancel with 503

	// submitTool is the tool whose tools/call requests submits counts and,
	// with holdSubmit, holds before they reach the server.
	submitTool string
	holdSubmit chan struct{}
	submitHeld chan struct{}
}

type tapMethodKey struct{}

func newUpstreamTap(t *testing.T, target string) *upstreamTap {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	tap := &upstreamTap{changed: make(chan struct{})}
	tap.proxy = httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	tap.proxy.FlushInterval = -1
	tap.proxy.ModifyResponse = tap.answer
	srv := httptest.NewServer(tap)
	t.Cleanup(srv.Close)
	tap.url = srv.URL + u.Path
	return tap
}

func (u *upstreamTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name   string `json:"name"`
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &msg)
	if msg.Method == "tasks/cancel" && u.refusing.Load() {
		u.record(func() { u.cancels = append(u.cancels, msg.Params.TaskID) })
		http.Error(w, "refused by the test", http.StatusServiceUnavailable)
		return
	}
	if msg.Method == "tools/call" && msg.Params.Name == u.submitTool && u.submitTool != "" {
		u.mu.Lock()
		u.submits++
		gate, held := u.holdSubmit, u.submitHeld
		u.holdSubmit = nil
		u.mu.Unlock()
		if gate != nil {
			close(held)
			<-gate
		}
	}
	u.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tapMethodKey{}, msg.Method)))
	if msg.Method == "tasks/cancel" {
		// Recorded once the server has answered it, so that a waiter who
		// then asks the server finds the task cancelled (recorded before
		// the forward, a tasks/get could overtake it).
		u.record(func() { u.cancels = append(u.cancels, msg.Params.TaskID) })
	}
}

// answer records the task id of a tools/call answer (JSON or an SSE
// stream's data lines) and holds it while a hold is set.
func (u *upstreamTap) answer(resp *http.Response) error {
	if resp.Request.Context().Value(tapMethodKey{}) != "tools/call" {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	id := ""
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		var m struct {
			Result struct {
				ResultType string `json:"resultType"`
				TaskID     string `json:"taskId"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Result.ResultType == "task" {
			id = m.Result.TaskID
		}
	}
	if id == "" {
		return nil
	}
	u.mu.Lock()
	gate, held := u.hold, u.held
	u.hold = nil
	u.mu.Unlock()
	u.record(func() { u.created = append(u.created, id) })
	if gate != nil {
		held <- id
		<-gate
	}
	return nil
}

// record applies change under the lock and wakes the waiters.
func (u *upstreamTap) record(change func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	change()
	close(u.changed)
	u.changed = make(chan struct{})
}

// holdNextAnswer holds the next tools/call answer that carries a task: its
// id comes on the returned channel, and the answer goes on when release is
// closed.
func (u *upstreamTap) holdNextAnswer() (held <-chan string, release chan struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.hold, u.held = make(chan struct{}), make(chan string, 1)
	return u.held, u.hold
}

// holdNextSubmit holds the next tools/call of submitTool before it reaches
// the server: held is closed when it arrived, and it goes on when release
// is closed.
func (u *upstreamTap) holdNextSubmit() (held chan struct{}, release chan struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.holdSubmit, u.submitHeld = make(chan struct{}), make(chan struct{})
	return u.submitHeld, u.holdSubmit
}

// wait waits until cond holds of what the tap recorded (cond runs under
// its lock).
func (u *upstreamTap) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		u.mu.Lock()
		ok, changed := cond(), u.changed
		u.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("the upstream never saw %s (tasks created %v, cancelled %v)", what, u.created, u.cancels)
		}
	}
}

// lastCreated is the task id of the last tools/call answer.
func (u *upstreamTap) lastCreated(t *testing.T) string {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	require.NotEmpty(t, u.created, "the server answered no tools/call with a task")
	return u.created[len(u.created)-1]
}

// waitCancelled waits until the server received tasks/cancel of id and
// checks with the server itself that the task is cancelled.
func (u *upstreamTap) waitCancelled(t *testing.T, server, id string) {
	t.Helper()
	u.wait(t, "tasks/cancel of "+id, func() bool { return slices.Contains(u.cancels, id) })
	direct := &rpc2026{url: server, ext: true}
	require.Equal(t, "cancelled", direct.call(t, "tasks/get", id, map[string]any{"taskId": id})["status"])
}

// modernExt is an extensions_config.json with the 2026-07-28 test server at
// url (its tools answer plain calls with tasks) and extra server keys.
func modernExt(url, extra string) string {
	return fmt.Sprintf(`{"mcpServers": {"modern": {"type": "http", "url": %q, "tool_call_timeout": 30%s}}}`, url, extra)
}

// callAs calls tool on thread through REST with the test user's token and
// returns the status and the decoded answer; ctx may end the request.
func callAs(ctx context.Context, t *testing.T, base, thread, tool, args string) (int, map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/api/threads/"+thread+"/tools/"+tool+"/call", strings.NewReader(`{"arguments": `+args+`}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testUserToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out, nil
}

// TestAdoptedTaskRefusedIsCancelled: a 2026-07-28 upstream answers an
// ordinary call with a task (resultType "task"), and mcpflow cannot take
// it over as a durable task. Whatever the refusal, the remote task is
// cancelled upstream (the server receives tasks/cancel of it and reports
// it cancelled) and the caller is told why and that it was cancelled, or
// that cancelling failed.
func TestAdoptedTaskRefusedIsCancelled(t *testing.T) {
	up := testenv.StartMCP2026Server(t)
	const long = `{"seconds": 600}`
	const cancelled = "The task MCP server 'modern' started for this call was cancelled there (tasks/cancel)."

	t.Run("no task runtime", func(t *testing.T) {
		t.Parallel()
		tap := newUpstreamTap(t, up)
		m := startMain(t, ModeDev, writeConfig(t, "", modernExt(tap.url, "")), nil)
		code, out, err := callAs(t.Context(), t, m.URL(), "adopt-off", "modern_long_task", long)
		require.NoError(t, err)
		require.Equal(t, 200, code, "%v", out)
		require.Equal(t, true, out["is_error"], "%v", out)
		text := fmt.Sprint(out["content"])
		require.Contains(t, text, "mcpflow tracks only with its durable task runtime (mcp_tasks.enabled)")
		require.Contains(t, text, cancelled)
		tap.waitCancelled(t, up, tap.lastCreated(t))
	})

	t.Run("cancel fails", func(t *testing.T) {
		t.Parallel()
		tap := newUpstreamTap(t, up)
		tap.refusing.Store(true)
		m := startMain(t, ModeDev, writeConfig(t, "", modernExt(tap.url, "")), nil)
		code, out, err := callAs(t.Context(), t, m.URL(), "adopt-nocancel", "modern_long_task", long)
		require.NoError(t, err)
		require.Equal(t, 200, code, "%v", out)
		require.Equal(t, true, out["is_error"], "%v", out)
		require.Contains(t, fmt.Sprint(out["content"]), "The task MCP server 'modern' started for this call could not be cancelled (tasks/cancel: ")
		id := tap.lastCreated(t)
		tap.mu.Lock()
		attempts := 0
		for _, c := range tap.cancels {
			if c == id {
				attempts++
			}
		}
		tap.mu.Unlock()
		require.Equal(t, 3, attempts, "tasks/cancel was tried three times")
		tap.refusing.Store(false)
	})

	t.Run("running-task cap", func(t *testing.T) {
		t.Parallel()
		tap := newUpstreamTap(t, up)
		cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, max_running_tasks_per_user: 1 }\n", modernExt(tap.url, ""))
		e := &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
		code, out := e.post(t, "/api/threads/adopt-cap/tools/modern_long_task/call", `{"arguments": `+long+`}`)
		require.Equal(t, 200, code, "%v", out)
		first := out["structured_content"].(map[string]any)["task_id"].(string)
		kept := tap.lastCreated(t)

		// REST: 429 with the cap's message and the cancellation.
		code, out = e.post(t, "/api/threads/adopt-cap/tools/modern_long_task/call", `{"arguments": `+long+`}`)
		require.Equal(t, 429, code, "%v", out)
		msg := out["error"].(map[string]any)["message"].(string)
		require.Contains(t, msg, "(mcp_tasks.max_running_tasks_per_user)")
		require.Contains(t, msg, cancelled)
		tap.waitCancelled(t, up, tap.lastCreated(t))

		// MCP (2026-07-28): the same 429.
		c := &rpc2026{url: e.m.URL() + "/mcp/threads/adopt-cap", token: testUserToken, ext: true}
		resp := c.request(t, t.Context(), "tools/call", "modern_long_task", map[string]any{"name": "modern_long_task", "arguments": map[string]any{"seconds": 600}})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 429, resp.StatusCode, string(b))
		require.Contains(t, string(b), cancelled)
		tap.waitCancelled(t, up, tap.lastCreated(t))

		direct := &rpc2026{url: up, ext: true}
		require.Equal(t, "working", direct.call(t, "tasks/get", kept, map[string]any{"taskId": kept})["status"], "the adopted task runs on")
		code, _ = e.post(t, "/api/threads/adopt-cap/mcp-tasks/"+first+"/cancel", "")
		require.Equal(t, 202, code)
		e.waitStatus(t, "adopt-cap", first, "cancelled")
	})

	t.Run("Temporal down", func(t *testing.T) {
		t.Parallel()
		tap := newUpstreamTap(t, up)
		cfg := writeConfig(t, "mcp_tasks: { enabled: true }\n", modernExt(tap.url, ""))
		drillConfig(t, cfg, testenv.FreeAddr(t), "") // nothing listens there
		m := startMain(t, ModeServe, cfg, nil)
		code, out, err := callAs(t.Context(), t, m.URL(), "adopt-notemporal", "modern_long_task", long)
		require.NoError(t, err)
		require.Equal(t, 503, code, "%v", out)
		msg := out["error"].(map[string]any)["message"].(string)
		require.Contains(t, msg, "the durable task runtime is unavailable")
		require.Contains(t, msg, cancelled)
		tap.waitCancelled(t, up, tap.lastCreated(t))
	})

	t.Run("no worker", func(t *testing.T) {
		t.Parallel()
		tap := newUpstreamTap(t, up)
		m := startMain(t, ModeServe, writeConfig(t, "mcp_tasks: { enabled: true }\n", modernExt(tap.url, "")), nil)
		// Nothing runs the task: its submit waits for a worker until the
		// caller gives up; the remote task is cancelled all the same.
		_, err := worker.EnsureSearchAttributes(t.Context(), temporal.Client(), "default")
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, _, err := callAs(ctx, t, m.URL(), "adopt-noworker", "modern_long_task", long)
			done <- err
		}()
		require.Eventually(t, func() bool { // the durable task was started
			resp, err := temporal.Client().ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: "default", Query: `McpThreadId = "adopt-noworker"`})
			return err == nil && len(resp.GetExecutions()) > 0
		}, time.Minute, 50*time.Millisecond)
		cancel()
		require.Error(t, <-done)
		tap.waitCancelled(t, up, tap.lastCreated(t))
	})

	t.Run("configuration changed", func(t *testing.T) {
		t.Parallel()
		tap := newUpstreamTap(t, up)
		cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", modernExt(tap.url, ""))
		e := &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
		held, release := tap.holdNextAnswer()
		type answer struct {
			code int
			out  map[string]any
		}
		done := make(chan answer, 1)
		go func() {
			code, out, _ := callAs(t.Context(), t, e.m.URL(), "adopt-drift", "modern_long_task", long)
			done <- answer{code, out}
		}()
		var id string
		select {
		case id = <-held:
		case <-time.After(time.Minute):
			t.Fatal("the server's answer never came")
		}
		// The server is disabled while its answer is on the way.
		req, err := http.NewRequest("PATCH", e.m.URL()+"/api/mcp/config", strings.NewReader(`{"server_name": "modern", "enabled": false}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testAdminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		close(release)
		a := <-done
		require.Equal(t, 503, a.code, "%v", a.out)
		msg := a.out["error"].(map[string]any)["message"].(string)
		require.Contains(t, msg, "MCP server 'modern' is no longer enabled in the configuration")
		require.Contains(t, msg, cancelled)
		tap.waitCancelled(t, up, id)
	})

	t.Run("secrets cannot be sealed", func(t *testing.T) {
		t.Parallel()
		tap := newUpstreamTap(t, up)
		// serve without mcp_tasks.secrets_key: the durable task cannot
		// carry the call's request-scoped secret.
		ext := modernExt(tap.url, `, "headers_from_context": {"headers": {"X-Tenant-Token": "tenant_token"}}`)
		m := startMain(t, ModeServe, writeConfig(t, "mcp_tasks: { enabled: true }\n", ext), nil)
		req, err := http.NewRequest("POST", m.URL()+"/api/threads/adopt-seal/tools/modern_long_task/call",
			strings.NewReader(`{"arguments": `+long+`, "secrets": {"tenant_token": "t-123"}}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testUserToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		resp.Body.Close()
		require.Equal(t, 503, resp.StatusCode, "%v", out)
		msg := out["error"].(map[string]any)["message"].(string)
		require.Contains(t, msg, "mcp_tasks.secrets_key is not set")
		require.Contains(t, msg, cancelled)
		tap.waitCancelled(t, up, tap.lastCreated(t))
	})
}
