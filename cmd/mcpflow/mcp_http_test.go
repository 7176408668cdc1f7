package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

const testBobToken = "e2e-bob-token"

// mcpServiceConfig is a config.yaml for the MCP endpoint tests: two users,
// an allowed origin, a small body cap, one tool call in flight per user.
func mcpServiceConfig(addr, workerAddr, queue string, extra string) string {
	return fmt.Sprintf(`server: { addr: %q, worker_addr: %q, shutdown_timeout_seconds: 2, max_body_bytes: 4096,
  max_concurrent_calls_per_user: 1, allowed_origins: ["https://agent.example.com"] }
database: { backend: sqlite, dsn: mcpflow.db }
temporal: { address: %q, namespace: default, task_queue: %s }
mcp_tasks: { enabled: true, poll_interval_seconds: 1 }
workspace: { root: ws }
auth:
  admin_tokens: [%q]
  users: [ { id: alice, token: %q }, { id: bob, token: %q } ]
%s`, addr, workerAddr, temporal.HostPort, queue, testAdminToken, testUserToken, testBobToken, extra)
}

// startMCPEnv runs mcpflow dev with the demo server over HTTP (with its job
// toolset) and the MCP test config.
func startMCPEnv(t *testing.T) *taskEnv {
	t.Helper()
	dir := t.TempDir()
	demo := demoHTTP(t)
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 30, %s}}}`, demo, jobToolset)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extensions_config.json"), []byte(ext), 0o600))
	cfg := filepath.Join(dir, "config.yaml")
	queue := fmt.Sprintf("e2e-mcp-%d", time.Now().UnixNano())
	require.NoError(t, os.WriteFile(cfg, []byte(mcpServiceConfig(testenv.FreeAddr(t), testenv.FreeAddr(t), queue, "")), 0o600))
	return &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
}

// rpc is a raw request to the MCP endpoint.
type rpc struct {
	path    string
	token   string
	session string
	headers map[string]string
	body    string
}

type rpcAnswer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (a rpcAnswer) errorCode() float64 {
	e, _ := a.body["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

func (a rpcAnswer) result() map[string]any {
	r, _ := a.body["result"].(map[string]any)
	return r
}

func doRPC(t *testing.T, base, method string, r rpc) rpcAnswer {
	t.Helper()
	a, err := sendRPC(base, method, r)
	require.NoError(t, err, "%s %s", method, r.path)
	return a
}

// sendRPC is doRPC for goroutines other than the test's.
func sendRPC(base, method string, r rpc) (rpcAnswer, error) {
	req, err := http.NewRequest(method, base+r.path, strings.NewReader(r.body))
	if err != nil {
		return rpcAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
	}
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rpcAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	a := rpcAnswer{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	_ = json.Unmarshal(b, &a.body)
	return a, err
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// initSession initializes a session on a path and returns its id.
func initSession(t *testing.T, base, path, token string, headers map[string]string) string {
	t.Helper()
	a := doRPC(t, base, "POST", rpc{path: path, token: token, headers: headers, body: initBody})
	require.Equal(t, 200, a.status, a.raw)
	sid := a.header.Get("Mcp-Session-Id")
	require.Regexp(t, `^mcp-session-[0-9a-f]{32}$`, sid)
	return sid
}

func TestMCPEndpointHTTP(t *testing.T) {
	e := startMCPEnv(t)
	base := e.m.URL()

	t.Run("auth", func(t *testing.T) {
		a := doRPC(t, base, "POST", rpc{path: "/mcp", body: initBody})
		require.Equal(t, 401, a.status)
		require.True(t, strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer"), a.header)
		a = doRPC(t, base, "POST", rpc{path: "/mcp", token: "wrong", body: initBody})
		require.Equal(t, 401, a.status)
		require.Contains(t, a.header.Get("WWW-Authenticate"), `error="invalid_token"`)
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/x", token: testAdminToken, body: initBody})
		require.Equal(t, 403, a.status, "an admin token is not a user")
	})

	t.Run("origin", func(t *testing.T) {
		a := doRPC(t, base, "POST", rpc{path: "/mcp", token: testUserToken, headers: map[string]string{"Origin": "https://evil.example"}, body: initBody})
		require.Equal(t, 403, a.status)
		a = doRPC(t, base, "POST", rpc{path: "/mcp", token: testUserToken, headers: map[string]string{"Origin": "https://agent.example.com"}, body: initBody})
		require.Equal(t, 200, a.status, a.raw)
		require.Equal(t, "https://agent.example.com", a.header.Get("Access-Control-Allow-Origin"))
		require.Contains(t, a.header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id", "a browser may read the session id")

		// CORS preflights need no token; a foreign origin is refused.
		a = doRPC(t, base, "OPTIONS", rpc{path: "/mcp/threads/web", headers: map[string]string{"Origin": "https://agent.example.com",
			"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id"}})
		require.Equal(t, 204, a.status)
		require.Equal(t, "https://agent.example.com", a.header.Get("Access-Control-Allow-Origin"))
		require.Contains(t, a.header.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id")
		require.Contains(t, a.header.Get("Access-Control-Allow-Methods"), "DELETE")
		a = doRPC(t, base, "OPTIONS", rpc{path: "/mcp", headers: map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}})
		require.Equal(t, 403, a.status)
		require.Empty(t, a.header.Get("Access-Control-Allow-Origin"))

		// mcpflow listens on loopback here: pages of this machine (a
		// local MCP Inspector) are let in without configuration; a name
		// that merely resolves here (DNS rebinding) is not.
		for _, origin := range []string{"http://127.0.0.1:6274", "http://localhost:6274", "http://[::1]:6274"} {
			a = doRPC(t, base, "POST", rpc{path: "/mcp", token: testUserToken, headers: map[string]string{"Origin": origin}, body: initBody})
			require.Equal(t, 200, a.status, "%s: %s", origin, a.raw)
			require.Equal(t, origin, a.header.Get("Access-Control-Allow-Origin"))
		}
		for _, origin := range []string{"http://rebind.example:8080", "http://127.0.0.1.evil.example", "file://127.0.0.1"} {
			a = doRPC(t, base, "POST", rpc{path: "/mcp", token: testUserToken, headers: map[string]string{"Origin": origin}, body: initBody})
			require.Equal(t, 403, a.status, origin)
		}
	})

	t.Run("id null", func(t *testing.T) {
		// Neither a request nor a notification: refused, not dropped.
		a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/x", token: testUserToken,
			body: `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`})
		require.Equal(t, 400, a.status, a.raw)
		require.Equal(t, -32600.0, a.errorCode(), a.raw)
	})

	t.Run("threads", func(t *testing.T) {
		// Thread ids are per user: bob's thread id is free for alice, whose
		// session starts a thread of her own, as on any id she never used.
		initSession(t, base, "/mcp/threads/bobs", testBobToken, nil)
		initSession(t, base, "/mcp/threads/bobs", testUserToken, nil)
		initSession(t, base, "/mcp", testUserToken, map[string]string{"Mcpflow-Thread-Id": "bobs"})
		req, _ := http.NewRequest("DELETE", base+"/api/threads/bobs", nil)
		req.Header.Set("Authorization", "Bearer "+testUserToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 204, resp.StatusCode)
		code, _ := get(t, base+"/api/threads/bobs", testBobToken)
		require.Equal(t, 200, code, "alice deleted her thread, not bob's")
		a := doRPC(t, base, "POST", rpc{path: "/mcp", token: testUserToken, headers: map[string]string{"Mcpflow-Thread-Id": "../x"}, body: initBody})
		require.Equal(t, 400, a.status, "a bad thread id")

		sid := initSession(t, base, "/mcp/threads/doomed", testUserToken, nil)
		req, _ = http.NewRequest("DELETE", base+"/api/threads/doomed", nil)
		req.Header.Set("Authorization", "Bearer "+testUserToken)
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 204, resp.StatusCode)
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/doomed", token: testUserToken, session: sid, body: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`})
		require.Equal(t, 410, a.status, "a deleted thread is gone")

		// /mcp without the header is the user's default thread, one per
		// user, whose id nobody else may use.
		initSession(t, base, "/mcp", testUserToken, nil)
		initSession(t, base, "/mcp", testBobToken, nil)
		code, _ = get(t, base+"/api/threads/default@alice", testUserToken)
		require.Equal(t, 200, code)
		code, _ = get(t, base+"/api/threads/default@bob", testBobToken)
		require.Equal(t, 200, code)
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/default@carol", token: testBobToken, body: initBody})
		require.Equal(t, 400, a.status, "another user's default thread is reserved")
		a = doRPC(t, base, "POST", rpc{path: "/api/threads", token: testBobToken, body: `{"thread_id": "default@carol"}`})
		require.Equal(t, 400, a.status, a.raw)
	})

	t.Run("sessions", func(t *testing.T) {
		list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/s1", token: testUserToken, body: list})
		require.Equal(t, 400, a.status, "a request before initialize")
		require.EqualValues(t, mcp.INVALID_REQUEST, a.errorCode())
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/s1", token: testUserToken, session: "mcp-session-00000000000000000000000000000000", body: list})
		require.Equal(t, 404, a.status)
		require.EqualValues(t, -32001, a.errorCode())

		sid := initSession(t, base, "/mcp/threads/s1", testUserToken, nil)
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/s1", token: testUserToken, session: sid, body: list})
		require.Equal(t, 200, a.status, a.raw)
		require.NotEmpty(t, a.result()["tools"])
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/s2", token: testUserToken, session: sid, body: list})
		require.Equal(t, 404, a.status, "a session belongs to its thread")
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/s1", token: testBobToken, session: sid, body: list})
		require.Equal(t, 404, a.status, "and to its user")
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/s1", token: testUserToken, session: sid, headers: map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, body: list})
		require.Equal(t, 400, a.status, "an unsupported protocol version")

		a = doRPC(t, base, "DELETE", rpc{path: "/mcp/threads/s1", token: testUserToken, session: sid})
		require.Equal(t, 204, a.status)
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/s1", token: testUserToken, session: sid, body: list})
		require.Equal(t, 404, a.status, "a deleted session is gone")
		a = doRPC(t, base, "DELETE", rpc{path: "/mcp/threads/s1", token: testUserToken, session: sid})
		require.Equal(t, 404, a.status)
		a = doRPC(t, base, "PUT", rpc{path: "/mcp/threads/s1", token: testUserToken, session: sid})
		require.Equal(t, 405, a.status)
	})

	t.Run("negotiation", func(t *testing.T) {
		a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/n1", token: testUserToken, body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`})
		require.Equal(t, 200, a.status, a.raw)
		require.Equal(t, "2025-06-18", a.result()["protocolVersion"])
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/n1", token: testUserToken, body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2031-01-01"}}`})
		require.Equal(t, "2025-11-25", a.result()["protocolVersion"], "an unknown version gets the latest")
		caps := a.result()["capabilities"].(map[string]any)
		require.Equal(t, map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}, caps["tasks"])
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/n1", token: testUserToken, body: `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`})
		require.Equal(t, 200, a.status)
		require.EqualValues(t, mcp.METHOD_NOT_FOUND, a.errorCode(), "2026-07-28 clients fall back to initialize")
	})

	t.Run("bad requests", func(t *testing.T) {
		sid := initSession(t, base, "/mcp/threads/b1", testUserToken, nil)
		a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `[` + initBody + `]`})
		require.Equal(t, 400, a.status, "batches")
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `{"jsonrpc":"1.0","id":1,"method":"ping"}`})
		require.Equal(t, 400, a.status)
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `{nope`})
		require.Equal(t, 400, a.status)
		require.EqualValues(t, mcp.PARSE_ERROR, a.errorCode())
		// JSON's whitespace around a message is JSON; a Unicode space is not.
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: " \t\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n "})
		require.Equal(t, 200, a.status, a.raw)
		for _, space := range []string{"\u00a0", "\u2028", "\v"} {
			a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: space + `{"jsonrpc":"2.0","id":1,"method":"ping"}`})
			require.Equal(t, 400, a.status, "%q before the message", space)
			require.EqualValues(t, mcp.PARSE_ERROR, a.errorCode())
		}
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, headers: map[string]string{"Content-Type": "text/plain"}})
		require.Equal(t, 415, a.status)
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo_echo","arguments":{"message":"` + strings.Repeat("x", 5000) + `"}}}`})
		require.Equal(t, 413, a.status, "server.max_body_bytes")
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `{"jsonrpc":"2.0","id":1,"method":"nope/nope"}`})
		require.EqualValues(t, mcp.METHOD_NOT_FOUND, a.errorCode())
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo_echo","arguments":[1]}}`})
		require.EqualValues(t, mcp.INVALID_PARAMS, a.errorCode())
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo_echo","arguments":{"message":"hi"},"_meta":{"io.mcpflow/secrets":{"k":1}}}}`})
		require.EqualValues(t, mcp.INVALID_PARAMS, a.errorCode(), "secrets are strings")
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{"cursor":"garbage"}}`})
		require.EqualValues(t, mcp.INVALID_PARAMS, a.errorCode())
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"../../etc"}}`})
		require.EqualValues(t, mcp.INVALID_PARAMS, a.errorCode())
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`})
		require.Equal(t, 202, a.status)
		// An upstream tool error is a result with isError, not a JSON-RPC error.
		a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/b1", token: testUserToken, session: sid, body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"demo_fail","arguments":{"message":"it broke"}}}`})
		require.Equal(t, 200, a.status, a.raw)
		require.Equal(t, true, a.result()["isError"], a.raw)
		require.Contains(t, a.raw, "it broke")
		require.EqualValues(t, 7, a.body["id"])
	})

	t.Run("calls in flight", func(t *testing.T) {
		sid := initSession(t, base, "/mcp/threads/busy", testUserToken, nil)
		call := func(id int, tool, args string) rpcAnswer {
			a, err := sendRPC(base, "POST", rpc{path: "/mcp/threads/busy", token: testUserToken, session: sid,
				body: fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)})
			if err != nil {
				a.raw = err.Error()
			}
			return a
		}
		// With max_concurrent_calls_per_user 1, a call while a slow one
		// runs answers 429. (Whichever call takes the slot first wins, so
		// a slow call that lost the race is sent again.)
		var busy, slowAnswer rpcAnswer
		for busy.status != 429 {
			slow := make(chan rpcAnswer, 1)
			go func() { slow <- call(1, "demo_slow", `{"seconds": 3}`) }()
			for busy.status != 429 {
				busy = call(2, "demo_echo", `{"message": "x"}`)
				require.Contains(t, []int{200, 429}, busy.status, busy.raw)
				select {
				case slowAnswer = <-slow:
					require.Equal(t, 429, slowAnswer.status, "the slow call ended before a second call was refused: %s", slowAnswer.raw)
					busy = rpcAnswer{} // it lost the race: send it again
				default:
					continue
				}
				break
			}
			if busy.status == 429 {
				slowAnswer = <-slow
			}
		}
		require.Equal(t, "1", busy.header.Get("Retry-After"))
		require.EqualValues(t, 2, busy.body["id"])
		require.Equal(t, 200, slowAnswer.status, slowAnswer.raw)
		require.Equal(t, false, slowAnswer.result()["isError"])
		// tasks/* do not count as tool calls.
		a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/busy", token: testUserToken, session: sid, body: `{"jsonrpc":"2.0","id":3,"method":"tasks/list"}`})
		require.Equal(t, 200, a.status, a.raw)
	})

	t.Run("notifications/cancelled", func(t *testing.T) {
		sid := initSession(t, base, "/mcp/threads/c1", testUserToken, nil)
		done := make(chan rpcAnswer, 1)
		go func() {
			a, _ := sendRPC(base, "POST", rpc{path: "/mcp/threads/c1", token: testUserToken, session: sid,
				body: `{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"demo_slow","arguments":{"seconds":25}}}`})
			done <- a
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/c1", token: testUserToken, session: sid,
				body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1","reason":"user"}}`})
			require.Equal(t, 202, a.status)
			select {
			case a := <-done:
				require.Equal(t, 200, a.status, a.raw)
				require.EqualValues(t, -32800, a.errorCode(), "the cancelled call ends: %s", a.raw)
				return
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				t.Fatal("notifications/cancelled did not end the call")
			}
		}
	})
}

