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

// readsTasks is a task store that reports every read of one task.
type readsTasks struct {
	*store.DB
	id    string
	reads chan struct{}
}

func (s *readsTasks) GetTask(ctx context.Context, id string) (*mcpflow.Task, error) {
	t, err := s.DB.GetTask(ctx, id)
	if id == s.id {
		select {
		case s.reads <- struct{}{}:
		default:
		}
	}
	return t, err
}

// questionBundle is a task that asks questions of an MCP client on its
// tasks/result stream.
type questionBundle struct {
	db      *store.DB
	tasks   *readsTasks
	task    *mcpflow.Task
	url     string
	session string
	events  chan map[string]any
	wakes   int // inbox events appended to wake the stream

	mu       sync.Mutex
	answers  []mcpflow.InputAnswer
	answered chan struct{} // one per delivered answer
	err      error         // what the delivery returns (an injected failure)
}

func newQuestionBundle(t *testing.T) *questionBundle {
	t.Helper()
	return newQuestionBundleAsking(t, map[string]any{"message": "Which year?"})
}

// newQuestionBundleAsking is newQuestionBundle with the task's question.
func newQuestionBundleAsking(t *testing.T, question map[string]any) *questionBundle {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.BackendSQLite, filepath.Join(t.TempDir(), "q.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, _, err = db.CreateThread(ctx, &mcpflow.Thread{ID: "th", UserID: "u"})
	require.NoError(t, err)
	task := &mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: "u", ThreadID: "th", ServerName: "s", DriverName: mcpflow.DriverNative,
		RemoteTaskID: "r", TaskName: "research", Status: mcpflow.StatusInputRequired,
		InputRequired: question, InputAnswerable: true}
	require.NoError(t, db.CreateTask(ctx, task))
	b := &questionBundle{db: db, task: task, tasks: &readsTasks{DB: db, id: task.ID, reads: make(chan struct{}, 1)},
		events: make(chan map[string]any, 20), answered: make(chan struct{}, 10)}
	s := New(Options{Tools: noTools{}, Sessions: db, Events: db, Tasks: b.tasks, KeepAlive: time.Hour,
		CancelTask: func(context.Context, *mcpflow.Task) error { return nil },
		AnswerInput: func(_ context.Context, _ *mcpflow.Task, a mcpflow.InputAnswer) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.answers = append(b.answers, a)
			b.answered <- struct{}{}
			return b.err
		}})
	t.Cleanup(s.Stop)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeMCP(w, r, &mcpflow.MCPRequest{UserID: "u", ThreadID: "th"})
	}))
	t.Cleanup(srv.Close)
	b.url = srv.URL
	init := b.post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}}}}`, false)
	init.Body.Close()
	b.session = init.Header.Get(HeaderSessionID)

	resp := b.post(t, `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"`+task.ID+`"}}`, true)
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				var m map[string]any
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m) == nil {
					b.events <- m
				}
			}
		}
		close(b.events)
	}()
	return b
}

func (b *questionBundle) post(t *testing.T, body string, sse bool) *http.Response {
	t.Helper()
	r, err := http.NewRequest("POST", b.url, strings.NewReader(body))
	require.NoError(t, err)
	r.Header.Set("Content-Type", "application/json")
	if sse {
		r.Header.Set("Accept", "application/json, text/event-stream")
	}
	if b.session != "" {
		r.Header.Set(HeaderSessionID, b.session)
	}
	resp, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	return resp
}

// elicitation returns the next elicitation/create on the stream.
func (b *questionBundle) elicitation(t *testing.T) map[string]any {
	t.Helper()
	for ev := range b.events {
		if ev["method"] == "elicitation/create" {
			return ev
		}
	}
	t.Fatal("the stream ended without another question")
	return nil
}

// write edits the task's row, appends an inbox event of the thread (what
// wakes the stream) and waits until the stream read the row again.
func (b *questionBundle) write(t *testing.T, edit func(*mcpflow.Task)) {
	t.Helper()
	ctx := context.Background()
	cur, err := b.db.GetTask(ctx, b.task.ID)
	require.NoError(t, err)
	edit(cur)
	require.NoError(t, b.db.UpdateTask(ctx, cur))
	select { // a read before this write does not count
	case <-b.tasks.reads:
	default:
	}
	b.wakes++
	_, err = b.db.AppendEvent(ctx, &mcpflow.ThreadEvent{UserID: "u", ThreadID: "th", TaskID: b.task.ID, EventVersion: b.wakes,
		Status: cur.Status, Payload: []byte(`{}`)})
	require.NoError(t, err)
	select {
	case <-b.tasks.reads:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream never read the task again")
	}
}

// TestTaskQuestionAskedOnce: rewriting the task's row without a new
// question (a progress message, a counted poll error) asks nothing again;
// a new question is asked, and only once.
func TestTaskQuestionAskedOnce(t *testing.T) {
	t.Parallel()
	b := newQuestionBundle(t)
	first := b.elicitation(t)
	require.Equal(t, "Which year?", first["params"].(map[string]any)["message"])

	msg, perr := "reading the archives", "timeout"
	b.write(t, func(tk *mcpflow.Task) { tk.StatusMessage = &msg })
	b.write(t, func(tk *mcpflow.Task) { tk.ConsecutivePollErrorCount, tk.LastPollError = 1, &perr })
	b.write(t, func(tk *mcpflow.Task) { tk.InputRequired = map[string]any{"message": "Which month?"} })

	next := b.elicitation(t)
	require.Equal(t, "Which month?", next["params"].(map[string]any)["message"], "the same question was asked again: %v", next)
	require.Equal(t, "mcpflow-input:"+b.task.ID+":1", first["id"])
	require.Equal(t, "mcpflow-input:"+b.task.ID+":2", next["id"])
}

// TestLateAnswerToAnEarlierQuestion: an answer to question 1 that arrives
// once the task asks question 2 is refused with 409 naming question 2 and
// never delivered; the answer to question 2 is.
func TestLateAnswerToAnEarlierQuestion(t *testing.T) {
	t.Parallel()
	b := newQuestionBundle(t)
	first := b.elicitation(t)
	b.write(t, func(tk *mcpflow.Task) { tk.InputRequired = map[string]any{"message": "Which month?"} })
	second := b.elicitation(t)

	answer := func(ev map[string]any, content string) *http.Response {
		id, _ := json.Marshal(ev["id"])
		return b.post(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"action":"accept","content":`+content+`}}`, false)
	}
	late := answer(first, `{"year":"1999"}`)
	body, _ := io.ReadAll(late.Body)
	late.Body.Close()
	require.Equal(t, http.StatusConflict, late.StatusCode, "%s", body)
	require.Contains(t, string(body), `question 1, but the task's current question is question 2 (\"Which month?\")`)
	b.mu.Lock()
	require.Empty(t, b.answers, "the answer to question 1 was delivered to question 2")
	b.mu.Unlock()

	ok := answer(second, `{"month":"May"}`)
	ok.Body.Close()
	require.Equal(t, http.StatusAccepted, ok.StatusCode)
	b.mu.Lock()
	require.Equal(t, []mcpflow.InputAnswer{{Action: "accept", Content: map[string]any{"month": "May"}, QuestionID: 2}}, b.answers)
	b.mu.Unlock()
}

