package workflows_test

import (
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// Spec §7 scenario 48, on Temporal: submit → poll (running, hint 1) → the
// task moves to another worker (a new run, as after continue-as-new or a
// restart) which polls it to completed with its result; then a remote task
// that fails ends failed with its error.
func TestScenarioSubmitPollRestartComplete(t *testing.T) {
	t.Parallel()
	first := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: hint(1)}},
	}}
	b := setup(t, first)
	b.env.SetContinueAsNewSuggested(true)
	res, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusSubmitted, res.Status)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, b.env.GetWorkflowError(), &can)
	require.Equal(t, mcpflow.StatusWorking, b.task(t).Status)
	var next workflows.TaskInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))

	// Another worker process: new activities, new driver, same database.
	second := &fakeDriver{statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"report": "ready"}}},
	}}
	b2 := newWorker(t, b.db, second)
	b2.in = next
	starts := b2.recordActivities()
	start := b2.env.Now()
	b2.env.ExecuteWorkflow(workflows.TaskWorkflow, next)
	require.True(t, b2.env.IsWorkflowCompleted())
	require.NoError(t, b2.env.GetWorkflowError())
	polls := only(*starts, "Poll")
	require.Len(t, polls, 1)
	require.Equal(t, time.Second, polls[0].at.Sub(start), "the remote hint of 1 s still applies")
	task := b2.task(t)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.Equal(t, map[string]any{"report": "ready"}, task.Result)
	require.NotNil(t, task.CompletedAt)
	require.Empty(t, second.submitReqs, "no second submit")
	require.Len(t, first.submitReqs, 1)

	// A remote task that fails.
	d := &fakeDriver{submitID: "remote-2", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking}},
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: str("remote job crashed")}},
	}}
	b3 := newWorker(t, b.db, d)
	b3.in = b.in
	b3.in.TaskID = mcpflow.NewTaskID()
	_, err = b3.run(t)
	require.NoError(t, err)
	require.NoError(t, b3.env.GetWorkflowError())
	failed := b3.task(t)
	require.Equal(t, mcpflow.StatusFailed, failed.Status)
	require.Equal(t, "remote job crashed", *failed.Error)
	require.NotNil(t, failed.CompletedAt)
	require.Equal(t, mcpflow.StatusFailed, b3.outcome(t).Status)
}

// Spec §7 scenario 49: a status tool answering isError is a transient poll
// error (recorded at once, the task still submitted); a later structured
// failed status fails the task and clears the error count.
func TestScenarioStatusIsErrorThenStructuredFailed(t *testing.T) {
	t.Parallel()
	const isError = "MCP task tool 'status_report' returned an error: upstream temporarily unavailable"
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		fails(isError),
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: str("report generation failed")}},
	}}
	b := setup(t, d)
	var afterError *mcpflow.Task
	d.onStatus = func(n int) {
		if n == 2 {
			afterError = b.task(t)
		}
	}
	starts := b.recordActivities()
	_, err := b.run(t)
	require.NoError(t, err)

	require.NotNil(t, afterError)
	require.Equal(t, mcpflow.StatusSubmitted, afterError.Status)
	require.Equal(t, 1, afterError.ConsecutivePollErrorCount)
	require.Equal(t, isError, *afterError.LastPollError)
	require.NotNil(t, afterError.LastPolledAt)
	require.Nil(t, afterError.Error, "a transient error is not the task's error")
	require.Equal(t, secs(5), gaps(only(*starts, "Poll")), "the next poll is scheduled (5 s after one error)")

	task := b.task(t)
	require.Equal(t, mcpflow.StatusFailed, task.Status)
	require.Equal(t, "report generation failed", *task.Error)
	require.Zero(t, task.ConsecutivePollErrorCount)
	require.Nil(t, task.LastPollError)
	require.NotNil(t, task.CompletedAt)
}
