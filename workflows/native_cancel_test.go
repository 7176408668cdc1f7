package workflows_test

import (
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A task workflow started without its submit (by hand, or an update that
// never came) and then cancelled through Temporal ends Canceled at once
// (ShapeReport on); the older shapes wait out the 5-minute bound and end
// "no submit request arrived", as their recorded histories did.
func TestTemporalCancelBeforeSubmit(t *testing.T) {
	t.Parallel()
	for _, shape := range []int{workflows.ShapeReport, workflows.ShapeLean} {
		d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{working()}}
		b := setup(t, d)
		b.in.Config.Shape = shape
		start := b.env.Now()
		b.env.RegisterDelayedCallback(b.env.CancelWorkflow, time.Minute)
		b.env.ExecuteWorkflow(workflows.TaskWorkflow, b.in)
		require.True(t, b.env.IsWorkflowCompleted())
		took := b.env.Now().Sub(start)
		require.Empty(t, d.submitReqs)
		b.requireNoRow(t)
		if shape == workflows.ShapeReport {
			var ce *temporal.CanceledError
			require.ErrorAs(t, b.env.GetWorkflowError(), &ce)
			require.Equal(t, time.Minute, took, "the cancel ends the wait")
			continue
		}
		require.NoError(t, b.env.GetWorkflowError())
		out := b.outcome(t)
		require.Equal(t, mcpflow.StatusFailed, out.Status)
		require.Equal(t, "no submit request arrived", *out.Error)
		require.Equal(t, 5*time.Minute, took)
	}
}

// A Temporal-cancelled task whose remote cancel keeps failing continues as
// new while cancelling; the next run finishes the cancel and still ends
// Canceled (the flag travels in the state).
func TestTemporalCancelSurvivesContinueAsNew(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{working()},
		cancelAns: []statusAnswer{fails("cancel endpoint down")}}
	b := setup(t, d)
	b.env.RegisterDelayedCallback(b.env.CancelWorkflow, time.Minute)
	d.onCancel = func(int) { b.env.SetContinueAsNewSuggested(true) }
	_, err := b.run(t)
	require.NoError(t, err)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, b.env.GetWorkflowError(), &can)
	var next workflows.TaskInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	require.True(t, next.State.NativeCancel)
	require.NotNil(t, next.State.CancelRequestedAt)

	d2 := &fakeDriver{statuses: []statusAnswer{working()}}
	b2 := newWorker(t, b.db, d2)
	b2.in = next
	b2.env.ExecuteWorkflow(workflows.TaskWorkflow, next)
	require.True(t, b2.env.IsWorkflowCompleted())
	var ce *temporal.CanceledError
	require.ErrorAs(t, b2.env.GetWorkflowError(), &ce, "the continued run ends Canceled like the one that was cancelled")
	_, cancels := d2.counts()
	require.Equal(t, 1, cancels)
	require.Equal(t, mcpflow.StatusCancelled, b2.task(t).Status)
}