// TestElicitationAnswerOutcomes: a 2025-11-25 client's answer to a task's
// question that is not delivered is a refusal it sees (an HTTP status and
// a JSON-RPC error body), not a 202: content that does not match the
// requested schema 400, another answer on its way 409 with Retry-After, a
// task being cancelled 409, an answer the MCP server did not take 502 (the
// question stays open). Only an answer to a question that is no longer
// open is taken as done (202).
func TestElicitationAnswerOutcomes(t *testing.T) {
	t.Parallel()
	b := newQuestionBundleAsking(t, map[string]any{"message": "Which year?", "requested_schema": map[string]any{"type": "object",
		"properties": map[string]any{"year": map[string]any{"type": "string"}}, "required": []any{"year"}}})
	id, _ := json.Marshal(b.elicitation(t)["id"])
	answer := func(result string) (*http.Response, map[string]any) {
		t.Helper()
		resp := b.post(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":`+result+`}`, false)
		defer resp.Body.Close()
		var out map[string]any
		if resp.StatusCode != http.StatusAccepted {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		}
		return resp, out
	}
	good := `{"action":"accept","content":{"year":"1999"}}`
	for _, c := range []struct {
		name       string
		result     string
		err        error
		status     int
		rpc        map[string]any
		retryAfter string
	}{
		{"content off the schema", `{"action":"accept","content":{"year":7}}`, nil, 400,
			map[string]any{"code": -32602.0, "message": "content does not match the requested schema: /year (type)"}, ""},
		{"not an elicitation result", `"yes"`, nil, 400,
			map[string]any{"code": -32602.0, "message": "the response to a task's question must be an elicitation result {action, content?}"}, ""},
		{"pending", good, &mcpflow.Error{Code: mcpflow.EConflict, Err: mcpflow.ErrAnswerPending, Message: "an answer to this question is already being delivered"}, 409,
			map[string]any{"code": -32003.0, "message": "an answer to this question is already being delivered", "data": map[string]any{"retryAfterMs": 1000.0}}, "1"},
		{"cancelling", good, &mcpflow.Error{Code: mcpflow.EConflict, Err: mcpflow.ErrTaskCancelling, Message: "the task is being cancelled: it takes no answer"}, 409,
			map[string]any{"code": -32602.0, "message": "the task is being cancelled: it takes no answer"}, ""},
		{"refused upstream", good, mcpflow.Errorf(mcpflow.EUpstream, "the MCP server did not take the answer: busy; the question is still open: answer it again"), 502,
			map[string]any{"code": -32603.0, "message": "the MCP server did not take the answer: busy; the question is still open: answer it again"}, ""},
		{"no worker", good, mcpflow.Errorf(mcpflow.EUnavailable, "no mcpflow worker is running to deliver the answer; try again when one is"), 503,
			map[string]any{"code": -32603.0, "message": "no mcpflow worker is running to deliver the answer; try again when one is"}, ""},
	} {
		b.mu.Lock()
		b.err = c.err
		b.mu.Unlock()
		resp, out := answer(c.result)
		require.Equal(t, c.status, resp.StatusCode, "%s: %v", c.name, out)
		require.Equal(t, c.rpc, out["error"], c.name)
		require.Nil(t, out["id"], c.name)
		require.Equal(t, c.retryAfter, resp.Header.Get("Retry-After"), c.name)
	}

	b.mu.Lock()
	b.err = &mcpflow.Error{Code: mcpflow.EConflict, Err: mcpflow.ErrInputGone, Message: "the task does not require input that mcpflow can deliver"}
	b.mu.Unlock()
	resp, _ := answer(good)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "an answer to a question no longer open is ignored")
}
