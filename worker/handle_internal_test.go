package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/workflows"
)

// A retried submit (same idempotency key) answers its task's handle with
// the row's status; once the task ended, the message says so rather than
// that it runs in the background.
func TestHandleOfAStoredTask(t *testing.T) {
	c := &TaskClient{}
	for status, want := range map[mcpflow.Status]string{
		mcpflow.StatusWorking:   workflows.SubmitMessage,
		mcpflow.StatusCancelled: "The task has already ended: cancelled.",
		mcpflow.StatusCompleted: "The task has already ended: completed.",
	} {
		res := c.handle(&mcpflow.Task{ID: "mcp-task-1", TaskName: "job", Status: status}, config.TaskToolset{})
		got, ok := res.StructuredContent.(workflows.SubmitResult)
		require.True(t, ok)
		require.Equal(t, want, got.Message, status)
		require.Equal(t, status, got.Status)
	}
}
