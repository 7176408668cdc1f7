package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/store"
)

// modernBundle is the MCP endpoint with a task store, for 2026-07-28
// requests.
type modernBundle struct {
	db  *store.DB
	srv *httptest.Server

	mu        sync.Mutex
	cancels   []string
	answers   []mcpflow.InputAnswer
	answerErr error
}

func newModern(t *testing.T) *modernBundle {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.BackendSQLite, filepath.Join(t.TempDir(), "m.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	for _, th := range []string{"th", "other"} {
		_, _, err = db.CreateThread(ctx, &mcpflow.Thread{ID: th, UserID: "u"})
		require.NoError(t, err)
	}
	b := &modernBundle{db: db}
	s := New(Options{Tools: unknownTools{}, Sessions: db, Events: db, Tasks: db, KeepAlive: time.Hour, Version: "9.9.9",
		CancelTask: func(_ context.Context, t *mcpflow.Task) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.cancels = append(b.cancels, t.ID)
			return nil
		},
		AnswerInput: func(_ context.Context, _ *mcpflow.Task, a mcpflow.InputAnswer) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.answers = append(b.answers, a)
			return b.answerErr
		}})
	t.Cleanup(s.Stop)
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeMCP(w, r, &mcpflow.MCPRequest{UserID: "u", ThreadID: "th"})
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// unknownTools is a thread without tools whose calls find none.
type unknownTools struct{ noTools }

func (unknownTools) CallTool(context.Context, mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	return nil, mcpflow.Errorf(mcpflow.ENotFound, "no such tool")
}

// env is a 2026-07-28 _meta; ext adds the Tasks extension.
func env(ext bool) map[string]any {
	caps := map[string]any{}
	if ext {
		caps["extensions"] = map[string]any{ExtTasks: map[string]any{}}
	}
	return map[string]any{metaProtocol: ProtocolVersion2026, metaClientCaps: caps,
		metaClientInfo: map[string]any{"name": "test", "version": "1"}}
}

// post sends one request: params (with _meta unless given) and headers
// (the standard ones unless overridden; a "" value removes one).
func (b *modernBundle) post(t *testing.T, method string, params map[string]any, headers map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if _, ok := params["_meta"]; !ok {
		params["_meta"] = env(false)
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params})
	require.NoError(t, err)
	r, err := http.NewRequest("POST", b.srv.URL, strings.NewReader(string(body)))
	require.NoError(t, err)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set(HeaderProtocolVersion, ProtocolVersion2026)
	r.Header.Set(headerMethod, method)
	for k, v := range headers {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, "req-1", out["id"], "every answer echoes the request id: %v", out)
	return resp.StatusCode, resp.Header, out
}

func rpcCode(out map[string]any) float64 {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func (b *modernBundle) task(t *testing.T, thread string, status mcpflow.Status, edit func(*mcpflow.Task)) *mcpflow.Task {
	t.Helper()
	task := &mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: "u", ThreadID: thread, ServerName: "s", DriverName: mcpflow.DriverNative,
		RemoteTaskID: mcpflow.NewTaskID(), TaskName: "research", Status: status}
	if edit != nil {
		edit(task)
	}
	require.NoError(t, b.db.CreateTask(context.Background(), task))
	return task
}

