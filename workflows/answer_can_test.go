package workflows_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/workflows"
)

// hookTasks is a task store that runs a hook (once) when the workflow
// writes the row with the task's question: the moment an answer can be
// accepted while the run goes on to decide whether to continue as new.
type hookTasks struct {
	mcpflow.TaskStore
	once sync.Once
	hook func()
}

func (s *hookTasks) UpdateTask(ctx context.Context, t *mcpflow.Task) error {
	err := s.TaskStore.UpdateTask(ctx, t)
	if t.Status == mcpflow.StatusInputRequired {
		s.once.Do(s.hook)
	}
	return err
}

// An answer accepted while the run decides to continue as new (its
// history grew long while the row with the question was written) is
// delivered before the run continues: the run must not wait for the answer
// handler that only the tracking loop would finish (it hung).
func TestAnswerPendingAtContinueAsNew(t *testing.T) {
	t.Parallel()
	d := &answeringDriver{fakeDriver: &fakeDriver{submitID: "r-can", statuses: []statusAnswer{working()}}, holds: true}
	b := setupAnswering(t, d)
	b.in.Config.Shape = 0 // the workflow writes each change itself, then checks its history's length
	var ans updateOutcome
	b.acts.Tasks = &hookTasks{TaskStore: b.db, hook: func() {
		b.env.SetContinueAsNewSuggested(true)
		b.env.UpdateWorkflow(workflows.UpdateInput, "a-1", &updateCallbacks{out: &ans},
			mcpflow.InputAnswer{Action: mcpflow.InputAccept, Content: map[string]any{"interpretation": "historical"}})
	}}
	_, err := b.run(t)
	require.NoError(t, err)
	require.True(t, b.env.IsWorkflowCompleted())
	require.True(t, ans.accepted && ans.completed, "the answer was never finished: %+v", ans)
	require.NoError(t, ans.err)
	require.Len(t, d.answers, 1, "delivered once")

	// The run continued as new with the answer delivered: the next run
	// starts working, its question behind it.
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, b.env.GetWorkflowError(), &can)
	var next workflows.TaskInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, mcpflow.StatusWorking, next.State.Snapshot.Status)
}

// updateCallbacks records an update's outcome (testsuite.UpdateCallbacks).
type updateCallbacks struct{ out *updateOutcome }

func (u *updateCallbacks) Accept()                   { u.out.accepted = true }
func (u *updateCallbacks) Reject(err error)          { u.out.rejected, u.out.err = true, err }
func (u *updateCallbacks) Complete(_ any, err error) { u.out.completed, u.out.err = true, err }

// A task started by a newer mcpflow with a shape this build does not know
// is not run as one it knows: its workflow task fails (and is retried, by
// a newer worker once one polls), nothing is submitted.
func TestNewerShapeFailsTheWorkflowTask(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r-new", statuses: []statusAnswer{working()}}
	b := setup(t, d)
	b.in.Config.Shape = workflows.ShapeNewest + 1
	_, _ = b.run(t)
	err := b.env.GetWorkflowError()
	require.Error(t, err)
	var pe *temporal.PanicError
	require.ErrorAs(t, err, &pe, "a workflow task failure (panic), not a failed task: %v", err)
	require.Contains(t, pe.Error(), "this mcpflow worker runs task shapes up to 3, but task "+b.in.TaskID+" was started with shape 4")
	require.Empty(t, d.submitReqs)
	b.requireNoRow(t)
}
