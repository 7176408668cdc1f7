package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
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

// A task's question reaches an MCP client that can elicit as an
// elicitation/create on its tasks/result stream, related to the task; the
// client's answer, POSTed back, is delivered to the task; the stream then
// ends with the task's result.
func TestTaskQuestionIsElicited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, store.BackendSQLite, filepath.Join(t.TempDir(), "e.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, _, err = db.CreateThread(ctx, &mcpflow.Thread{ID: "th", UserID: "u"})
	require.NoError(t, err)
	question := map[string]any{"message": "Which interpretation?", "requested_schema": map[string]any{"type": "object",
		"properties": map[string]any{"interpretation": map[string]any{"type": "string"}}, "required": []any{"interpretation"}}}
	task := &mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: "u", ThreadID: "th", ServerName: "s", DriverName: mcpflow.DriverNative,
		RemoteTaskID: "r", TaskName: "research", Status: mcpflow.StatusInputRequired, InputRequired: question, InputAnswerable: true}
	require.NoError(t, db.CreateTask(ctx, task))

	var mu sync.Mutex
	var answers []mcpflow.InputAnswer
	answered := make(chan struct{}, 1)
	s := New(Options{Tools: noTools{}, Sessions: db, Events: db, Tasks: db, KeepAlive: time.Hour,
		CancelTask: func(context.Context, *mcpflow.Task) error { return nil },
		AnswerInput: func(_ context.Context, got *mcpflow.Task, a mcpflow.InputAnswer) error {
			mu.Lock()
			answers = append(answers, a)
			mu.Unlock()
			answered <- struct{}{}
			return nil
		}})
	req := func() *mcpflow.MCPRequest { return &mcpflow.MCPRequest{UserID: "u", ThreadID: "th"} }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.ServeMCP(w, r, req()) }))
	t.Cleanup(srv.Close)
	post := func(session, body string, sse bool) *http.Response {
		r, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if sse {
			r.Header.Set("Accept", "application/json, text/event-stream")
		}
		if session != "" {
			r.Header.Set(HeaderSessionID, session)
		}
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		return resp
	}
	init := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}}}}`, false)
	init.Body.Close()
	sid := init.Header.Get(HeaderSessionID)

	resp := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"`+task.ID+`"}}`, true)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := make(chan map[string]any, 10)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				var m map[string]any
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m) == nil {
					events <- m
				}
			}
		}
		close(events)
	}()
	elicit := <-events
	require.Equal(t, "elicitation/create", elicit["method"])
	params := elicit["params"].(map[string]any)
	require.Equal(t, "Which interpretation?", params["message"])
	require.Equal(t, question["requested_schema"], params["requestedSchema"])
	require.Equal(t, map[string]any{"taskId": task.ID}, params["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"])
	id, _ := json.Marshal(elicit["id"])

	// A refused answer (content that does not match) is not delivered.
	bad := post(sid, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"action":"accept","content":{"other":1}}}`, false)
	bad.Body.Close()
	require.Equal(t, http.StatusAccepted, bad.StatusCode)
	good := post(sid, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"action":"accept","content":{"interpretation":"historical"}}}`, false)
	good.Body.Close()
	require.Equal(t, http.StatusAccepted, good.StatusCode)
	<-answered
	mu.Lock()
	require.Equal(t, []mcpflow.InputAnswer{{Action: "accept", Content: map[string]any{"interpretation": "historical"}, QuestionID: 1}}, answers)
	mu.Unlock()

	// The task completes: the stream ends with its result.
	task.Status, task.InputRequired, task.InputAnswerable, task.Result = mcpflow.StatusCompleted, nil, false, map[string]any{"report": "ok"}
	require.NoError(t, db.UpdateTask(ctx, task))
	var final map[string]any
	for ev := range events {
		if ev["id"] != nil && ev["method"] == nil {
			final = ev
			break
		}
	}
	require.NotNil(t, final, "the stream ended without the result")
	require.Equal(t, map[string]any{"report": "ok"}, final["result"].(map[string]any)["structuredContent"])
}