// TestModernRequestValidation: a 2026-07-28 request is checked in the
// revision's order, each refusal with its code and HTTP status.
func TestModernRequestValidation(t *testing.T) {
	t.Parallel()
	b := newModern(t)
	noVersion := env(false)
	delete(noVersion, metaProtocol)
	noCaps := env(false)
	delete(noCaps, metaClientCaps)
	v999 := env(false)
	v999[metaProtocol] = "v999.0.0"
	for _, tc := range []struct {
		name    string
		method  string
		params  map[string]any
		headers map[string]string
		status  int
		code    float64
	}{
		{"modern header, _meta without a version", "tools/list", map[string]any{"_meta": noVersion}, nil, 400, -32602},
		{"_meta version, no header", "tools/list", nil, map[string]string{HeaderProtocolVersion: ""}, 400, -32020},
		{"header and _meta disagree", "tools/list", map[string]any{"_meta": v999}, nil, 400, -32020},
		{"no client capabilities", "tools/list", map[string]any{"_meta": noCaps}, nil, 400, -32602},
		{"unsupported version", "tools/list", map[string]any{"_meta": v999}, map[string]string{HeaderProtocolVersion: "v999.0.0"}, 400, -32022},
		{"no Mcp-Method", "tools/list", nil, map[string]string{headerMethod: ""}, 400, -32020},
		{"Mcp-Method mismatch", "tools/list", nil, map[string]string{headerMethod: "tools/call"}, 400, -32020},
		{"Mcp-Method in another case", "tools/list", nil, map[string]string{headerMethod: "TOOLS/LIST"}, 400, -32020},
		{"tools/call without Mcp-Name", "tools/call", map[string]any{"name": "x"}, nil, 400, -32020},
		{"tools/call with another Mcp-Name", "tools/call", map[string]any{"name": "x"}, map[string]string{headerName: "y"}, 400, -32020},
		{"tools/call with bad Base64", "tools/call", map[string]any{"name": "x"}, map[string]string{headerName: "=?base64?eA?="}, 400, -32020},
		{"tasks/get without Mcp-Name", "tasks/get", map[string]any{"taskId": "x", "_meta": env(true)}, nil, 400, -32020},
		{"unknown method", "unknown/method", nil, nil, 404, -32601},
		{"removed: ping", "ping", nil, nil, 404, -32601},
		{"removed: tasks/result", "tasks/result", map[string]any{"taskId": "x"}, nil, 404, -32601},
		{"removed: tasks/list", "tasks/list", nil, nil, 404, -32601},
		{"removed: logging/setLevel", "logging/setLevel", map[string]any{"level": "info"}, nil, 404, -32601},
		{"initialize with a 2026 _meta", "initialize", map[string]any{"protocolVersion": "2025-11-25"}, nil, 404, -32601},
		{"tasks/get without the Tasks extension", "tasks/get", map[string]any{"taskId": "x"}, map[string]string{headerName: "x"}, 400, -32021},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, out := b.post(t, tc.method, tc.params, tc.headers)
			require.Equal(t, tc.status, status, "%v", out)
			require.Equal(t, tc.code, rpcCode(out), "%v", out)
		})
	}
	_, _, out := b.post(t, "tools/list", map[string]any{"_meta": v999}, map[string]string{HeaderProtocolVersion: "v999.0.0"})
	data := out["error"].(map[string]any)["data"].(map[string]any)
	require.Equal(t, "v999.0.0", data["requested"])
	require.Contains(t, data["supported"], "2026-07-28")
	require.Contains(t, data["supported"], "2025-11-25")
	_, _, out = b.post(t, "tasks/get", map[string]any{"taskId": "x"}, map[string]string{headerName: "x"})
	require.Equal(t, map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{ExtTasks: map[string]any{}}}},
		out["error"].(map[string]any)["data"])

	// Values are compared as sent: Base64-encoded and padded ones decode.
	status, _, out := b.post(t, "tools/call", map[string]any{"name": "x"}, map[string]string{headerName: "=?base64?eA==?="})
	require.Equal(t, 200, status, "%v", out)
	require.Equal(t, -32602.0, rpcCode(out), "the unknown tool, past the headers: %v", out)
	status, _, out = b.post(t, "tools/call", map[string]any{"name": "x"}, map[string]string{headerName: "  x  "})
	require.Equal(t, 200, status, "%v", out)
	require.Equal(t, -32602.0, rpcCode(out), "%v", out)

	// No GET stream, no session to DELETE.
	for _, m := range []string{"GET", "DELETE"} {
		r, err := http.NewRequest(m, b.srv.URL, nil)
		require.NoError(t, err)
		r.Header.Set(HeaderProtocolVersion, ProtocolVersion2026)
		r.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, m)
		require.Equal(t, "POST", resp.Header.Get("Allow"))
	}
}

