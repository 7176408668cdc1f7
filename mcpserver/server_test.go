package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/store"
)

func ptr[T any](v T) *T { return &v }

func TestStatusMapping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   mcpflow.Status
		want mcp.TaskStatus
	}{
		{mcpflow.StatusSubmitted, mcp.TaskStatusWorking},
		{mcpflow.StatusWorking, mcp.TaskStatusWorking},
		{mcpflow.StatusInputRequired, mcp.TaskStatusInputRequired},
		{mcpflow.StatusCompleted, mcp.TaskStatusCompleted},
		{mcpflow.StatusFailed, mcp.TaskStatusFailed},
		{mcpflow.StatusCancelled, mcp.TaskStatusCancelled},
	} {
		require.Equal(t, tc.want, mcpStatus(tc.in), tc.in)
	}
	require.Len(t, mcpflow.Statuses, 6, "a new status needs a mapping")
}

func TestStatusMessage(t *testing.T) {
	t.Parallel()
	long := ""
	for range 600 {
		long += "é"
	}
	require.Equal(t, "boom", statusMessage(mcpflow.StatusFailed, ptr("boom"), nil, false, nil, nil))
	require.Equal(t, "", statusMessage(mcpflow.StatusCancelled, nil, nil, true, nil, nil), "a finished task has no pending cancel")
	require.Equal(t, "cancellation requested", statusMessage(mcpflow.StatusWorking, nil, nil, true, nil, nil))
	require.Equal(t, "", statusMessage(mcpflow.StatusWorking, ptr("old error"), nil, false, nil, nil))
	require.Equal(t, "Which year?", statusMessage(mcpflow.StatusInputRequired, nil, map[string]any{"message": "Which year?", "x": 1}, false, nil, nil))
	require.Equal(t, "Pick one", statusMessage(mcpflow.StatusInputRequired, nil, map[string]any{"question": "Pick one"}, false, nil, nil))
	require.Equal(t, `{"choices":[1,2],"ü":true}`, statusMessage(mcpflow.StatusInputRequired, nil, map[string]any{"ü": true, "choices": []any{1, 2}}, false, nil, nil))
	require.Equal(t, "input required", statusMessage(mcpflow.StatusInputRequired, nil, nil, false, nil, nil))
	require.Len(t, []rune(statusMessage(mcpflow.StatusFailed, &long, nil, false, nil, nil)), mcpflow.MaxAPIErrorChars)
	// A pending cancel whose remote attempt failed says so (it is retried).
	require.Equal(t, "cancellation requested; the last attempt to cancel the remote task failed and is retried: 503 from upstream",
		statusMessage(mcpflow.StatusWorking, nil, nil, true, ptr("503 from upstream"), ptr("50% done")))
	require.Equal(t, "50% done", statusMessage(mcpflow.StatusWorking, nil, nil, false, ptr("stale"), ptr("50% done")))
	require.Equal(t, "", statusMessage(mcpflow.StatusCancelled, nil, nil, true, ptr("stale"), nil))
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 8, 0, 0, 123456000, time.UTC)
	task := &mcpflow.Task{ID: "mcp-task-0123456789abcdef0123456789abcdef", CreatedAt: at}
	c, ok := decodeCursor(encodeCursor(task))
	require.True(t, ok)
	require.Equal(t, task.ID, c.ID)
	require.True(t, at.Equal(c.CreatedAt))
	for _, bad := range []string{"", "!!", "e30", "eyJjIjoiMjAyNi0xMi0wM1QwODowMDowMFoiLCJpIjoiLi4vLi4ifQ"} {
		_, ok := decodeCursor(bad)
		require.False(t, ok, bad)
	}
}

func TestSessionIDs(t *testing.T) {
	t.Parallel()
	id := newSessionID()
	require.True(t, validSessionID(id))
	require.NotEqual(t, id, newSessionID())
	for _, bad := range []string{"", "mcp-session-", "mcp-session-zz23456789abcdef0123456789abcdef", "x" + id[1:], id + "0"} {
		require.False(t, validSessionID(bad), bad)
	}
}

