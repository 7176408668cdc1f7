package activities_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/store"
)

// statusDriver answers every status call with snap.
type statusDriver struct {
	sendingDriver
	snap mcpflow.Snapshot
}

func (d *statusDriver) Status(context.Context, mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	return d.snap, nil
}

// racingTasks is a task store whose first GetTask of the task, once armed,
// lets another writer (the workflow applying a cancel) write the row right
// after the read: the poll then writes a row it read before that write.
type racingTasks struct {
	mcpflow.TaskStore
	mu    sync.Mutex
	armed func()
}

// UpdateTaskWithEvent is the store's own (mcpflow.TaskEventWriter).
func (s *racingTasks) UpdateTaskWithEvent(ctx context.Context, t *mcpflow.Task, e *mcpflow.ThreadEvent) (int64, error) {
	return s.TaskStore.(mcpflow.TaskEventWriter).UpdateTaskWithEvent(ctx, t, e)
}

func (s *racingTasks) GetTask(ctx context.Context, id string) (*mcpflow.Task, error) {
	t, err := s.TaskStore.GetTask(ctx, id)
	s.mu.Lock()
	race := s.armed
	s.armed = nil
	s.mu.Unlock()
	if race != nil {
		race()
	}
	return t, err
}

// fenceBundle is a working task in a real SQLite store and the poll input
// a workflow built from it (the lean shape: the activity writes changes).
type fenceBundle struct {
	db   *store.DB
	task mcpflow.Task
	in   activities.PollInput
}

func newFence(t *testing.T) *fenceBundle {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.BackendSQLite, testenv.SQLiteFile(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, _, err = db.CreateThread(ctx, &mcpflow.Thread{ID: "th", UserID: "u", CreatedAt: time.Now()})
	require.NoError(t, err)
	task := mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: "u", ThreadID: "th", ServerName: "s", DriverName: "d",
		RemoteTaskID: "r", TaskName: "job", Status: mcpflow.StatusWorking, CreatedAt: time.Now().UTC()}
	require.NoError(t, db.CreateTask(ctx, &task))
	row := task
	row.RowVersion = 0 // the workflow's row carries no version
	return &fenceBundle{db: db, task: task, in: activities.PollInput{
		Ref:    mcpflow.TaskReference{LocalTaskID: task.ID, UserID: "u", ThreadID: "th", ServerName: "s", RemoteTaskID: "r"},
		Timing: mcpflow.PollTiming{PollInterval: time.Second, InputRequiredInterval: time.Second, MaxPollBackoff: time.Minute},
		Bounds: mcpflow.DefaultBounds(), LastFingerprint: "before", Row: &row,
	}}
}

// cancel writes the row as the workflow's cancel does: cancel requested,
// then the remote cancel's terminal status.
func (b *fenceBundle) cancel(t *testing.T) {
	t.Helper()
	c := b.task
	c.RowVersion = 0
	now := time.Now().UTC()
	c.CancelRequestedAt = &now
	c.Status = mcpflow.StatusCancelled
	c.CompletedAt = &now
	require.NoError(t, b.db.UpdateTask(context.Background(), &c))
}

func (b *fenceBundle) poll(t *testing.T, tasks mcpflow.TaskStore, in activities.PollInput) error {
	t.Helper()
	d := &statusDriver{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: "done late"}}
	a := &activities.Activities{Driver: d, Tasks: tasks, Threads: b.db, Events: b.db}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	_, err := env.ExecuteActivity(a.Poll, in)
	return err
}

func (b *fenceBundle) requireCancelled(t *testing.T, err error) {
	t.Helper()
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae, "the stale poll must fail, not report a change")
	got, gerr := b.db.GetTask(context.Background(), b.task.ID)
	require.NoError(t, gerr)
	require.Equal(t, mcpflow.StatusCancelled, got.Status, "a late poll overwrote the cancel")
	require.NotNil(t, got.CancelRequestedAt, "a late poll erased the cancel request")
	require.Nil(t, got.Result)
	events, lerr := b.db.ListEvents(context.Background(), mcpflow.ThreadRef{UserID: "u", ThreadID: "th"}, 0, 10)
	require.NoError(t, lerr)
	require.Empty(t, events, "a late poll recorded an event")
}