// TestModernDiscoverAndList: server/discover names every revision served,
// the tools capability and the Tasks extension; results carry resultType,
// cache hints where the revision needs them, and serverInfo in _meta; no
// session is minted.
func TestModernDiscoverAndList(t *testing.T) {
	t.Parallel()
	b := newModern(t)
	status, h, out := b.post(t, "server/discover", nil, nil)
	require.Equal(t, 200, status, "%v", out)
	require.Empty(t, h.Get(HeaderSessionID))
	res := out["result"].(map[string]any)
	require.Equal(t, "complete", res["resultType"])
	require.Equal(t, []any{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, res["supportedVersions"])
	require.Equal(t, map[string]any{"tools": map[string]any{}, "logging": map[string]any{}, "extensions": map[string]any{ExtTasks: map[string]any{}}}, res["capabilities"])
	require.Equal(t, 0.0, res["ttlMs"])
	require.Equal(t, "private", res["cacheScope"])
	require.Equal(t, map[string]any{"name": "mcpflow", "version": "9.9.9"}, res["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"])

	status, _, out = b.post(t, "tools/list", nil, nil)
	require.Equal(t, 200, status)
	res = out["result"].(map[string]any)
	require.Equal(t, "complete", res["resultType"])
	require.Equal(t, []any{}, res["tools"])
	require.Equal(t, 0.0, res["ttlMs"])
	require.Equal(t, "private", res["cacheScope"])
}

// TestModernTasksExtension: tasks/get shows a task as the extension does
// (the question as inputRequests, the result, the error), tasks/update
// delivers the answer to the current question and ignores other keys,
// tasks/cancel sends the cancel and acknowledges; another thread's task
// does not exist.
func TestModernTasksExtension(t *testing.T) {
	t.Parallel()
	b := newModern(t)
	question := map[string]any{"message": "Which year?", "requested_schema": map[string]any{"type": "object",
		"properties": map[string]any{"year": map[string]any{"type": "string"}}, "required": []any{"year"}}}
	asking := b.task(t, "th", mcpflow.StatusInputRequired, func(tk *mcpflow.Task) { tk.InputRequired, tk.InputAnswerable = question, true })
	done := b.task(t, "th", mcpflow.StatusCompleted, func(tk *mcpflow.Task) { tk.Result = map[string]any{"pages": json.Number("3")} })
	broken := b.task(t, "th", mcpflow.StatusFailed, func(tk *mcpflow.Task) { msg := "the reactor melted"; tk.Error = &msg })
	foreign := b.task(t, "other", mcpflow.StatusWorking, nil)
	get := func(id string) map[string]any {
		t.Helper()
		status, _, out := b.post(t, "tasks/get", map[string]any{"taskId": id, "_meta": env(true)}, map[string]string{headerName: id})
		require.Equal(t, 200, status, "%v", out)
		return out
	}

	res := get(asking.ID)["result"].(map[string]any)
	require.Equal(t, "complete", res["resultType"])
	require.Equal(t, "input_required", res["status"])
	require.Equal(t, "Which year?", res["statusMessage"])
	require.Equal(t, 5000.0, res["pollIntervalMs"])
	require.Nil(t, res["ttlMs"])
	require.Contains(t, res, "ttlMs")
	key := "mcpflow-question-1"
	require.Equal(t, map[string]any{key: map[string]any{"method": "elicitation/create",
		"params": map[string]any{"mode": "form", "message": "Which year?", "requestedSchema": question["requested_schema"]}}}, res["inputRequests"])

	res = get(done.ID)["result"].(map[string]any)
	require.Equal(t, "completed", res["status"])
	require.NotContains(t, res, "pollIntervalMs")
	inner := res["result"].(map[string]any)
	require.Equal(t, "complete", inner["resultType"], "ext-tasks clients need it on the inlined result")
	require.Equal(t, map[string]any{"pages": 3.0}, inner["structuredContent"])
	require.NotContains(t, inner["_meta"], "io.modelcontextprotocol/related-task")

	res = get(broken.ID)["result"].(map[string]any)
	require.Equal(t, "failed", res["status"])
	require.Equal(t, map[string]any{"code": -32603.0, "message": "the reactor melted"}, res["error"])

	out := get(foreign.ID)
	require.Equal(t, -32602.0, rpcCode(out), "another thread's task does not exist: %v", out)

	// tasks/update: the answer to the open question is delivered (and
	// names it); other keys are ignored.
	update := func(id string, responses map[string]any) map[string]any {
		t.Helper()
		status, _, out := b.post(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": responses, "_meta": env(true)},
			map[string]string{headerName: id})
		require.Equal(t, 200, status, "%v", out)
		return out
	}
	out = update(asking.ID, map[string]any{"unknown-key": map[string]any{"ignored": true}})
	require.Equal(t, map[string]any{"resultType": "complete", "_meta": out["result"].(map[string]any)["_meta"]}, out["result"])
	require.Empty(t, b.answers)
	out = update(asking.ID, map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"year": 7}}})
	require.Equal(t, -32602.0, rpcCode(out), "content that fails the requested schema: %v", out)
	update(asking.ID, map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"year": "1999"}}})
	require.Equal(t, []mcpflow.InputAnswer{{Action: "accept", Content: map[string]any{"year": "1999"}, QuestionID: 1}}, b.answers)

	// tasks/cancel acknowledges; a task that ended is acknowledged
	// without a signal.
	for _, tk := range []*mcpflow.Task{asking, done} {
		status, _, out := b.post(t, "tasks/cancel", map[string]any{"taskId": tk.ID, "_meta": env(true)}, map[string]string{headerName: tk.ID})
		require.Equal(t, 200, status, "%v", out)
		require.Equal(t, "complete", out["result"].(map[string]any)["resultType"])
		require.NotContains(t, out["result"], "status")
	}
	require.Equal(t, []string{asking.ID}, b.cancels)
}