func TestAcceptsSSE(t *testing.T) {
	t.Parallel()
	for accept, want := range map[string]bool{
		"application/json, text/event-stream": true,
		"text/event-stream;q=0.9":             true,
		"*/*":                                 true,
		"application/json":                    false,
		"":                                    false,
	} {
		r := httptest.NewRequest("GET", "/mcp", nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		require.Equal(t, want, acceptsSSE(r), accept)
	}
}

func TestTaskResultOf(t *testing.T) {
	t.Parallel()
	s := New(Options{Events: nopEvents{}})
	id := "mcp-task-0123456789abcdef0123456789abcdef"
	related := map[string]any{metaRelatedTask: map[string]string{"taskId": id}}

	obj := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusCompleted, Result: map[string]any{"answer": 42.0}})
	require.Equal(t, map[string]any{"answer": 42.0}, obj.StructuredContent)
	require.JSONEq(t, `{"type":"text","text":"{\"answer\":42}"}`, string(obj.Content[0]))
	require.False(t, obj.IsError)
	require.Equal(t, related, obj.Meta)

	list := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusCompleted, Result: []any{"a"}})
	require.Equal(t, map[string]any{"result": []any{"a"}}, list.StructuredContent, "structuredContent is always an object")

	cut := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusCompleted, ResultPreview: ptr("abc…"), ResultTruncated: true,
		ResultArtifact: map[string]string{"uri": "file:///r.json"}})
	require.Equal(t, map[string]any{"result_preview": ptr("abc…"), "result_truncated": true, "result_artifact": map[string]string{"uri": "file:///r.json"}}, cut.StructuredContent)
	require.JSONEq(t, `{"type":"text","text":"abc…"}`, string(cut.Content[0]))

	empty := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusCompleted})
	require.Nil(t, empty.StructuredContent)
	require.Len(t, empty.Content, 1)

	// A native task answers the upstream's own blocks, as they are.
	blocks := `[{"type":"image","data":"aGk=","mimeType":"image/png","annotations":{"audience":["user"]}},{"type":"text","text":"a \u003cchart\u003e"}]`
	native := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusCompleted, Result: map[string]any{"points": json.Number("9007199254740993")},
		Content: json.RawMessage(blocks), ResultStructured: true})
	requireBlocks(t, blocks, native.Content)
	require.Equal(t, map[string]any{"points": json.Number("9007199254740993")}, native.StructuredContent, "the upstream's structuredContent")
	require.False(t, native.IsError)
	require.Equal(t, related, native.Meta)
	b, err := json.Marshal(native)
	require.NoError(t, err)
	require.Contains(t, string(b), `"structuredContent":{"points":9007199254740993}`)
	require.Contains(t, string(b), `"content":`+blocks, "each block byte for byte")

	// No structuredContent upstream: none here either (Result is the
	// blocks themselves).
	bare := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusCompleted, Result: []any{map[string]any{"type": "text", "text": "hi"}},
		Content: json.RawMessage(`[{"type":"text","text":"hi"}]`)})
	requireBlocks(t, `[{"type":"text","text":"hi"}]`, bare.Content)
	require.Nil(t, bare.StructuredContent)
	b, err = json.Marshal(bare)
	require.NoError(t, err)
	require.NotContains(t, string(b), "structuredContent")

	// No blocks at all upstream.
	none := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusCompleted, Result: map[string]any{"a": "b"},
		Content: json.RawMessage(`[]`), ResultStructured: true})
	require.NotNil(t, none.Content)
	require.Empty(t, none.Content)
	require.Equal(t, map[string]any{"a": "b"}, none.StructuredContent)

	// A non-object structuredContent is wrapped, as every result is.
	odd := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusCompleted, Result: []any{"x"},
		Content: json.RawMessage(`[{"type":"text","text":"x"}]`), ResultStructured: true})
	require.Equal(t, map[string]any{"result": []any{"x"}}, odd.StructuredContent)

	// structuredContent too large to keep: the blocks, and the truncation.
	big := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusCompleted, ResultPreview: ptr("{\"rows\":[1,"), ResultTruncated: true,
		Content: json.RawMessage(`[{"type":"text","text":"42 rows"}]`), ResultStructured: true})
	requireBlocks(t, `[{"type":"text","text":"42 rows"}]`, big.Content)
	require.Equal(t, map[string]any{"result_preview": ptr("{\"rows\":[1,"), "result_truncated": true, "result_artifact": map[string]string(nil)}, big.StructuredContent)

	// Blocks that are not an array of objects are not answered: the result
	// is rendered as for any task.
	for _, bad := range []string{`null`, `{"type":"text"}`, `["text"]`} {
		r := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusCompleted, Result: map[string]any{"answer": 42.0},
			Content: json.RawMessage(bad), ResultStructured: true})
		require.JSONEq(t, `{"type":"text","text":"{\"answer\":42}"}`, string(r.Content[0]), bad)
		require.Equal(t, map[string]any{"answer": 42.0}, r.StructuredContent, bad)
	}

	failed := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusFailed, Error: ptr("disk full")})
	require.True(t, failed.IsError)
	require.JSONEq(t, `{"type":"text","text":"disk full"}`, string(failed.Content[0]))
	cancelled := s.taskResultOf(&mcpflow.Task{ID: id, Status: mcpflow.StatusCancelled})
	require.True(t, cancelled.IsError)
	require.JSONEq(t, `{"type":"text","text":"Task was cancelled."}`, string(cancelled.Content[0]))
}