// TestLatePollWriteCannotOverwriteACancel: a poll attempt that outlived
// its timeout (its worker was slow or partitioned) while the workflow
// cancelled the task must not write its stale result over the cancel,
// whether the cancel landed before the poll read the row or between its
// read and its write.
func TestLatePollWriteCannotOverwriteACancel(t *testing.T) {
	t.Parallel()
	t.Run("cancelled before the write", func(t *testing.T) {
		t.Parallel()
		b := newFence(t)
		b.cancel(t)
		b.requireCancelled(t, b.poll(t, b.db, b.in))
	})
	t.Run("cancelled between the read and the write", func(t *testing.T) {
		t.Parallel()
		b := newFence(t)
		racing := &racingTasks{TaskStore: b.db}
		racing.armed = func() { b.cancel(t) }
		b.requireCancelled(t, b.poll(t, racing, b.in))
	})
	t.Run("a reporting poll cancelled between the read and the write", func(t *testing.T) {
		t.Parallel()
		b := newFence(t)
		racing := &racingTasks{TaskStore: b.db}
		racing.armed = func() { b.cancel(t) }
		in := b.in
		in.Report = true
		a := &activities.Activities{Driver: &statusDriver{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: "done late"}},
			Tasks: racing, Threads: b.db, Events: b.db, Reports: noSignals{}}
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		env.RegisterActivity(a)
		_, err := env.ExecuteActivity(a.Poll, in)
		b.requireCancelled(t, err)
	})
	t.Run("a poll that finds nothing changed since its read writes", func(t *testing.T) {
		t.Parallel()
		b := newFence(t)
		err := b.poll(t, b.db, b.in)
		require.NoError(t, err)
		got, gerr := b.db.GetTask(context.Background(), b.task.ID)
		require.NoError(t, gerr)
		require.Equal(t, mcpflow.StatusCompleted, got.Status)
		require.Equal(t, "done late", got.Result)
	})
}

// noSignals accepts every report.
type noSignals struct{}

func (noSignals) SignalWorkflow(context.Context, string, string, string, any) error { return nil }

// TestUnchangedPollRecordsItsTime: a poll that finds nothing new still
// moves the row's last_polled_at (the detail's "last poll"), without a
// write of the row (updated_at and the row version stay) or an event.
func TestUnchangedPollRecordsItsTime(t *testing.T) {
	t.Parallel()
	for _, report := range []bool{false, true} {
		b := newFence(t)
		polled := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
		d := &statusDriver{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking}}
		a := &activities.Activities{Driver: d, Tasks: b.db, Threads: b.db, Events: b.db, Reports: noSignals{},
			Now: func() time.Time { return polled }}
		in := b.in
		in.Report = report
		in.LastFingerprint = activities.Fingerprint(d.snap) // nothing new
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		env.RegisterActivity(a)
		_, err := env.ExecuteActivity(a.Poll, in)
		var ae *temporal.ApplicationError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, "McpTaskPollUnchanged", ae.Type(), "%v", err)

		got, gerr := b.db.GetTask(context.Background(), b.task.ID)
		require.NoError(t, gerr)
		require.NotNil(t, got.LastPolledAt, "report=%v", report)
		require.Equal(t, polled, *got.LastPolledAt)
		require.Equal(t, b.task.UpdatedAt, got.UpdatedAt, "a poll is not a change")
		require.Equal(t, b.task.RowVersion, got.RowVersion)
		events, lerr := b.db.ListEvents(context.Background(), mcpflow.ThreadRef{UserID: "u", ThreadID: "th"}, 0, 10)
		require.NoError(t, lerr)
		require.Empty(t, events)
	}
}
