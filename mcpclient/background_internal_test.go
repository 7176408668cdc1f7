package mcpclient

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// filterRecorder is a task store that records the filter it was asked.
type filterRecorder struct{ got mcpflow.TaskFilter }

func (f *filterRecorder) ListTasks(_ context.Context, flt mcpflow.TaskFilter) ([]*mcpflow.Task, error) {
	f.got = flt
	return nil, nil
}
func (f *filterRecorder) CancelTask(context.Context, *mcpflow.Task) error { return nil }

// list_background_tasks reads its limit whether the number arrived as
// json.Number (the API's decoding) or float64.
func TestListBackgroundLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args map[string]any
		want int
	}{
		{map[string]any{"limit": json.Number("7")}, 7},
		{map[string]any{"limit": json.Number("500")}, 50},
		{map[string]any{"limit": 3.0}, 3},
		{map[string]any{"limit": "x"}, 20},
		{nil, 20},
	} {
		rec := &filterRecorder{}
		_, err := listBackground(context.Background(), rec, mcpflow.ToolCall{UserID: "u", ThreadID: "t", Arguments: tc.args})
		require.NoError(t, err)
		require.Equal(t, tc.want, rec.got.Limit, "%v", tc.args)
	}
}

// activeTasks is a task store whose thread has these active tasks; it
// records the tasks it was asked to cancel.
type activeTasks struct {
	tasks     []*mcpflow.Task
	cancelled []string
}

func (a *activeTasks) ListTasks(context.Context, mcpflow.TaskFilter) ([]*mcpflow.Task, error) {
	return a.tasks, nil
}
func (a *activeTasks) CancelTask(_ context.Context, t *mcpflow.Task) error {
	a.cancelled = append(a.cancelled, t.ID)
	return nil
}

// cancel_background_task with a name two active tasks share cancels
// neither and names both with their ids, which tell them apart.
func TestCancelBackgroundSameName(t *testing.T) {
	t.Parallel()
	bt := &activeTasks{tasks: []*mcpflow.Task{
		{ID: "mcp-task-1", TaskName: "demo-job", Status: mcpflow.StatusWorking},
		{ID: "mcp-task-2", TaskName: "Demo-Job ", Status: mcpflow.StatusWorking},
	}}
	out := cancelBackground(context.Background(), bt, mcpflow.ToolCall{Arguments: map[string]any{"task": "demo-job"}})
	require.Equal(t, map[string]any{"cancelled": false, "message": "More than one active background task matches; " +
		"specify one by its name or, for tasks of the same name, its ID: demo-job (mcp-task-1), Demo-Job  (mcp-task-2)"}, out)
	require.Empty(t, bt.cancelled)
	out = cancelBackground(context.Background(), bt, mcpflow.ToolCall{Arguments: map[string]any{"task": "mcp-task-2"}})
	require.Equal(t, true, out.(map[string]any)["task"].(bgTask).CancelRequested)
	require.Equal(t, []string{"mcp-task-2"}, bt.cancelled)
}