// TestTaskExtNativeResult: the Tasks extension's tasks/get carries a
// completed native task's result inline as the upstream's own blocks and
// structuredContent, like tasks/result.
func TestTaskExtNativeResult(t *testing.T) {
	t.Parallel()
	s := New(Options{Events: nopEvents{}, PollInterval: time.Second})
	blocks := `[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"text","text":"a chart"}]`
	task := &mcpflow.Task{ID: "mcp-task-0123456789abcdef0123456789abcdef", Status: mcpflow.StatusCompleted,
		Result: map[string]any{"points": json.Number("3")}, Content: json.RawMessage(blocks), ResultStructured: true}
	b, err := json.Marshal(s.taskExt(task, true)["result"])
	require.NoError(t, err)
	var res struct {
		ResultType        string            `json:"resultType"`
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
	}
	require.NoError(t, json.Unmarshal(b, &res))
	require.Equal(t, "complete", res.ResultType)
	requireBlocks(t, blocks, res.Content)
	require.JSONEq(t, `{"points":3}`, string(res.StructuredContent))
	require.False(t, res.IsError)

	task.Result, task.ResultStructured = []any{"the blocks"}, false
	b, err = json.Marshal(s.taskExt(task, true)["result"])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	requireBlocks(t, blocks, res.Content)
	require.NotContains(t, string(b), "structuredContent", "the upstream had none")
}

// requireBlocks checks that got are the blocks of the JSON array want,
// each byte for byte.
func requireBlocks(t *testing.T, want string, got []json.RawMessage) {
	t.Helper()
	var blocks []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(want), &blocks))
	require.Len(t, got, len(blocks))
	for i := range blocks {
		require.Equal(t, string(blocks[i]), string(got[i]), "block %d", i)
	}
}

func TestTaskJSON(t *testing.T) {
	t.Parallel()
	s := New(Options{Events: nopEvents{}, PollInterval: 3 * time.Second})
	at := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	b, err := json.Marshal(s.task(&mcpflow.Task{ID: "mcp-task-0123456789abcdef0123456789abcdef", Status: mcpflow.StatusSubmitted,
		CreatedAt: at, UpdatedAt: at.Add(time.Second)}))
	require.NoError(t, err)
	require.JSONEq(t, `{"taskId":"mcp-task-0123456789abcdef0123456789abcdef","status":"working","createdAt":"2026-12-03T08:00:00Z",
		"lastUpdatedAt":"2026-12-03T08:00:01Z","ttl":null,"pollInterval":3000}`, string(b))
	b, err = json.Marshal(s.task(&mcpflow.Task{ID: "mcp-task-0123456789abcdef0123456789abcdef", Status: mcpflow.StatusCompleted, CreatedAt: at, UpdatedAt: at}))
	require.NoError(t, err)
	require.NotContains(t, string(b), "pollInterval", "a finished task is not polled")
}

// nopEvents is an empty inbox, for tests that never wait on it.
type nopEvents struct{ mcpflow.EventStore }

