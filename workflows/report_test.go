package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/workflows"
	"github.com/stretchr/testify/require"
)

// requireEventStatuses checks the thread's inbox holds versions 1..n, once
// each, with these statuses.
func (b *bundle) requireEventStatuses(t *testing.T, want ...string) {
	t.Helper()
	evs, err := b.db.ListEvents(context.Background(), mcpflow.ThreadRef{UserID: b.in.UserID, ThreadID: b.in.ThreadID}, 0, 0)
	require.NoError(t, err)
	var got []string
	for i, ev := range evs {
		require.Equal(t, i+1, ev.EventVersion, "versions 1..n, once each")
		got = append(got, string(ev.Status))
	}
	require.Equal(t, want, got)
}

// The report shape: one poll activity carries the task through every
// change; each change is written where it is found and reported by signal
// (the workflow upserts a new status), and the terminal report closes the
// run. Nothing but the create is written by the workflow.
func TestReportShapeOnePollForEveryChange(t *testing.T) {
	t.Parallel()
	question := map[string]any{"q": "which?"}
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		working(),
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: question}},
		working(),
		working(),
		completed(),
	}}
	b := setup(t, d)
	sig := &flakySignaller{envSignaller: envSignaller{b.env}}
	b.acts.Reports = sig
	starts := b.recordActivities()
	upserted := b.recordStatusUpserts()
	_, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, b.outcome(t).Status)
	require.Equal(t, 4, sig.sent, "one report per change; the repeated working answer matches the row")

	task := b.task(t)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.Equal(t, "done", task.Result)
	require.Equal(t, 5, task.PollAttemptCount)
	require.NotNil(t, task.CompletedAt)
	executions := map[string]bool{}
	for _, p := range only(*starts, "Poll") {
		executions[p.id] = true
	}
	require.Len(t, executions, 1, "one poll activity for the whole task")
	require.Len(t, only(*starts, "Persist"), 1, "the workflow writes only the create")
	require.Empty(t, only(*starts, "ReadRow"), "nothing stopped the poll")
	require.Equal(t, []string{"working", "input_required", "working", "completed"}, *upserted)
	b.requireEventStatuses(t, "input_required", "completed") // attention statuses only
}

// flakySignaller refuses the first n reports, as a Temporal frontend that
// is briefly unreachable would, and counts those it sent.
type flakySignaller struct {
	envSignaller
	mu      sync.Mutex
	refuse  int
	refused int
	sent    int
}

func (s *flakySignaller) SignalWorkflow(ctx context.Context, id, run, name string, arg any) error {
	s.mu.Lock()
	refuse := s.refused < s.refuse
	if refuse {
		s.refused++
	}
	s.mu.Unlock()
	if refuse {
		return errors.New("frontend unavailable")
	}
	s.mu.Lock()
	s.sent++
	s.mu.Unlock()
	return s.envSignaller.SignalWorkflow(ctx, id, run, name, arg)
}

// A report that does not get through is sent again by the next attempt
// before it polls; the workflow sees every change once, in order.
func TestReportShapeRetriesALostReport(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{working(), completed()}}
	b := setup(t, d)
	sig := &flakySignaller{envSignaller: envSignaller{b.env}, refuse: 2}
	b.acts.Reports = sig
	upserted := b.recordStatusUpserts()
	_, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, b.outcome(t).Status)
	require.Equal(t, 2, sig.refused)
	statuses, _ := d.counts()
	require.Equal(t, 2, statuses, "the retried reports polled nothing")
	require.Equal(t, []string{"working", "completed"}, *upserted)
	b.requireEventStatuses(t, "completed")
	require.Equal(t, 2, b.task(t).PollAttemptCount)
}

// A cancel that stops the poll while its last change was written but never
// reported: the workflow reads the row back and goes on from it, so the
// cancel's event is the next version and the status it shows is current.
func TestReportShapeCancelAdoptsAnUnreportedWrite(t *testing.T) {
	t.Parallel()
	question := map[string]any{"q": "which?"}
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: question}},
	}}
	b := setup(t, d)
	sig := &flakySignaller{envSignaller: envSignaller{b.env}, refuse: 1 << 30} // no report gets through
	b.acts.Reports = sig
	starts := b.recordActivities()
	upserted := b.recordStatusUpserts()
	// Before the test environment's cap of 10 attempts ends the poll.
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.SignalCancel, "") }, 30*time.Second)
	_, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCancelled, b.outcome(t).Status)
	require.GreaterOrEqual(t, sig.refused, 3, "the report was retried")
	require.Len(t, only(*starts, "ReadRow"), 1, "the stopped poll's row is read back")
	require.Equal(t, []string{"input_required", "cancelled"}, *upserted, "the adopted status is shown, then the cancel's")
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCancelled, task.Status)
	require.Equal(t, 1, task.PollAttemptCount)
	b.requireEventStatuses(t, "input_required", "cancelled")
}

// A progress message alone is not a change: the reporting poll writes it to
// the row, and neither reports it nor records anything in the history.
func TestReportShapeWritesProgressMessagesOnly(t *testing.T) {
	t.Parallel()
	msg := func(m string) statusAnswer {
		return statusAnswer{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, Message: &m}}
	}
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{msg("25% done"), msg("50% done"), msg("75% done"), msg("75% done"), completed()}}
	b := setup(t, d)
	sig := &flakySignaller{envSignaller: envSignaller{b.env}}
	b.acts.Reports = sig
	var seen []string
	d.onStatus = func(n int) {
		// The row as the API shows it when the n-th poll starts.
		task, err := b.db.GetTask(context.Background(), b.in.TaskID)
		if err == nil && task.StatusMessage != nil {
			seen = append(seen, *task.StatusMessage)
		}
	}
	upserted := b.recordStatusUpserts()
	_, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, b.outcome(t).Status)
	require.Equal(t, 2, sig.sent, "reports: the first working and completed; no message change is reported")
	require.Equal(t, []string{"working", "completed"}, *upserted)
	require.Equal(t, []string{"25% done", "50% done", "75% done", "75% done"}, seen, "each new message reached the row")
	require.Nil(t, b.task(t).StatusMessage, "a finished task keeps no progress message")
}

// A call waiting for approval runs the report shape under ShapeApproval:
// the same loop (one poll activity across changes), to its end.
func TestApprovalShapeRunsTheReportLoop(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "approval-1", statuses: []statusAnswer{working(), working(), completed()}}
	b := setup(t, d)
	b.in.Config.Shape = workflows.ShapeApproval
	sig := &flakySignaller{envSignaller: envSignaller{b.env}}
	b.acts.Reports = sig
	starts := b.recordActivities()
	_, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, b.outcome(t).Status)
	executions := map[string]bool{}
	for _, p := range only(*starts, "Poll") {
		executions[p.id] = true
	}
	require.Len(t, executions, 1, "one poll activity carried the task to its end")
}