// TestModernTasksExtensionServerRequests: a native task's own input
// requests are shown as its server keyed them; tasks/update answers some
// of them (each elicitation's answer checked against its schema), relayed
// as they are, and ignores keys of no open request.
func TestModernTasksExtensionServerRequests(t *testing.T) {
	t.Parallel()
	b := newModern(t)
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}
	requests := map[string]any{
		"name":  map[string]any{"method": "elicitation/create", "params": map[string]any{"mode": "form", "message": "Name?", "requestedSchema": schema}},
		"roots": map[string]any{"method": "roots/list"},
	}
	asking := b.task(t, "th", mcpflow.StatusInputRequired, func(tk *mcpflow.Task) {
		tk.InputRequired = map[string]any{"message": "Name?", "requested_schema": schema, mcpflow.InputRequestsKey: requests}
		tk.InputAnswerable = true
	})
	status, _, out := b.post(t, "tasks/get", map[string]any{"taskId": asking.ID, "_meta": env(true)}, map[string]string{headerName: asking.ID})
	require.Equal(t, 200, status, "%v", out)
	require.Equal(t, requests, out["result"].(map[string]any)["inputRequests"])

	update := func(responses map[string]any) map[string]any {
		t.Helper()
		status, _, out := b.post(t, "tasks/update", map[string]any{"taskId": asking.ID, "inputResponses": responses, "_meta": env(true)},
			map[string]string{headerName: asking.ID})
		require.Equal(t, 200, status, "%v", out)
		return out
	}
	update(map[string]any{"mcpflow-question-1": map[string]any{"action": "accept", "content": map[string]any{"name": "x"}}})
	require.Empty(t, b.answers, "mcpflow's own key is not one of the server's")
	out = update(map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": 7}}})
	require.Equal(t, -32602.0, rpcCode(out), "content that fails the request's schema: %v", out)
	out = update(map[string]any{"roots": "not an object"})
	require.Equal(t, -32602.0, rpcCode(out), "%v", out)
	require.Empty(t, b.answers)

	update(map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, "other": map[string]any{}})
	require.Len(t, b.answers, 1)
	require.Equal(t, 1, b.answers[0].QuestionID)
	require.Equal(t, map[string]json.RawMessage{"name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}, b.answers[0].Responses,
		"only the open request's answer, as the client wrote it")
}

// TestModernTasksExtensionToolError: a native task whose tool answered an
// error result failed in mcpflow; the extension shows it as completed with
// that isError result, as the server gave it, while a failure of another
// kind stays failed with an error.
func TestModernTasksExtensionToolError(t *testing.T) {
	t.Parallel()
	b := newModern(t)
	toolErr := b.task(t, "th", mcpflow.StatusFailed, func(tk *mcpflow.Task) {
		msg := "no such file"
		tk.Error, tk.Content = &msg, json.RawMessage(`[{"type":"text","text":"no such file"},{"type":"text","text":"try another"}]`)
	})
	status, _, out := b.post(t, "tasks/get", map[string]any{"taskId": toolErr.ID, "_meta": env(true)}, map[string]string{headerName: toolErr.ID})
	require.Equal(t, 200, status, "%v", out)
	res := out["result"].(map[string]any)
	require.Equal(t, "completed", res["status"], "%v", res)
	require.NotContains(t, res, "error")
	inner := res["result"].(map[string]any)
	require.Equal(t, true, inner["isError"])
	require.Equal(t, []any{map[string]any{"type": "text", "text": "no such file"}, map[string]any{"type": "text", "text": "try another"}}, inner["content"])
}