func (nopEvents) LatestEventSeq(context.Context, mcpflow.ThreadRef) (int64, error) { return 0, nil }
func (nopEvents) SubscribeAppends(func(mcpflow.ThreadRef, int64)) func()           { return func() {} }
func (nopEvents) ThreadsWithEventsAfter(context.Context, int64, int) (map[mcpflow.ThreadRef]int64, error) {
	return nil, nil
}

// noTools is a thread without tools (tasks/list needs none).
type noTools struct{ mcpflow.ToolRuntime }

func (noTools) ListTools(context.Context, string, string) ([]mcpflow.Tool, error) { return nil, nil }
func (noTools) RoutingHints([]mcpflow.Tool) string                                { return "" }

// tasks/list pages through a thread's tasks newest first, 50 a page, with
// nextCursor; other threads' tasks never show.
func TestListTasksPaging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, store.BackendSQLite, filepath.Join(t.TempDir(), "p.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	for _, th := range []string{"mine", "other"} {
		_, _, err := db.CreateThread(ctx, &mcpflow.Thread{ID: th, UserID: "u"})
		require.NoError(t, err)
	}
	base := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	var want []string
	for i := range 120 {
		task := &mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: "u", ThreadID: "mine", ServerName: "s", DriverName: mcpflow.DriverOrdinary,
			RemoteTaskID: fmt.Sprintf("r%d", i), TaskName: "job", Status: mcpflow.StatusWorking, CreatedAt: base.Add(time.Duration(i/3) * time.Second)}
		if i == 7 {
			task.ThreadID = "other"
		} else {
			want = append(want, task.ID)
		}
		require.NoError(t, db.CreateTask(ctx, task))
	}
	s := New(Options{Tools: noTools{}, Sessions: db, Events: db, Tasks: db, CancelTask: func(context.Context, *mcpflow.Task) error { return nil }})
	req := &mcpflow.MCPRequest{UserID: "u", ThreadID: "mine"}
	post := func(session, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if session != "" {
			r.Header.Set(HeaderSessionID, session)
		}
		w := httptest.NewRecorder()
		s.ServeMCP(w, r, req)
		return w
	}
	init := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	require.Equal(t, 200, init.Code, init.Body.String())
	sid := init.Header().Get(HeaderSessionID)

	var got []string
	cursor := `""`
	for pages := 0; ; pages++ {
		require.Less(t, pages, 4, "too many pages")
		w := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tasks/list","params":{"cursor":`+cursor+`}}`)
		require.Equal(t, 200, w.Code)
		var out struct {
			Result struct {
				Tasks []struct {
					TaskID    string `json:"taskId"`
					CreatedAt string `json:"createdAt"`
				} `json:"tasks"`
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out), w.Body.String())
		require.LessOrEqual(t, len(out.Result.Tasks), tasksPageSize)
		for _, task := range out.Result.Tasks {
			got = append(got, task.TaskID)
		}
		if out.Result.NextCursor == "" {
			break
		}
		cursor = strconv.Quote(out.Result.NextCursor)
	}
	list, err := db.ListTasks(ctx, mcpflow.TaskFilter{UserID: "u", ThreadID: "mine", Limit: 100})
	require.NoError(t, err)
	rest, err := db.ListTasks(ctx, mcpflow.TaskFilter{UserID: "u", ThreadID: "mine", Limit: 100, After: &mcpflow.TaskCursor{CreatedAt: list[99].CreatedAt, ID: list[99].ID}})
	require.NoError(t, err)
	var order []string
	for _, task := range append(list, rest...) {
		order = append(order, task.ID)
	}
	require.Len(t, got, 119)
	require.Equal(t, order, got, "every task of the thread once, newest first")
	require.ElementsMatch(t, want, got)

	w := post(sid, `{"jsonrpc":"2.0","id":3,"method":"tasks/list","params":{"cursor":"bm9wZQ"}}`)
	require.Contains(t, w.Body.String(), `"code":-32602`)
}