// sseEvent is one event of an SSE stream.
type sseEvent struct {
	id, data string
}

// openStream opens the GET stream of a session and returns its events.
func openStream(t *testing.T, ctx context.Context, url, sid, lastEventID string) (*http.Response, <-chan sseEvent) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testUserToken)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	events := make(chan sseEvent, 100)
	go func() {
		defer close(events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.id != "" || ev.data != "" {
					events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return resp, events
}

// nextStatus waits for a notifications/tasks/status of a task on a stream.
func nextStatus(t *testing.T, events <-chan sseEvent, taskID string) (sseEvent, map[string]any) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "the stream ended")
			var n map[string]any
			if ev.data == "" || json.Unmarshal([]byte(ev.data), &n) != nil {
				continue
			}
			params, _ := n["params"].(map[string]any)
			if n["method"] == "notifications/tasks/status" && params["taskId"] == taskID {
				return ev, params
			}
		case <-timeout:
			t.Fatalf("no notifications/tasks/status for %s", taskID)
		}
	}
}

func TestMCPEndpointStream(t *testing.T) {
	e := startMCPEnv(t)
	base := e.m.URL()
	url := base + "/mcp/threads/st"
	sid := initSession(t, base, "/mcp/threads/st", testUserToken, nil)

	a := doRPC(t, base, "GET", rpc{path: "/mcp/threads/st", token: testUserToken, session: sid, headers: map[string]string{"Accept": "application/json"}})
	require.Equal(t, 406, a.status, "the stream needs Accept: text/event-stream")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, events := openStream(t, ctx, url, sid, "")
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	prime := <-events
	require.Equal(t, "0", prime.id, "a priming event with the inbox position")

	// A task that completes and one that fails: both are pushed, in order.
	ok := e.submit(t, "st", "demo_submit_job", `{"duration_seconds": 0}`)
	first, params := nextStatus(t, events, ok)
	require.Equal(t, "completed", params["status"])
	require.Nil(t, params["ttl"])
	require.Contains(t, params, "createdAt")
	bad := e.submit(t, "st", "demo_submit_job", `{"duration_seconds": 0, "outcome": "failed", "error": "disk full"}`)
	_, params = nextStatus(t, events, bad)
	require.Equal(t, "failed", params["status"])
	require.Equal(t, "disk full", params["statusMessage"])

	// Reconnecting with Last-Event-ID while the old stream is still open
	// (the client lost it; the server did not notice yet) is served at
	// once: the new stream replaces the old one, which ends. It resumes
	// after that event: the failure is sent again, the completion is not.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	resp2, events2 := openStream(t, ctx2, url, sid, first.id)
	require.Equal(t, 200, resp2.StatusCode, "one stream per session: the newest")
	oldEnded := time.After(30 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-events: // closed when the server ended the old stream
		case <-oldEnded:
			t.Fatal("the replaced stream did not end")
		}
	}
	ev, params := nextStatus(t, events2, bad)
	require.Equal(t, "failed", params["status"])
	require.NotEqual(t, first.id, ev.id)

	// tasks/result over SSE: the answer is one event on the POST's stream.
	a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/st", token: testUserToken, session: sid,
		body: `{"jsonrpc":"2.0","id":9,"method":"tasks/result","params":{"taskId":"` + ok + `"}}`})
	require.Equal(t, 200, a.status, a.raw)
	require.Equal(t, true, a.result() != nil, a.raw)
	meta := a.result()["_meta"].(map[string]any)
	require.Equal(t, map[string]any{"taskId": ok}, meta["io.modelcontextprotocol/related-task"])
}

