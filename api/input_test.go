package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/store"
)

// answerRecorder is the AnswerInput the input tests wire in.
type answerRecorder struct {
	mu      sync.Mutex
	answers []mcpflow.InputAnswer
	err     error
}

func (r *answerRecorder) answer(_ context.Context, _ *mcpflow.Task, a mcpflow.InputAnswer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers = append(r.answers, a)
	return r.err
}

func setupInput(t *testing.T, rec *answerRecorder) *testBundle {
	t.Helper()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(t.TempDir(), "input.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{Users: []api.UserToken{{UserID: "alice", Token: aliceToken}, {UserID: "bob", Token: bobToken}}})
	require.NoError(t, err)
	logs := &testenv.SyncBuffer{}
	return &testBundle{srv: api.New(api.Options{Auth: auth, Threads: db, Tasks: db, AnswerInput: rec.answer,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}), logs: logs, db: db}
}

func TestAnswerInputRoute(t *testing.T) {
	t.Parallel()
	rec := &answerRecorder{}
	b := setupInput(t, rec)
	b.thread(t, "th", "alice")
	var question map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"message": "Which one?", "requested_schema": {"type": "object",
		"properties": {"interpretation": {"type": "string", "enum": ["technical", "historical"]}}, "required": ["interpretation"]}}`), &question))
	asking := b.task(t, "alice", "th", 1, mcpflow.StatusInputRequired, func(tk *mcpflow.Task) {
		tk.InputRequired, tk.InputAnswerable = question, true
	})
	notAnswerable := b.task(t, "alice", "th", 2, mcpflow.StatusInputRequired, func(tk *mcpflow.Task) {
		tk.InputRequired = map[string]any{"question": "Which year?"}
	})
	working := b.task(t, "alice", "th", 3, mcpflow.StatusWorking, nil)
	path := func(task *mcpflow.Task) string { return "/api/threads/th/mcp-tasks/" + task.ID + "/input" }

	code, detail := b.do(t, "GET", "/api/threads/th/mcp-tasks/"+asking.ID, aliceToken, "")
	require.Equal(t, 200, code)
	require.Equal(t, true, detail["input_answerable"])
	require.Equal(t, question, detail["input_required"])

	code, _ = b.do(t, "POST", path(asking), bobToken, `{"action": "decline"}`)
	require.Equal(t, 404, code, "another user's task")
	code, out := b.do(t, "POST", path(working), aliceToken, `{"action": "decline"}`)
	require.Equal(t, 409, code, "a working task takes no answer")
	require.Equal(t, "working", out["status"])
	code, out = b.do(t, "POST", path(notAnswerable), aliceToken, `{"action": "decline"}`)
	require.Equal(t, 409, code, "a question mcpflow cannot deliver an answer to")
	require.Equal(t, false, out["input_answerable"])
	for body, want := range map[string]string{
		`{"action": "maybe"}`: `action must be "accept", "decline" or "cancel"`,
		`{"action": "accept", "content": {"interpretation": 1}}`: "content does not match the requested schema: /interpretation (type)",
		`{"action": "accept"}`:             "content does not match the requested schema: / (required)",
		`{"action": "accept", "extra": 1}`: `request body must be {"action": "accept"|"decline"|"cancel", "content"?: {...}, "question_id"?: <the detail's question_id>}`,
	} {
		code, out := b.do(t, "POST", path(asking), aliceToken, body)
		require.Equal(t, 400, code, body)
		require.Equal(t, want, out["error"].(map[string]any)["message"], body)
	}
	require.Empty(t, rec.answers, "nothing refused reached the workflow")

	code, out = b.do(t, "POST", path(asking), aliceToken, `{"action": "accept", "content": {"interpretation": "historical"}}`)
	require.Equal(t, 202, code, out)
	require.Equal(t, asking.ID, out["task_id"])
	require.Equal(t, []mcpflow.InputAnswer{{Action: "accept", Content: map[string]any{"interpretation": "historical"}}}, rec.answers)

	rec.err = mcpflow.Errorf(mcpflow.EConflict, "the task's question is no longer waiting for an answer")
	code, out = b.do(t, "POST", path(asking), aliceToken, `{"action": "cancel"}`)
	require.Equal(t, 409, code)
	require.Equal(t, asking.ID, out["task_id"])
}

// TestAnswerInputOutcomes: each way the workflow refuses an answer is its
// own answer of the input route: another answer on its way is 409 with
// Retry-After (send it again), a task being cancelled 409 saying so, an
// answer the MCP server did not take 502 upstream_error (the question stays
// open), and only an answer to a question no longer open 409 with the
// task's detail.
func TestAnswerInputOutcomes(t *testing.T) {
	t.Parallel()
	rec := &answerRecorder{}
	b := setupInput(t, rec)
	b.thread(t, "th", "alice")
	asking := b.task(t, "alice", "th", 1, mcpflow.StatusInputRequired, func(tk *mcpflow.Task) {
		tk.InputRequired, tk.InputAnswerable = map[string]any{"message": "Which year?"}, true
	})
	post := func() (*httptest.ResponseRecorder, map[string]any) {
		t.Helper()
		req := httptest.NewRequest("POST", "/api/threads/th/mcp-tasks/"+asking.ID+"/input", strings.NewReader(`{"action": "decline"}`))
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		b.srv.Handler().ServeHTTP(w, req)
		var out map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out), w.Body.String())
		return w, out
	}
	for _, c := range []struct {
		name       string
		err        error
		status     int
		code, text string
		retryAfter string
	}{
		{"pending", &mcpflow.Error{Code: mcpflow.EConflict, Err: mcpflow.ErrAnswerPending,
			Message: "an answer to this question is already being delivered: send yours again shortly (it is delivered if that delivery fails)"},
			409, "conflict", "an answer to this question is already being delivered: send yours again shortly (it is delivered if that delivery fails)", "1"},
		{"cancelling", &mcpflow.Error{Code: mcpflow.EConflict, Err: mcpflow.ErrTaskCancelling, Message: "the task is being cancelled: it takes no answer"},
			409, "conflict", "the task is being cancelled: it takes no answer", ""},
		{"refused upstream", mcpflow.Errorf(mcpflow.EUpstream, "the MCP server did not take the answer: busy; the question is still open: answer it again"),
			502, "upstream_error", "the MCP server did not take the answer: busy; the question is still open: answer it again", ""},
	} {
		rec.err = c.err
		w, out := post()
		require.Equal(t, c.status, w.Code, "%s: %v", c.name, out)
		require.Equal(t, map[string]any{"code": c.code, "message": c.text}, out["error"], c.name)
		require.Equal(t, c.retryAfter, w.Header().Get("Retry-After"), c.name)
	}

	rec.err = &mcpflow.Error{Code: mcpflow.EConflict, Err: mcpflow.ErrInputGone, Message: "the task does not require input that mcpflow can deliver"}
	w, out := post()
	require.Equal(t, 409, w.Code)
	require.Equal(t, asking.ID, out["task_id"], "the question is no longer open: the task's detail")
}