func TestParamsErrors(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"name":"x","arguments":[1]}`:      "invalid params for tools/call: arguments must be an object",
		`{"name":7}`:                        "invalid params for tools/call: name must be a string",
		`{"name":"x","task":{"ttl":"1"}}`:   "invalid params for tools/call: task.ttl must be a number",
		`{"name":"x","_meta":"secret-xyz"}`: "invalid params for tools/call: _meta must be an object",
		`[1]`:                               "params must be an object",
	} {
		msg, ok := decodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + body + `}`))
		require.True(t, ok, body)
		err := msg.paramsErr
		if err == nil {
			_, err = msg.callArguments()
		}
		require.NotNil(t, err, body)
		require.Equal(t, want, err.Message, body)
		require.NotContains(t, err.Message, "secret-xyz", "input values are never echoed")
	}
}

// With temporal.web_ui_url set, a task's statusMessage carries its Temporal
// Web UI link; a long message is shortened so that the link survives.
func TestTaskStatusMessageLink(t *testing.T) {
	t.Parallel()
	id := "mcp-task-0123456789abcdef0123456789abcdef"
	link := "http://127.0.0.1:8233/namespaces/default/workflows/" + id
	s := New(Options{Events: nopEvents{}, TaskLink: func(got string) string { require.Equal(t, id, got); return link }})
	at := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	working := s.task(&mcpflow.Task{ID: id, Status: mcpflow.StatusWorking, CreatedAt: at, UpdatedAt: at})
	require.Equal(t, "Temporal Web UI: "+link, working.StatusMessage)
	failed := s.task(&mcpflow.Task{ID: id, Status: mcpflow.StatusFailed, Error: ptr("disk full"), CreatedAt: at, UpdatedAt: at})
	require.Equal(t, "disk full (Temporal Web UI: "+link+")", failed.StatusMessage)
	long := s.task(&mcpflow.Task{ID: id, Status: mcpflow.StatusFailed, Error: ptr(strings.Repeat("é", 3*mcpflow.MaxAPIErrorChars)), CreatedAt: at, UpdatedAt: at})
	require.True(t, strings.HasSuffix(long.StatusMessage, " (Temporal Web UI: "+link+")"))
	require.Equal(t, mcpflow.MaxAPIErrorChars, utf8.RuneCountInString(long.StatusMessage))

	plain := New(Options{Events: nopEvents{}})
	require.Equal(t, "disk full", plain.task(&mcpflow.Task{ID: id, Status: mcpflow.StatusFailed, Error: ptr("disk full"), CreatedAt: at, UpdatedAt: at}).StatusMessage)
}

// A message is decoded once: a value of the wrong type in a field only
// another method reads is not the method's concern, its own fields are
// named as a decoding of them alone names them, and a jsonrpc or method
// that is no string makes the body no JSON-RPC message.
func TestDecodeMessageOnce(t *testing.T) {
	t.Parallel()
	decode := func(method, params string) *message {
		msg, ok := decodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`))
		require.True(t, ok, params)
		return msg
	}
	list := decode("tools/list", `{"name":7,"cursor":"c"}`)
	require.Nil(t, list.paramsErr)
	require.Equal(t, "c", *list.Params.Cursor)
	get := decode("tasks/get", `{"cursor":5,"taskId":"x","_meta":{"progressToken":1}}`)
	require.Nil(t, get.paramsErr)
	require.Equal(t, "x", *get.Params.TaskID)
	require.Equal(t, "invalid params for tasks/get: taskId must be a string", decode("tasks/get", `{"taskId":5}`).paramsErr.Message)
	require.Equal(t, "params must be an object", decode("tasks/list", `"x"`).paramsErr.Message)
	require.Nil(t, decode("ping", `"x"`).paramsErr, "ping reads no params")
	call := decode("tools/call", `{"name":"x","arguments":{"n":9007199254740993},"_meta":{"progressToken":"p"}}`)
	require.Nil(t, call.paramsErr)
	args, rerr := call.callArguments()
	require.Nil(t, rerr)
	require.Equal(t, `{"n":9007199254740993}`, string(args), "arguments go on as the client wrote them")
	require.Equal(t, `"p"`, string(call.Params.Meta["progressToken"]))
	for _, body := range []string{`{"jsonrpc":2,"id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":5,"params":{"name":7}}`, `{"jsonrpc":"2.0"`} {
		_, ok := decodeMessage([]byte(body))
		require.False(t, ok, body)
	}
}