// TestMCPEndpointTwoServeProcesses: a task created through one serve
// process is read, listed and cancelled through another, with the same MCP
// session (sessions live in the database).
func TestMCPEndpointTwoServeProcesses(t *testing.T) {
	dir := t.TempDir()
	demo := demoHTTP(t)
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 30, %s}}}`, demo, jobToolset)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extensions_config.json"), []byte(ext), 0o600))
	queue := fmt.Sprintf("e2e-two-%d", time.Now().UnixNano())
	db := ""
	if url := os.Getenv("TEST_DATABASE_URL"); url != "" {
		db = fmt.Sprintf("database: { backend: postgres, dsn: %q }\n", testenv.PostgresURL(t))
	}
	mains := map[string]*Main{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, mode := range []string{"serve-a", "serve-b", "worker"} {
		cfg := filepath.Join(dir, mode+".yaml")
		body := mcpServiceConfig(testenv.FreeAddr(t), testenv.FreeAddr(t), queue, "")
		if db != "" {
			body = strings.Replace(body, "database: { backend: sqlite, dsn: mcpflow.db }\n", db, 1)
		}
		require.NoError(t, os.WriteFile(cfg, []byte(body), 0o600))
		m := ModeServe
		if mode == "worker" {
			m = ModeWorker
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			main := &Main{Mode: m, ConfigPath: cfg, Env: noEnv, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			err := main.Open(context.Background())
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("open %s: %v", mode, err)
				return
			}
			mains[mode] = main
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, m := range mains {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = m.Close(ctx)
			cancel()
		}
	})
	require.Len(t, mains, 3)
	require.Eventually(t, func() bool { return mains["worker"].WorkerPolling() }, 30*time.Second, 50*time.Millisecond)

	// Client A creates a task through serve A (the thread is new on every
	// run: with TEST_DATABASE_URL the database outlives the test).
	thread := fmt.Sprintf("two-%d", time.Now().UnixNano())
	a, _ := mcpGoClient(t, mains["serve-a"].URL()+"/mcp/threads/"+thread, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	created, rpcErr, err := taskCall(ctx, a, "demo_submit_job", map[string]any{"duration_seconds": 600})
	require.NoError(t, err)
	require.Nil(t, rpcErr)
	id := created.Task.TaskId
	sid := a.GetSessionId()
	require.NotEmpty(t, sid)

	// Client B continues the same session through serve B.
	b, err := mcpclient.NewStreamableHttpClient(mains["serve-b"].URL()+"/mcp/threads/"+thread,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testUserToken}), transport.WithSession(sid))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.NoError(t, b.Start(context.Background()))
	got, err := b.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
	require.NoError(t, err)
	require.Equal(t, mcp.TaskStatusWorking, got.Status)
	list, err := b.ListTasks(ctx, mcp.ListTasksRequest{})
	require.NoError(t, err)
	require.Len(t, list.Tasks, 1)
	require.Equal(t, id, list.Tasks[0].TaskId)
	cancelled, err := b.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: id}})
	require.NoError(t, err)
	require.Equal(t, mcp.TaskStatusCancelled, cancelled.Status)

	// And A sees the outcome.
	res, err := a.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	done, err := a.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
	require.NoError(t, err)
	require.Equal(t, mcp.TaskStatusCancelled, done.Status)
}