// TestModernListen: subscriptions/listen acknowledges first (the caller's
// own tasks among taskIds), pushes notifications/tasks as the task
// changes, and ends with its result once every task ended.
func TestModernListen(t *testing.T) {
	t.Parallel()
	b := newModern(t)
	mine := b.task(t, "th", mcpflow.StatusWorking, nil)
	foreign := b.task(t, "other", mcpflow.StatusWorking, nil)

	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 42, "method": "subscriptions/listen",
		"params": map[string]any{"_meta": env(true), "notifications": map[string]any{"taskIds": []any{mine.ID, foreign.ID}, "toolsListChanged": true}}})
	require.NoError(t, err)
	r, err := http.NewRequest("POST", b.srv.URL, strings.NewReader(string(body)))
	require.NoError(t, err)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set(HeaderProtocolVersion, ProtocolVersion2026)
	r.Header.Set(headerMethod, "subscriptions/listen")
	resp, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	frames := make(chan map[string]any, 10)
	go func() {
		defer close(frames)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					frames <- m
				}
			}
		}
	}()
	next := func() map[string]any {
		t.Helper()
		select {
		case f, ok := <-frames:
			require.True(t, ok, "the stream ended early")
			return f
		case <-time.After(30 * time.Second):
			t.Fatal("no frame")
			return nil
		}
	}
	sub := map[string]any{"io.modelcontextprotocol/subscriptionId": 42.0}
	ack := next()
	require.Equal(t, "notifications/subscriptions/acknowledged", ack["method"])
	require.Equal(t, map[string]any{"notifications": map[string]any{"taskIds": []any{mine.ID}}, "_meta": sub}, ack["params"],
		"only the caller's own task, and no list-changed notifications")
	first := next()
	require.Equal(t, "notifications/tasks", first["method"])
	require.Equal(t, "working", first["params"].(map[string]any)["status"])
	require.Equal(t, sub, first["params"].(map[string]any)["_meta"])

	// The task completes: one more notification, then the listen result.
	cur, err := b.db.GetTask(context.Background(), mine.ID)
	require.NoError(t, err)
	cur.Status, cur.Result = mcpflow.StatusCompleted, "done"
	require.NoError(t, b.db.UpdateTask(context.Background(), cur))
	_, err = b.db.AppendEvent(context.Background(), &mcpflow.ThreadEvent{UserID: "u", ThreadID: "th", TaskID: mine.ID, EventVersion: 1,
		Status: mcpflow.StatusCompleted, Payload: []byte(`{}`)})
	require.NoError(t, err)
	last := next()
	require.Equal(t, "notifications/tasks", last["method"])
	require.Equal(t, "completed", last["params"].(map[string]any)["status"])
	end := next()
	require.Equal(t, 42.0, end["id"])
	require.Equal(t, "complete", end["result"].(map[string]any)["resultType"])
	require.Equal(t, 42.0, end["result"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"])
}

// TestModernCallRetryFields: the retry fields of an input_required answer
// are checked like the rest of the call's params: a requestState that is
// not a string is -32602 naming the field, and the value is not echoed.
func TestModernCallRetryFields(t *testing.T) {
	t.Parallel()
	b := newModern(t)
	h := map[string]string{headerName: "echo"}
	status, _, out := b.post(t, "tools/call", map[string]any{"name": "echo", "requestState": map[string]any{"secret-state": 1}}, h)
	require.Equal(t, 200, status, "%v", out)
	require.Equal(t, float64(-32602), rpcCode(out), "%v", out)
	msg := out["error"].(map[string]any)["message"].(string)
	require.Contains(t, msg, "requestState must be a string")
	require.NotContains(t, msg, "secret-state")
	// A string requestState passes the params check (this thread has no tools).
	_, _, out = b.post(t, "tools/call", map[string]any{"name": "echo", "requestState": "opaque"}, h)
	require.Contains(t, out["error"].(map[string]any)["message"], "Unknown tool: echo")
}

// progressTools is a thread whose every call reports one progress step
// through the call's relay, then answers.
type progressTools struct{ noTools }

func (progressTools) CallTool(_ context.Context, tc mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	if tc.Relay == nil || tc.Relay.Progress == nil {
		return nil, mcpflow.Errorf(mcpflow.EInternal, "no progress relay")
	}
	tc.Relay.Progress(map[string]any{"progress": 1, "total": 2})
	return &mcpflow.ToolResult{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"done"}`)}}, nil
}

// TestProgressTokenRelayed: the server's progress of a call reaches the
// client on the call's SSE answer with the client's own progressToken,
// of the same JSON type and value (a large integer stays exact).
func TestProgressTokenRelayed(t *testing.T) {
	t.Parallel()
	s := New(Options{Tools: progressTools{}, KeepAlive: time.Hour})
	t.Cleanup(s.Stop)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeMCP(w, r, &mcpflow.MCPRequest{UserID: "u", ThreadID: "th"})
	}))
	t.Cleanup(srv.Close)
	for _, token := range []string{`9007199254740993`, `"tok-1"`} {
		meta := `{"progressToken":` + token + `,"` + metaProtocol + `":"` + ProtocolVersion2026 + `","` + metaClientCaps + `":{}}`
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":` + meta + `}}`
		r, err := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		require.NoError(t, err)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set(HeaderProtocolVersion, ProtocolVersion2026)
		r.Header.Set(headerMethod, "tools/call")
		r.Header.Set(headerName, "work")
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, "%s", out)
		require.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
		require.Contains(t, string(out), `"method":"notifications/progress"`)
		require.Contains(t, string(out), `"progressToken":`+token, "%s", out)
		require.Contains(t, string(out), `"text":"done"`)
	}
}

