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
