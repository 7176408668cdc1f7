package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/store"
)

// listFields are the task list item fields of spec §2.10, and detailFields
// the detail fields (list fields included).
var (
	listFields = []string{"task_id", "task_name", "status", "created_at", "updated_at", "error",
		"tracking_degraded", "cancel_requested"}
	detailFields = append(append([]string{}, listFields...),
		"last_polled_at", "last_poll_error", "last_cancel_error", "cancel_attempt_count",
		"notification_status", "notification_error", "notification_attempt_count",
		"result", "result_preview", "result_truncated", "result_artifact", "input_required", "input_answerable",
		"status_message", // mcpflow's own: the server's progress message
		"question_id")    // mcpflow's own: the number of the open question
	// hiddenFields never leave the server.
	hiddenFields = []string{"remote_task_id", "driver_data", "server_name"}
)

// cancelRecorder is the CancelTask the task tests wire in: it records the
// tasks it was asked to cancel and answers err.
type cancelRecorder struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (r *cancelRecorder) cancel(_ context.Context, t *mcpflow.Task) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, t.ID)
	return r.err
}

func (r *cancelRecorder) called() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func (r *cancelRecorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// degradedAfter is the tracking_degraded_after_errors the task tests use.
const degradedAfter = 3

// setupTasks is setup with the task routes backed by a real SQLite store;
// rec (may be nil: no CancelTask) answers cancel requests.
func setupTasks(t *testing.T, rec *cancelRecorder) *testBundle {
	t.Helper()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(t.TempDir(), "tasks.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{
		Users: []api.UserToken{{UserID: "alice", Token: aliceToken}, {UserID: "bob", Token: bobToken}},
	})
	require.NoError(t, err)
	logs := &testenv.SyncBuffer{}
	opts := api.Options{
		Auth: auth, Threads: db, Tasks: db, DegradedAfterErrors: degradedAfter,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if rec != nil {
		opts.CancelTask = rec.cancel
	}
	return &testBundle{srv: api.New(opts), logs: logs, db: db}
}

func (b *testBundle) thread(t *testing.T, id, user string) {
	t.Helper()
	_, created, err := b.db.CreateThread(context.Background(), &mcpflow.Thread{ID: id, UserID: user})
	require.NoError(t, err)
	require.True(t, created)
}

// taskBase is when the fixture tasks were created; each task is one
// second later than the one before, so list order is fixed.
var taskBase = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// task inserts a task row through the store; edit adjusts it first.
func (b *testBundle) task(t *testing.T, user, thread string, n int, status mcpflow.Status, edit func(*mcpflow.Task)) *mcpflow.Task {
	t.Helper()
	tk := &mcpflow.Task{
		ID: mcpflow.NewTaskID(), UserID: user, ThreadID: thread,
		ServerName: "reports", DriverName: mcpflow.DriverOrdinary,
		RemoteTaskID: fmt.Sprintf("remote-%s-%d", thread, n), TaskName: fmt.Sprintf("job %d", n), Status: status,
		DriverData: map[string]string{"submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job"},
		CreatedAt:  taskBase.Add(time.Duration(n) * time.Second),
	}
	if edit != nil {
		edit(tk)
	}
	require.NoError(t, b.db.CreateTask(context.Background(), tk))
	return tk
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func requireNoHidden(t *testing.T, obj map[string]any) {
	t.Helper()
	for _, k := range hiddenFields {
		require.NotContains(t, obj, k)
	}
}

func listIDs(t *testing.T, body map[string]any) []string {
	t.Helper()
	var ids []string
	for _, raw := range body["tasks"].([]any) {
		ids = append(ids, raw.(map[string]any)["task_id"].(string))
	}
	return ids
}

func errMessage(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// TestTaskListShape pins the list item fields, their values, the order
// (newest first), and that list items never carry the remote handle.
func TestTaskListShape(t *testing.T) {
	t.Parallel()
	b := setupTasks(t, &cancelRecorder{})
	b.thread(t, "t1", "alice")
	polled := taskBase.Add(time.Minute)
	cancelAt := taskBase.Add(2 * time.Minute)
	older := b.task(t, "alice", "t1", 1, mcpflow.StatusWorking, nil)
	newer := b.task(t, "alice", "t1", 2, mcpflow.StatusFailed, func(tk *mcpflow.Task) {
		tk.Error = ptr("disk full")
		tk.LastPolledAt = &polled
		tk.CancelRequestedAt = &cancelAt
		tk.UpdatedAt = taskBase.Add(3 * time.Minute)
	})

	status, body := b.do(t, "GET", "/api/threads/t1/mcp-tasks", aliceToken, "")
	require.Equal(t, 200, status, "%v", body)
	require.Equal(t, []string{"tasks"}, sortedKeys(body))
	require.Equal(t, []string{newer.ID, older.ID}, listIDs(t, body), "newest first")
	items := body["tasks"].([]any)
	for _, raw := range items {
		item := raw.(map[string]any)
		require.Equal(t, sortedCopy(listFields), sortedKeys(item), "exactly the spec's list fields")
		requireNoHidden(t, item)
	}
	require.Equal(t, map[string]any{
		"task_id": newer.ID, "task_name": "job 2", "status": "failed",
		"created_at": "2026-05-06T07:08:11Z", "updated_at": "2026-05-06T07:11:09Z",
		"error": "disk full", "tracking_degraded": false, "cancel_requested": true,
	}, items[0])
	require.Equal(t, map[string]any{
		"task_id": older.ID, "task_name": "job 1", "status": "working",
		"created_at": "2026-05-06T07:08:10Z", "updated_at": "2026-05-06T07:08:10Z",
		"error": nil, "tracking_degraded": false, "cancel_requested": false,
	}, items[1], "absent values are null, and updated_at defaults to created_at")

	// An empty thread answers an empty array, not null.
	b.thread(t, "t-empty", "alice")
	status, body = b.do(t, "GET", "/api/threads/t-empty/mcp-tasks", aliceToken, "")
	require.Equal(t, 200, status)
	require.Equal(t, map[string]any{"tasks": []any{}}, body)
}

// TestTaskDetailShape pins the detail fields, their values, and that the
// remote id, the driver data and the server name never appear.
func TestTaskDetailShape(t *testing.T) {
	t.Parallel()
	b := setupTasks(t, &cancelRecorder{})
	b.thread(t, "t1", "alice")
	polled := taskBase.Add(time.Minute)
	full := b.task(t, "alice", "t1", 1, mcpflow.StatusInputRequired, func(tk *mcpflow.Task) {
		tk.Result = map[string]any{"rows": []any{1.0, 2.0}}
		tk.ResultPreview = ptr("preview")
		tk.ResultTruncated = true
		tk.ResultArtifact = map[string]string{"uri": "file:///tmp/r.pdf", "mime_type": "application/pdf"}
		tk.InputRequired = map[string]any{"question": "Which format?"}
		tk.LastPolledAt = &polled
		tk.StatusMessage = ptr("step 2 of 3")
		tk.LastPollError = ptr("poll broke")
		tk.LastCancelError = ptr("cancel refused")
		tk.CancelAttemptCount = 2
		tk.NotificationStatus = mcpflow.NotificationRetry
		tk.NotificationError = ptr("webhook 500")
		tk.NotificationAttemptCount = 4
		tk.ConsecutivePollErrorCount = 1
		tk.UpdatedAt = taskBase.Add(2 * time.Minute)
	})
	bare := b.task(t, "alice", "t1", 2, mcpflow.StatusSubmitted, nil)

	status, d := b.do(t, "GET", "/api/threads/t1/mcp-tasks/"+full.ID, aliceToken, "")
	require.Equal(t, 200, status, "%v", d)
	require.Equal(t, sortedCopy(detailFields), sortedKeys(d), "exactly the spec's detail fields")
	requireNoHidden(t, d)
	require.Equal(t, map[string]any{
		"task_id": full.ID, "task_name": "job 1", "status": "input_required",
		"created_at": "2026-05-06T07:08:10Z", "updated_at": "2026-05-06T07:10:09Z",
		"error": nil, "tracking_degraded": false, "cancel_requested": false,
		"last_polled_at": "2026-05-06T07:09:09Z", "status_message": "step 2 of 3", "last_poll_error": "poll broke",
		"last_cancel_error": "cancel refused", "cancel_attempt_count": 2.0,
		"notification_status": "retry", "notification_error": "webhook 500", "notification_attempt_count": 4.0,
		"result": map[string]any{"rows": []any{1.0, 2.0}}, "result_preview": "preview", "result_truncated": true,
		"result_artifact":  map[string]any{"uri": "file:///tmp/r.pdf", "mime_type": "application/pdf"},
		"input_required":   map[string]any{"question": "Which format?"},
		"input_answerable": false, "question_id": 1.0,
	}, d)

	status, d = b.do(t, "GET", "/api/threads/t1/mcp-tasks/"+bare.ID, aliceToken, "")
	require.Equal(t, 200, status, "%v", d)
	require.Equal(t, sortedCopy(detailFields), sortedKeys(d), "every field is present even when absent")
	requireNoHidden(t, d)
	for _, k := range []string{"error", "last_polled_at", "last_poll_error", "last_cancel_error", "notification_error",
		"result", "result_preview", "result_artifact", "input_required"} {
		require.Nil(t, d[k], k)
	}
	require.Equal(t, "none", d["notification_status"])
	require.Equal(t, 0.0, d["cancel_attempt_count"])
	require.Equal(t, 0.0, d["notification_attempt_count"])
	require.Equal(t, false, d["result_truncated"])

	// Nothing of the remote handle leaks anywhere in the body.
	for _, path := range []string{"/api/threads/t1/mcp-tasks/" + full.ID, "/api/threads/t1/mcp-tasks"} {
		status, body := b.do(t, "GET", path, aliceToken, "")
		require.Equal(t, 200, status)
		require.NotContains(t, fmt.Sprint(body), "remote-t1-1", path)
		require.NotContains(t, fmt.Sprint(body), "reports", path)
		require.NotContains(t, fmt.Sprint(body), "get_job_status", path)
	}
}

// TestTaskErrorTextsTruncated pins that error, last_poll_error,
// last_cancel_error and notification_error are cut to 500 characters
// (characters, not bytes) in the API, while the store keeps them whole.
func TestTaskErrorTextsTruncated(t *testing.T) {
	t.Parallel()
	b := setupTasks(t, &cancelRecorder{})
	b.thread(t, "t1", "alice")
	long := func(c string) *string { s := strings.Repeat(c, 700); return &s }
	tk := b.task(t, "alice", "t1", 1, mcpflow.StatusFailed, func(tk *mcpflow.Task) {
		tk.Error = long("é")
		tk.LastPollError = long("p")
		tk.LastCancelError = long("ç")
		tk.NotificationError = long("n")
	})
	exactly := b.task(t, "alice", "t1", 2, mcpflow.StatusFailed, func(tk *mcpflow.Task) {
		tk.Error = ptr(strings.Repeat("x", 500))
	})

	status, d := b.do(t, "GET", "/api/threads/t1/mcp-tasks/"+tk.ID, aliceToken, "")
	require.Equal(t, 200, status, "%v", d)
	for field, c := range map[string]string{"error": "é", "last_poll_error": "p", "last_cancel_error": "ç", "notification_error": "n"} {
		require.Equal(t, strings.Repeat(c, 500), d[field], field)
	}
	status, body := b.do(t, "GET", "/api/threads/t1/mcp-tasks", aliceToken, "")
	require.Equal(t, 200, status)
	for _, raw := range body["tasks"].([]any) {
		item := raw.(map[string]any)
		require.Equal(t, 500, utf8.RuneCountInString(item["error"].(string)), "list error is cut too")
	}
	status, d = b.do(t, "GET", "/api/threads/t1/mcp-tasks/"+exactly.ID, aliceToken, "")
	require.Equal(t, 200, status)
	require.Equal(t, strings.Repeat("x", 500), d["error"], "500 characters stay whole")

	stored, err := b.db.GetTask(context.Background(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, 700, utf8.RuneCountInString(*stored.Error), "only the API view is cut")
}

// TestTaskTrackingDegraded pins tracking_degraded = consecutive poll
// errors >= tracking_degraded_after_errors, in list and detail.
func TestTaskTrackingDegraded(t *testing.T) {
	t.Parallel()
	b := setupTasks(t, &cancelRecorder{})
	b.thread(t, "t1", "alice")
	want := map[string]bool{}
	for n, errs := range []int{0, degradedAfter - 1, degradedAfter, degradedAfter + 5} {
		tk := b.task(t, "alice", "t1", n, mcpflow.StatusWorking, func(tk *mcpflow.Task) {
			tk.ConsecutivePollErrorCount = errs
			if errs > 0 {
				tk.LastPollError = ptr("status tool unavailable")
			}
		})
		want[tk.ID] = errs >= degradedAfter
	}
	status, body := b.do(t, "GET", "/api/threads/t1/mcp-tasks", aliceToken, "")
	require.Equal(t, 200, status)
	got := map[string]bool{}
	for _, raw := range body["tasks"].([]any) {
		item := raw.(map[string]any)
		got[item["task_id"].(string)] = item["tracking_degraded"].(bool)
	}
	require.Equal(t, want, got)
	for id, degraded := range want {
		status, d := b.do(t, "GET", "/api/threads/t1/mcp-tasks/"+id, aliceToken, "")
		require.Equal(t, 200, status)
		require.Equal(t, degraded, d["tracking_degraded"], id)
	}
}

// TestTaskListLimitAndActiveOnly pins limit (1..100, default 50, anything
// else 400) and the active_only filter (pollable statuses).
func TestTaskListLimitAndActiveOnly(t *testing.T) {
	t.Parallel()
	b := setupTasks(t, &cancelRecorder{})
	b.thread(t, "t1", "alice")
	statuses := []mcpflow.Status{mcpflow.StatusSubmitted, mcpflow.StatusWorking, mcpflow.StatusInputRequired,
		mcpflow.StatusCompleted, mcpflow.StatusFailed, mcpflow.StatusCancelled}
	var ids []string // newest first
	active := map[string]bool{}
	for n := 0; n < 60; n++ {
		tk := b.task(t, "alice", "t1", n, statuses[n%len(statuses)], nil)
		ids = append([]string{tk.ID}, ids...)
		active[tk.ID] = tk.Status.IsPollable()
	}

	status, body := b.do(t, "GET", "/api/threads/t1/mcp-tasks", aliceToken, "")
	require.Equal(t, 200, status)
	require.Equal(t, ids[:50], listIDs(t, body), "default limit 50")
	for _, limit := range []int{1, 7, 100} {
		status, body = b.do(t, "GET", fmt.Sprintf("/api/threads/t1/mcp-tasks?limit=%d", limit), aliceToken, "")
		require.Equal(t, 200, status, "limit %d", limit)
		require.Equal(t, ids[:min(limit, len(ids))], listIDs(t, body), "limit %d", limit)
	}
	for _, bad := range []string{"0", "101", "x", "-1", "1.5", "%20"} {
		status, body = b.do(t, "GET", "/api/threads/t1/mcp-tasks?limit="+bad, aliceToken, "")
		require.Equal(t, 400, status, "limit=%s: %v", bad, body)
		require.Equal(t, "invalid_argument", errCode(t, body))
		require.Contains(t, errMessage(body), "limit")
	}

	status, body = b.do(t, "GET", "/api/threads/t1/mcp-tasks?active_only=true&limit=100", aliceToken, "")
	require.Equal(t, 200, status)
	var wantActive []string
	for _, id := range ids {
		if active[id] {
			wantActive = append(wantActive, id)
		}
	}
	require.Len(t, wantActive, 30)
	require.Equal(t, wantActive, listIDs(t, body))
	for _, raw := range body["tasks"].([]any) {
		st := mcpflow.Status(raw.(map[string]any)["status"].(string))
		require.True(t, st.IsPollable(), st)
	}
	status, body = b.do(t, "GET", "/api/threads/t1/mcp-tasks?active_only=true&limit=2", aliceToken, "")
	require.Equal(t, 200, status)
	require.Equal(t, wantActive[:2], listIDs(t, body))
	status, body = b.do(t, "GET", "/api/threads/t1/mcp-tasks?active_only=false&limit=100", aliceToken, "")
	require.Equal(t, 200, status)
	require.Len(t, listIDs(t, body), 60)
	status, body = b.do(t, "GET", "/api/threads/t1/mcp-tasks?active_only=maybe", aliceToken, "")
	require.Equal(t, 400, status)
	require.Equal(t, "invalid_argument", errCode(t, body))
}

// TestTaskScoping pins that a task is reachable only through its own
// thread by its own user: anything else is 404 "MCP task not found" (or
// the thread's own 404), never 403; a deleted thread is 410.
func TestTaskScoping(t *testing.T) {
	t.Parallel()
	rec := &cancelRecorder{}
	b := setupTasks(t, rec)
	b.thread(t, "t-alice", "alice")
	b.thread(t, "t-alice-2", "alice")
	b.thread(t, "t-bob", "bob")
	mine := b.task(t, "alice", "t-alice", 1, mcpflow.StatusWorking, nil)
	other := b.task(t, "alice", "t-alice-2", 2, mcpflow.StatusWorking, nil)
	bobs := b.task(t, "bob", "t-bob", 3, mcpflow.StatusWorking, nil)

	notFound := func(method, path, token string) {
		t.Helper()
		status, body := b.do(t, method, path, token, "")
		require.Equal(t, 404, status, "%s %s: %v", method, path, body)
		require.Equal(t, "not_found", errCode(t, body))
		require.Equal(t, "MCP task not found", errMessage(body), "%s %s", method, path)
	}
	for _, method := range []string{"GET", "POST"} {
		suffix := ""
		if method == "POST" {
			suffix = "/cancel"
		}
		// Another user's task through the caller's own thread.
		notFound(method, "/api/threads/t-alice/mcp-tasks/"+bobs.ID+suffix, aliceToken)
		notFound(method, "/api/threads/t-bob/mcp-tasks/"+mine.ID+suffix, bobToken)
		// The caller's own task through another of the caller's threads.
		notFound(method, "/api/threads/t-alice/mcp-tasks/"+other.ID+suffix, aliceToken)
		// A task that does not exist.
		notFound(method, "/api/threads/t-alice/mcp-tasks/"+mcpflow.NewTaskID()+suffix, aliceToken)
		// Another user's thread is the thread's 404.
		status, body := b.do(t, method, "/api/threads/t-alice/mcp-tasks/"+mine.ID+suffix, bobToken, "")
		require.Equal(t, 404, status, "%v", body)
		require.Equal(t, "not_found", errCode(t, body))
	}
	status, body := b.do(t, "GET", "/api/threads/t-alice/mcp-tasks", bobToken, "")
	require.Equal(t, 404, status, "another user's thread list: %v", body)
	require.Equal(t, "not_found", errCode(t, body))
	status, body = b.do(t, "GET", "/api/threads/t-alice/mcp-tasks", aliceToken, "")
	require.Equal(t, 200, status)
	require.Equal(t, []string{mine.ID}, listIDs(t, body), "a thread lists only its own tasks")
	status, body = b.do(t, "GET", "/api/threads/t-bob/mcp-tasks", bobToken, "")
	require.Equal(t, 200, status)
	require.Equal(t, []string{bobs.ID}, listIDs(t, body))
	require.Empty(t, rec.called(), "no cancel reached the runtime")

	for _, path := range []string{"/api/threads/t-alice/mcp-tasks", "/api/threads/t-alice/mcp-tasks/" + mine.ID} {
		status, _ = b.do(t, "GET", path, "", "")
		require.Equal(t, 401, status, path)
	}
	status, _ = b.do(t, "POST", "/api/threads/t-alice/mcp-tasks/"+mine.ID+"/cancel", "", "")
	require.Equal(t, 401, status)

	// A deleted thread answers 410 on every task route.
	require.NoError(t, b.db.DeleteThread(context.Background(), "alice", "t-alice", time.Now()))
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/threads/t-alice/mcp-tasks"},
		{"GET", "/api/threads/t-alice/mcp-tasks/" + mine.ID},
		{"POST", "/api/threads/t-alice/mcp-tasks/" + mine.ID + "/cancel"},
	} {
		status, body := b.do(t, r.method, r.path, aliceToken, "")
		require.Equal(t, 410, status, "%s %s: %v", r.method, r.path, body)
		require.Equal(t, "gone", errCode(t, body))
	}
	require.Empty(t, rec.called(), "no cancel for a deleted thread's task")
}

// TestTaskCancelRoute pins POST …/cancel: it hands the task to CancelTask
// and answers 202 with the detail and cancel_requested true; a terminal
// task is 409 with the detail and never reaches CancelTask; an unavailable
// runtime is 503; a task that finished meanwhile is 409.
func TestTaskCancelRoute(t *testing.T) {
	t.Parallel()
	rec := &cancelRecorder{}
	b := setupTasks(t, rec)
	b.thread(t, "t1", "alice")
	live := b.task(t, "alice", "t1", 1, mcpflow.StatusWorking, nil)

	status, d := b.do(t, "POST", "/api/threads/t1/mcp-tasks/"+live.ID+"/cancel", aliceToken, "")
	require.Equal(t, 202, status, "%v", d)
	require.Equal(t, sortedCopy(detailFields), sortedKeys(d), "the answer is the detail")
	requireNoHidden(t, d)
	require.Equal(t, live.ID, d["task_id"])
	require.Equal(t, true, d["cancel_requested"])
	require.Equal(t, "working", d["status"], "the status stays active: cancellation is asynchronous")
	require.Equal(t, []string{live.ID}, rec.called())

	for n, st := range []mcpflow.Status{mcpflow.StatusCompleted, mcpflow.StatusFailed, mcpflow.StatusCancelled} {
		done := b.task(t, "alice", "t1", 10+n, st, func(tk *mcpflow.Task) {
			tk.Result = map[string]any{"answer": 42.0}
		})
		status, d = b.do(t, "POST", "/api/threads/t1/mcp-tasks/"+done.ID+"/cancel", aliceToken, "")
		require.Equal(t, 409, status, "%s: %v", st, d)
		require.Equal(t, sortedCopy(detailFields), sortedKeys(d), "409 answers the detail, not an error body")
		require.Equal(t, done.ID, d["task_id"])
		require.Equal(t, string(st), d["status"])
		require.Equal(t, false, d["cancel_requested"])
		require.Equal(t, map[string]any{"answer": 42.0}, d["result"])
	}
	require.Equal(t, []string{live.ID}, rec.called(), "terminal tasks never reach CancelTask")

	// No worker to perform the cancellation: 503, never acknowledged.
	rec.fail(mcpflow.Errorf(mcpflow.EUnavailable, "no mcpflow worker is running to perform the cancellation; try again when one is"))
	status, body := b.do(t, "POST", "/api/threads/t1/mcp-tasks/"+live.ID+"/cancel", aliceToken, "")
	require.Equal(t, 503, status, "%v", body)
	require.Equal(t, "unavailable", errCode(t, body))
	require.Equal(t, "no mcpflow worker is running to perform the cancellation; try again when one is", errMessage(body))

	// An internal failure is 500 and shows nothing of its cause.
	rec.fail(fmt.Errorf("dial tcp 10.0.0.7:7233: connection refused"))
	status, body = b.do(t, "POST", "/api/threads/t1/mcp-tasks/"+live.ID+"/cancel", aliceToken, "")
	require.Equal(t, 500, status, "%v", body)
	require.Equal(t, "internal", errCode(t, body))
	require.NotContains(t, errMessage(body), "10.0.0.7")

	// The workflow finished between the read and the signal: 409 with the
	// fresh detail.
	rec.fail(mcpflow.Errorf(mcpflow.EConflict, "the task already finished"))
	status, d = b.do(t, "POST", "/api/threads/t1/mcp-tasks/"+live.ID+"/cancel", aliceToken, "")
	require.Equal(t, 409, status, "%v", d)
	require.Equal(t, sortedCopy(detailFields), sortedKeys(d))
	require.Equal(t, live.ID, d["task_id"])
}

// TestTaskCancelWithoutRuntime pins that cancel answers 503 when no task
// runtime is wired (mcp_tasks disabled), while reads still work.
func TestTaskCancelWithoutRuntime(t *testing.T) {
	t.Parallel()
	b := setupTasks(t, nil)
	b.thread(t, "t1", "alice")
	tk := b.task(t, "alice", "t1", 1, mcpflow.StatusWorking, nil)
	status, body := b.do(t, "POST", "/api/threads/t1/mcp-tasks/"+tk.ID+"/cancel", aliceToken, "")
	require.Equal(t, 503, status, "%v", body)
	require.Equal(t, "unavailable", errCode(t, body))
	require.Equal(t, "MCP task service not available", errMessage(body))
	status, body = b.do(t, "GET", "/api/threads/t1/mcp-tasks/"+tk.ID, aliceToken, "")
	require.Equal(t, 200, status)
	require.Equal(t, false, body["cancel_requested"])
}

func ptr[T any](v T) *T { return &v }
