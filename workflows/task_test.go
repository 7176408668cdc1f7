package workflows_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
	"github.com/mcpflow/mcpflow/store"
	"github.com/mcpflow/mcpflow/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
)

// fakeDriver scripts the remote side: each Status call takes the next
// scripted answer (the last one repeats).
type fakeDriver struct {
	mu        sync.Mutex
	submitID  string
	submitErr error
	statuses  []statusAnswer
	statusN   int
	cancels   int
	cancelAns []statusAnswer
}

type statusAnswer struct {
	snap mcpflow.Snapshot
	err  error
}

func (d *fakeDriver) Submit(ctx context.Context, req mcpflow.SubmitRequest) (mcpflow.Submission, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.submitErr != nil {
		return mcpflow.Submission{}, d.submitErr
	}
	return mcpflow.Submission{RemoteTaskID: d.submitID, Snapshot: mcpflow.Snapshot{Status: mcpflow.StatusSubmitted}}, nil
}

func (d *fakeDriver) Status(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := d.statusN
	if i >= len(d.statuses) {
		i = len(d.statuses) - 1
	}
	d.statusN++
	return d.statuses[i].snap, d.statuses[i].err
}

func (d *fakeDriver) Cancel(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cancels++
	if len(d.cancelAns) > 0 {
		a := d.cancelAns[0]
		if len(d.cancelAns) > 1 {
			d.cancelAns = d.cancelAns[1:]
		}
		return a.snap, a.err
	}
	return mcpflow.Snapshot{Status: mcpflow.StatusCancelled}, nil
}

type bundle struct {
	env    *testsuite.TestWorkflowEnvironment
	db     *store.DB
	driver *fakeDriver
	in     workflows.TaskInput
}

func setup(t *testing.T, d *fakeDriver) *bundle {
	t.Helper()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(t.TempDir(), "wf.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, _, err = db.CreateThread(context.Background(), &mcpflow.Thread{ID: "th", UserID: "u", CreatedAt: time.Now()})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.TaskWorkflow)
	env.RegisterActivity(&activities.Activities{Driver: d, Tasks: db, PinnedQueue: "pinned"})
	in := workflows.TaskInput{
		TaskID: mcpflow.NewTaskID(), UserID: "u", ThreadID: "th", ServerName: "srv", TaskName: "job",
		DriverName: mcpflow.DriverOrdinary, DriverData: map[string]string{"submit_tool": "s", "status_tool": "st", "cancel_tool": "c"},
		Arguments: map[string]any{"x": 1},
		Config: workflows.TaskConfig{
			Timing: mcpflow.PollTiming{PollInterval: 5 * time.Second, InputRequiredInterval: 60 * time.Second,
				MaxPollBackoff: 300 * time.Second, DegradedAfterErrors: 3},
			Bounds: mcpflow.DefaultBounds(), CallTimeout: 2 * time.Minute,
		},
	}
	return &bundle{env: env, db: db, driver: d, in: in}
}

// run starts the workflow with the submit update, as update-with-start does.
func (b *bundle) run(t *testing.T) (*workflows.SubmitResult, error) {
	var res *workflows.SubmitResult
	var subErr error
	b.env.RegisterDelayedCallback(func() {
		b.env.UpdateWorkflow(workflows.UpdateSubmit, "submit-1", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { subErr = err },
			OnComplete: func(v any, err error) {
				subErr = err
				if err == nil {
					res = v.(*workflows.SubmitResult)
				}
			},
		})
	}, 0)
	b.env.ExecuteWorkflow(workflows.TaskWorkflow, b.in)
	require.True(t, b.env.IsWorkflowCompleted())
	return res, subErr
}

func str(s string) *string { return &s }

func TestSubmitPollComplete(t *testing.T) {
	hint := 9.0
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: &hint}},
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: &hint}},
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"answer": 42.0}}},
	}}
	b := setup(t, d)
	res, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, b.in.TaskID, res.TaskID)
	require.Equal(t, mcpflow.StatusSubmitted, res.Status)
	require.NoError(t, b.env.GetWorkflowError())
	task, err := b.db.GetTask(context.Background(), b.in.TaskID)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.Equal(t, map[string]any{"answer": 42.0}, task.Result)
	require.Equal(t, "remote-1", task.RemoteTaskID)
	require.NotNil(t, task.CompletedAt)
	require.Equal(t, 3, d.statusN)
}

func TestSubmitFailureIsNotTracked(t *testing.T) {
	d := &fakeDriver{submitErr: errors.New("boom")}
	b := setup(t, d)
	_, err := b.run(t)
	require.ErrorContains(t, err, "boom")
	_, gerr := b.db.GetTask(context.Background(), b.in.TaskID)
	require.Equal(t, mcpflow.ENotFound, mcpflow.ErrorCode(gerr))
	require.Zero(t, d.cancels, "nothing to compensate when the submit itself failed")
}

func TestCancelSignalFencesPolling(t *testing.T) {
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking}},
	}}
	b := setup(t, d)
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.SignalCancel, "") }, 3*time.Minute)
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.SignalCancel, "again") }, 4*time.Minute)
	_, err := b.run(t)
	require.NoError(t, err)
	require.NoError(t, b.env.GetWorkflowError())
	task, err := b.db.GetTask(context.Background(), b.in.TaskID)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCancelled, task.Status)
	require.NotNil(t, task.CancelRequestedAt)
	require.Equal(t, 1, d.cancels, "a repeated cancel request sends no second remote cancel")
}

func TestProtocolErrorFailsTask(t *testing.T) {
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{err: mcpflow.NewProtocolError("bad payload")},
	}}
	b := setup(t, d)
	_, err := b.run(t)
	require.NoError(t, err)
	task, err := b.db.GetTask(context.Background(), b.in.TaskID)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusFailed, task.Status)
	require.Equal(t, "bad payload", *task.Error)
}

func TestRemoteIDTooLongIsCompensated(t *testing.T) {
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'r'
	}
	d := &fakeDriver{submitID: string(long)}
	b := setup(t, d)
	_, err := b.run(t)
	require.ErrorContains(t, err, "255")
	require.Equal(t, 1, d.cancels, "the untracked remote task is cancelled")
}

func TestTransientErrorsDegradeThenRecover(t *testing.T) {
	down := errors.New("upstream temporarily unavailable")
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{err: down}, {err: down}, {err: down}, {err: down},
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted}},
	}}
	b := setup(t, d)
	_, err := b.run(t)
	require.NoError(t, err)
	task, err := b.db.GetTask(context.Background(), b.in.TaskID)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.Zero(t, task.ConsecutivePollErrorCount)
	require.Nil(t, task.LastPollError)
	require.Equal(t, 5, d.statusN)
}
