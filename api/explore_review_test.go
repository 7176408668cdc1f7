package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpclient"
	"github.com/mcpflow/mcpflow/store"
)

// oneActiveTask is a thread with one running durable task; it records the
// tasks cancel_background_task cancels.
type oneActiveTask struct {
	mu        sync.Mutex
	task      *mcpflow.Task
	cancelled []string
}

func (o *oneActiveTask) ListTasks(_ context.Context, f mcpflow.TaskFilter) ([]*mcpflow.Task, error) {
	if f.UserID != o.task.UserID || f.ThreadID != o.task.ThreadID {
		return nil, nil
	}
	return []*mcpflow.Task{o.task}, nil
}

func (o *oneActiveTask) CancelTask(_ context.Context, t *mcpflow.Task) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cancelled = append(o.cancelled, t.ID)
	return nil
}

func (o *oneActiveTask) calls() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.cancelled...)
}

// Defect (explore review): cancel_background_task called with a "task"
// argument that is not a string ({"task": 12345}, {"task": ["x"]},
// {"task": {"id": "x"}}) cancels the thread's only active task. The
// tool's input schema says `task` is "The task ID or the task name"
// ({"type": "string"}), and docs/agent-developers.md ("Durable tasks")
// describes `cancel_background_task {task}` as cancelling by task id or
// name: a value that names no task must not cancel anything. The
// wrong-typed value is dropped (want == "") and then treated like an
// omitted argument, which picks the only active task. Seen against make
// dev: a 60 s demo job was cancelled by {"arguments": {"task": 12345}}.
func TestExploreCancelBackgroundTaskWrongTypeCancelsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(dir, "api.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{Users: []api.UserToken{{UserID: "alice", Token: aliceToken}}})
	require.NoError(t, err)
	path := filepath.Join(dir, "extensions_config.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers":{}}`), 0o600))
	log := slog.New(slog.DiscardHandler)
	rt := mcpclient.NewRuntime(mcpclient.Options{ExtensionsPath: path, WorkspaceRoot: filepath.Join(dir, "workspace"), Logger: log})
	t.Cleanup(func() { _ = rt.Close() })
	rt.SetSubmitter(func(context.Context, mcpflow.ToolCall, mcpflow.Tool, config.TaskToolset) (*mcpflow.ToolResult, error) {
		return nil, nil
	})
	now := time.Now().UTC()
	bt := &oneActiveTask{task: &mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: "alice", ThreadID: "t1", TaskName: "demo-job",
		Status: mcpflow.StatusWorking, CreatedAt: now, UpdatedAt: now}}
	rt.SetBackgroundTasks(bt)
	srv := api.New(api.Options{Auth: auth, Threads: db, Tools: rt, Logger: log})

	for _, args := range []string{`{"task": 12345}`, `{"task": ["demo-job"]}`, `{"task": {"id": "x"}}`, `{"task": true}`} {
		code, body := serveJSON(t, srv.Handler(), http.MethodPost, "/api/threads/t1/tools/cancel_background_task/call", aliceToken,
			`{"arguments": `+args+`}`)
		require.Contains(t, []int{http.StatusOK, http.StatusBadRequest}, code, "%s: %v", args, body)
		require.Empty(t, bt.calls(), "cancel_background_task %s names no task, yet it cancelled the thread's only active task: %v", args, body)
	}
	// A real name still cancels it.
	code, body := serveJSON(t, srv.Handler(), http.MethodPost, "/api/threads/t1/tools/cancel_background_task/call", aliceToken,
		`{"arguments": {"task": "demo-job"}}`)
	require.Equal(t, http.StatusOK, code, "%v", body)
	require.Equal(t, []string{bt.task.ID}, bt.calls())
}

// Defect (explore review, a resource left behind): DELETE
// /api/threads/{id} leaves the thread's running durable tasks running,
// and from then on every route that could stop them answers 410 gone
// (GET/POST …/mcp-tasks/{task_id}[/cancel], the MCP endpoint of the
// thread, its tools): the task's Temporal workflow polls its remote task
// forever (an input_required demo job stays Running in Temporal after
// its thread was deleted, seen against make dev), holding one of the
// user's mcp_tasks.max_running_tasks_per_user slots (docs/operations.md
// "Limits": "running durable tasks (not ended)"), and nobody but an
// operator with the Temporal CLI can end it. docs/reference/http-api.md
// says only "DELETE /api/threads/{id} | owner | 204; the id stays a
// tombstone". Expected: deleting a thread cancels its active tasks, or
// leaves them cancellable by their owner.
func TestExploreDeletedThreadLeavesTasksUncancellable(t *testing.T) {
	t.Parallel()
	rec := &cancelRecorder{}
	b := setupTasks(t, rec)
	b.thread(t, "t1", "alice")
	task := b.task(t, "alice", "t1", 1, mcpflow.StatusWorking, nil)

	code, body := b.do(t, http.MethodDelete, "/api/threads/t1", aliceToken, "")
	require.Equal(t, http.StatusNoContent, code, "%v", body)
	if slices.Contains(rec.called(), task.ID) {
		return // the delete cancelled it
	}
	code, body = b.do(t, http.MethodPost, "/api/threads/t1/mcp-tasks/"+task.ID+"/cancel", aliceToken, "")
	require.Equal(t, http.StatusAccepted, code,
		"the thread's running task was neither cancelled by DELETE nor can be cancelled after it: %d %v", code, body)
}