// TestModernTasksUpdateOutcomes: tasks/update acknowledges an answer that
// was delivered, and one to a question that is no longer open (the
// extension ignores it); every other outcome is a JSON-RPC error the
// client sees: another answer on its way (-32003, retryAfterMs), the task
// being cancelled (-32602), the MCP server not taking the answer or
// mcpflow unable to deliver it now (-32603, the question stays open).
func TestModernTasksUpdateOutcomes(t *testing.T) {
	t.Parallel()
	b := newModern(t)
	asking := b.task(t, "th", mcpflow.StatusInputRequired, func(tk *mcpflow.Task) {
		tk.InputRequired, tk.InputAnswerable = map[string]any{"message": "Which year?"}, true
	})
	native := b.task(t, "th", mcpflow.StatusInputRequired, func(tk *mcpflow.Task) {
		tk.InputAnswerable = true
		tk.InputRequired = map[string]any{mcpflow.InputRequestsKey: map[string]any{"ask-1": map[string]any{
			"method": "elicitation/create", "params": map[string]any{"message": "Which month?"}}}}
	})
	update := func(task *mcpflow.Task, key string) map[string]any {
		t.Helper()
		status, _, out := b.post(t, "tasks/update", map[string]any{"taskId": task.ID, "_meta": env(true),
			"inputResponses": map[string]any{key: map[string]any{"action": "decline"}}}, map[string]string{headerName: task.ID})
		require.Equal(t, 200, status, "%v", out)
		return out
	}
	for _, c := range []struct {
		name string
		err  error
		rpc  map[string]any // nil: acknowledged
	}{
		{"delivered", nil, nil},
		{"question closed", &mcpflow.Error{Code: mcpflow.EConflict, Err: mcpflow.ErrInputGone, Message: "the task does not require input that mcpflow can deliver"}, nil},
		{"pending", &mcpflow.Error{Code: mcpflow.EConflict, Err: mcpflow.ErrAnswerPending, Message: "an answer to this question is already being delivered"},
			map[string]any{"code": -32003.0, "message": "an answer to this question is already being delivered", "data": map[string]any{"retryAfterMs": 1000.0}}},
		{"cancelling", &mcpflow.Error{Code: mcpflow.EConflict, Err: mcpflow.ErrTaskCancelling, Message: "the task is being cancelled: it takes no answer"},
			map[string]any{"code": -32602.0, "message": "the task is being cancelled: it takes no answer"}},
		{"refused upstream", mcpflow.Errorf(mcpflow.EUpstream, "the MCP server did not take the answer: busy; the question is still open: answer it again"),
			map[string]any{"code": -32603.0, "message": "the MCP server did not take the answer: busy; the question is still open: answer it again"}},
		{"no outcome in time", mcpflow.Errorf(mcpflow.ETimeout, "the answer was not delivered in time"),
			map[string]any{"code": -32603.0, "message": "the answer was not delivered in time"}},
	} {
		b.mu.Lock()
		b.answerErr = c.err
		b.mu.Unlock()
		for _, q := range []struct {
			task *mcpflow.Task
			key  string
		}{{asking, "mcpflow-question-1"}, {native, "ask-1"}} {
			out := update(q.task, q.key)
			if c.rpc == nil {
				require.Nil(t, out["error"], "%s: %v", c.name, out)
				require.Equal(t, "complete", out["result"].(map[string]any)["resultType"], c.name)
				continue
			}
			require.Equal(t, c.rpc, out["error"], "%s (%s)", c.name, q.key)
		}
	}
	require.Len(t, b.answers, 12, "every answer went to the workflow")
}
