package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
	"github.com/mcpflow/mcpflow/store"
	"github.com/mcpflow/mcpflow/workflows"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// fakeDriver scripts the remote side: each Status call takes the next
// scripted answer (the last one repeats), and so does each Cancel call.
// The hooks run outside the driver's lock, while the call is in flight.
type fakeDriver struct {
	mu         sync.Mutex
	submitID   string
	submitErr  error
	submitSnap *mcpflow.Snapshot // default: submitted, no hint
	submitData map[string]string // driver data the submission adds
	submitReqs []mcpflow.SubmitRequest
	statuses   []statusAnswer
	statusN    int
	cancels    int
	cancelAns  []statusAnswer
	cancelRefs []mcpflow.TaskReference
	onStatus   func(n int) // n counts Status calls from 1
	onCancel   func(n int) // n counts Cancel calls from 1
}

type statusAnswer struct {
	snap mcpflow.Snapshot
	err  error
}

func (d *fakeDriver) Submit(ctx context.Context, req mcpflow.SubmitRequest) (mcpflow.Submission, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.submitReqs = append(d.submitReqs, req)
	if d.submitErr != nil {
		return mcpflow.Submission{}, d.submitErr
	}
	snap := mcpflow.Snapshot{Status: mcpflow.StatusSubmitted}
	if d.submitSnap != nil {
		snap = *d.submitSnap
	}
	return mcpflow.Submission{RemoteTaskID: d.submitID, Snapshot: snap, DriverData: d.submitData}, nil
}

func (d *fakeDriver) Status(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	d.mu.Lock()
	i := d.statusN
	if i >= len(d.statuses) {
		i = len(d.statuses) - 1
	}
	d.statusN++
	n, hook, ans := d.statusN, d.onStatus, d.statuses[i]
	d.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return ans.snap, ans.err
}

func (d *fakeDriver) Cancel(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	d.mu.Lock()
	d.cancels++
	d.cancelRefs = append(d.cancelRefs, ref)
	ans := statusAnswer{snap: mcpflow.Snapshot{Status: mcpflow.StatusCancelled}}
	if len(d.cancelAns) > 0 {
		ans = d.cancelAns[0]
		if len(d.cancelAns) > 1 {
			d.cancelAns = d.cancelAns[1:]
		}
	}
	n, hook := d.cancels, d.onCancel
	d.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return ans.snap, ans.err
}

func (d *fakeDriver) counts() (statuses, cancels int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.statusN, d.cancels
}

type bundle struct {
	env    *testsuite.TestWorkflowEnvironment
	db     *store.DB
	driver *fakeDriver
	acts   *activities.Activities
	in     workflows.TaskInput
	log    *captureLogger
}

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(t.TempDir(), "wf.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, _, err = db.CreateThread(context.Background(), &mcpflow.Thread{ID: "th", UserID: "u", CreatedAt: time.Now()})
	require.NoError(t, err)
	return db
}

func setup(t *testing.T, d *fakeDriver) *bundle {
	t.Helper()
	b := newWorker(t, openDB(t), d)
	b.in = workflows.TaskInput{
		TaskID: mcpflow.NewTaskID(), UserID: "u", ThreadID: "th", ServerName: "srv", TaskName: "job",
		DriverName: mcpflow.DriverOrdinary, DriverData: map[string]string{"submit_tool": "s", "status_tool": "st", "cancel_tool": "c"},
		Arguments: map[string]any{"x": 1},
		Config: workflows.TaskConfig{
			Timing: mcpflow.PollTiming{PollInterval: 5 * time.Second, InputRequiredInterval: 60 * time.Second,
				MaxPollBackoff: 300 * time.Second, DegradedAfterErrors: 3},
			Bounds: mcpflow.DefaultBounds(), CallTimeout: 2 * time.Minute,
			Shape: workflows.ShapeReport, // what tasks start with; recorded older shapes replay in replay_test
		},
	}
	return b
}

// newWorker is a fresh test environment (a worker process) with real
// activities on db and the driver d; activity clocks follow the test clock.
func newWorker(t *testing.T, db *store.DB, d *fakeDriver) *bundle {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	lg := &captureLogger{}
	s.SetLogger(lg)
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(10 * time.Second)
	// A task that never ends fails its test (on the test clock) instead of
	// hanging it.
	env.SetWorkflowRunTimeout(7 * 24 * time.Hour)
	env.RegisterWorkflow(workflows.TaskWorkflow)
	acts := &activities.Activities{Driver: d, Tasks: db, Threads: db, Events: db, PinnedQueue: "pinned", Now: env.Now,
		Reports: envSignaller{env}}
	env.RegisterActivity(acts)
	return &bundle{env: env, db: db, driver: d, acts: acts, log: lg}
}

// envSignaller delivers a reporting poll's signals to the test
// environment's workflow, as the worker's Temporal client does to the
// task's workflow.
type envSignaller struct {
	env *testsuite.TestWorkflowEnvironment
}

func (s envSignaller) SignalWorkflow(_ context.Context, _, _, name string, arg any) error {
	s.env.SignalWorkflow(name, arg)
	return nil
}

// run starts the workflow with the submit update, as update-with-start does.
func (b *bundle) run(t *testing.T) (*workflows.SubmitResult, error) {
	return b.runWith(t, nil)
}

// runWith is run with a hook that sees the update's outcome as it
// completes, before the workflow goes on.
func (b *bundle) runWith(t *testing.T, onComplete func()) (*workflows.SubmitResult, error) {
	t.Helper()
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
				if onComplete != nil {
					onComplete()
				}
			},
		})
	}, 0)
	b.env.ExecuteWorkflow(workflows.TaskWorkflow, b.in)
	require.True(t, b.env.IsWorkflowCompleted())
	return res, subErr
}

// task reads the task's row as the API would.
func (b *bundle) task(t *testing.T) *mcpflow.Task {
	t.Helper()
	task, err := b.db.GetTask(context.Background(), b.in.TaskID)
	require.NoError(t, err)
	return task
}

func (b *bundle) requireNoRow(t *testing.T) {
	t.Helper()
	_, err := b.db.GetTask(context.Background(), b.in.TaskID)
	require.Equal(t, mcpflow.ENotFound, mcpflow.ErrorCode(err))
}

// outcome is the workflow's result.
func (b *bundle) outcome(t *testing.T) workflows.TaskOutcome {
	t.Helper()
	var out workflows.TaskOutcome
	require.NoError(t, b.env.GetWorkflowResult(&out))
	return out
}

// activityStart is one activity attempt as the test clock saw it start.
type activityStart struct {
	name    string
	id      string
	attempt int32
	queue   string
	at      time.Time
}

// recordActivities collects every activity attempt.
func (b *bundle) recordActivities() *[]activityStart {
	var starts []activityStart
	b.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name == "Poll" && info.Attempt == 1 {
			// The lean shape's first attempt only waits for the poll time
			// (PollInput.Delay): it is not a remote call.
			var in activities.PollInput
			if args.Get(&in) == nil && in.Delay > 0 {
				return
			}
		}
		starts = append(starts, activityStart{name: info.ActivityType.Name, id: info.ActivityID,
			attempt: info.Attempt, queue: info.TaskQueue, at: b.env.Now()})
	})
	// Row writes run as local activities.
	b.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		starts = append(starts, activityStart{name: info.ActivityType.Name, id: info.ActivityID,
			attempt: info.Attempt, queue: info.TaskQueue, at: b.env.Now()})
	})
	return &starts
}

func only(starts []activityStart, name string) []activityStart {
	var out []activityStart
	for _, s := range starts {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

func gaps(starts []activityStart) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(starts); i++ {
		out = append(out, starts[i].at.Sub(starts[i-1].at))
	}
	return out
}

func secs(ss ...int) []time.Duration {
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		out[i] = time.Duration(s) * time.Second
	}
	return out
}

// captureLogger keeps what the workflow and activities log.
type captureLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *captureLogger) add(level, msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%s %s %v", level, msg, kv))
}

func (l *captureLogger) Debug(msg string, kv ...any) {}
func (l *captureLogger) Info(msg string, kv ...any)  { l.add("INFO", msg, kv...) }
func (l *captureLogger) Warn(msg string, kv ...any)  { l.add("WARN", msg, kv...) }
func (l *captureLogger) Error(msg string, kv ...any) { l.add("ERROR", msg, kv...) }

func (l *captureLogger) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func str(s string) *string { return &s }

func hint(s float64) *float64 { return &s }

func working() statusAnswer {
	return statusAnswer{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking}}
}

func completed() statusAnswer {
	return statusAnswer{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: "done"}}
}

func fails(msg string) statusAnswer { return statusAnswer{err: errors.New(msg)} }

// --- submit ---

func TestSubmitPollComplete(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: hint(9)}},
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: hint(9)}},
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"answer": 42.0}}},
	}}
	b := setup(t, d)
	res, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, b.in.TaskID, res.TaskID)
	require.Equal(t, mcpflow.StatusSubmitted, res.Status)
	require.NoError(t, b.env.GetWorkflowError())
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.Equal(t, map[string]any{"answer": json.Number("42")}, task.Result)
	require.Equal(t, "remote-1", task.RemoteTaskID)
	require.NotNil(t, task.CompletedAt)
	require.Equal(t, 3, d.statusN)
}

func TestSubmitFailureIsNotTracked(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitErr: errors.New("boom")}
	b := setup(t, d)
	_, err := b.run(t)
	require.ErrorContains(t, err, "boom")
	b.requireNoRow(t)
	require.Zero(t, d.cancels, "nothing to compensate when the submit itself failed")
}

// Spec §7 scenario 1: the submit answer comes only after the row exists;
// the first poll follows the submission's hint; driver data is merged; the
// driver saw the local id.
func TestSubmitPersistsBeforeReturning(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1",
		submitSnap: &mcpflow.Snapshot{Status: mcpflow.StatusSubmitted, PollAfterSeconds: hint(9)},
		submitData: map[string]string{"status_tool": "remote_status", "extra": "x"},
		statuses:   []statusAnswer{completed()},
	}
	b := setup(t, d)
	b.in.DriverData = map[string]string{"submit_tool": "s", "status_tool": "st"}
	starts := b.recordActivities()
	start := b.env.Now()
	var atAnswer *mcpflow.Task
	var answerErr error
	res, err := b.runWith(t, func() {
		atAnswer, answerErr = b.db.GetTask(context.Background(), b.in.TaskID)
	})
	require.NoError(t, err)
	require.Equal(t, workflows.SubmitResult{TaskID: b.in.TaskID, TaskName: "job", Status: mcpflow.StatusSubmitted,
		Message: workflows.SubmitMessage}, *res)

	require.NoError(t, answerErr, "the row exists when the submit answer is given")
	require.Equal(t, mcpflow.StatusSubmitted, atAnswer.Status)
	require.Equal(t, "remote-1", atAnswer.RemoteTaskID)
	require.Equal(t, map[string]string{"submit_tool": "s", "status_tool": "remote_status", "extra": "x"}, atAnswer.DriverData,
		"driver data: the request's, then the submission's")

	require.Len(t, d.submitReqs, 1)
	require.Equal(t, b.in.TaskID, d.submitReqs[0].LocalTaskID, "the driver saw the local id")
	require.Equal(t, mcpflow.Arguments{"x": json.Number("1")}, d.submitReqs[0].Arguments, "numbers arrive as written")
	polls := only(*starts, "Poll")
	require.NotEmpty(t, polls)
	require.Equal(t, 9*time.Second, polls[0].at.Sub(start), "first poll after the submission's 9 s hint")
	require.Equal(t, mcpflow.StatusCompleted, b.task(t).Status)
}

// Spec §7 scenario 2.
func TestPersistenceFailureCompensatesWithOneCancel(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", submitData: map[string]string{"status_tool": "remote_status"}}
	b := setup(t, d)
	b.env.OnActivity(b.acts.Persist, mock.Anything, mock.Anything).Return(nil, errors.New("database unavailable"))
	_, err := b.run(t)
	require.ErrorContains(t, err, "database unavailable")
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, workflows.ErrTypePersist, ae.Type())
	require.Equal(t, workflows.PersistFailedMessage, ae.Message(), "the agent's text carries no storage detail; the cause does")
	b.requireNoRow(t)
	require.Equal(t, 1, d.cancels, "exactly one compensating cancel")
	ref := d.cancelRefs[0]
	require.Equal(t, b.in.TaskID, ref.LocalTaskID)
	require.Equal(t, "remote-1", ref.RemoteTaskID)
	require.Equal(t, map[string]string{"submit_tool": "s", "status_tool": "remote_status", "cancel_tool": "c"}, ref.DriverData)
	require.Zero(t, d.statusN, "an untracked task is never polled")
	var out workflows.TaskOutcome
	require.NoError(t, b.env.GetWorkflowResult(&out))
	require.Equal(t, mcpflow.StatusFailed, out.Status)
}

// Spec §7 scenario 3.
func TestRemoteIDOver255IsCompensated(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("r", 256)
	d := &fakeDriver{submitID: long}
	b := setup(t, d)
	_, err := b.run(t)
	require.ErrorContains(t, err, "255")
	b.requireNoRow(t)
	require.Equal(t, 1, d.cancels, "the untracked remote task is cancelled")
	require.Equal(t, long, d.cancelRefs[0].RemoteTaskID)

	// 255 characters are accepted.
	d = &fakeDriver{submitID: strings.Repeat("r", 255), statuses: []statusAnswer{completed()}}
	b = setup(t, d)
	_, err = b.run(t)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, b.task(t).Status)
	require.Zero(t, d.cancels)
}

// Spec §7 scenario 4: an existing row owns the remote handle.
func TestDuplicateRemoteHandleIsNotCompensated(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1"}
	b := setup(t, d)
	owner := &mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: "u", ThreadID: "th", ServerName: "srv",
		DriverName: mcpflow.DriverOrdinary, RemoteTaskID: "remote-1", TaskName: "first", Status: mcpflow.StatusWorking}
	require.NoError(t, b.db.CreateTask(context.Background(), owner))
	_, err := b.run(t)
	require.ErrorContains(t, err, "already tracked")
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, workflows.ErrTypeDuplicate, ae.Type())
	require.Zero(t, d.cancels, "the remote task belongs to the existing row: no cancel")
	b.requireNoRow(t)
	first, err := b.db.GetTask(context.Background(), owner.ID)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusWorking, first.Status, "the existing row is untouched")
	require.Nil(t, first.CancelRequestedAt)
}

// Spec §7 scenario 5.
func TestCompensationFailureKeepsOriginalError(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", cancelAns: []statusAnswer{fails("cancel endpoint down")}}
	b := setup(t, d)
	b.env.OnActivity(b.acts.Persist, mock.Anything, mock.Anything).Return(nil, errors.New("database unavailable"))
	_, err := b.run(t)
	require.ErrorContains(t, err, "database unavailable")
	require.NotContains(t, err.Error(), "cancel endpoint down")
	require.GreaterOrEqual(t, d.cancels, 1, "the compensation was tried")
	b.requireNoRow(t)
	logs := b.log.text()
	require.Contains(t, logs, "Failed to cancel untracked MCP task")
	require.Contains(t, logs, "cancel endpoint down")
}

func TestSubmitWithNoUpdateEnds(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1"}
	b := setup(t, d)
	start := b.env.Now()
	b.env.ExecuteWorkflow(workflows.TaskWorkflow, b.in)
	require.True(t, b.env.IsWorkflowCompleted())
	require.NoError(t, b.env.GetWorkflowError())
	out := b.outcome(t)
	require.Equal(t, mcpflow.StatusFailed, out.Status)
	require.Equal(t, "no submit request arrived", *out.Error)
	require.Equal(t, 5*time.Minute, b.env.Now().Sub(start))
	b.requireNoRow(t)
	require.Empty(t, d.submitReqs)
}

// A submit that is still running when the 5-minute wait for a submit ends
// (a remote submit can take up to lease_seconds, up to an hour) must not
// be abandoned: the remote task would exist untracked and uncancelled.
func TestSlowSubmitIsNotAbandoned(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{completed()}}
	b := setup(t, d)
	b.in.Config.CallTimeout = 10 * time.Minute
	// Only latency is injected: the real Submit activity runs after 6 minutes.
	b.env.OnActivity(b.acts.Submit, mock.Anything, mock.Anything).After(6 * time.Minute).Return(b.acts.Submit)
	res, err := b.run(t)
	require.NoError(t, err)
	require.NotNil(t, res, "the submit update was answered")
	require.Equal(t, mcpflow.StatusSubmitted, res.Status)
	require.Equal(t, mcpflow.StatusCompleted, b.task(t).Status)
	require.Zero(t, d.cancels)
}

// --- poll scheduling ---

// Spec §7 scenario 17.
func TestPollHintSchedulesNextPoll(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: hint(12)}},
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: hint(12)}},
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: hint(7)}},
		completed(),
	}}
	b := setup(t, d)
	starts := b.recordActivities()
	_, err := b.run(t)
	require.NoError(t, err)
	// changed (working, 12) → 12 s; unchanged (12) → 12 s; unchanged with a new hint 7 → 7 s.
	require.Equal(t, secs(12, 12, 7), gaps(only(*starts, "Poll")))
	require.Equal(t, mcpflow.StatusCompleted, b.task(t).Status)
}

// Spec §7 scenario 18.
func TestPollHintCappedAt24Hours(t *testing.T) {
	t.Parallel()
	huge := statusAnswer{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: hint(1e20)}}
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{huge, huge, completed()}}
	b := setup(t, d)
	starts := b.recordActivities()
	_, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, []time.Duration{24 * time.Hour, 24 * time.Hour}, gaps(only(*starts, "Poll")))
}

// Spec §7 scenarios 17 and 19: every remote call here takes 30 s; the next
// one starts the scheduled delay after the previous call finished, for a
// changed answer, an unchanged one, and an error.
func TestPollDelayCountsFromCallCompletion(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: hint(12)}}, // changed → 12 s
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: hint(12)}}, // unchanged → 12 s
		fails("network down"), // first error → 5 s
		completed(),
	}}
	b := setup(t, d)
	// The classic shape: the mocked latency below applies to every attempt,
	// and the lean shape's first attempt only waits (instantly in
	// production); the lean timing is checked by the hint tests above.
	b.in.Config.Shape = 0
	var finished []time.Time // when each remote status call finished
	d.onStatus = func(int) { finished = append(finished, b.env.Now()) }
	starts := b.recordActivities()
	// Only latency is injected: the real Poll activity runs 30 s after each attempt starts.
	b.env.OnActivity(b.acts.Poll, mock.Anything, mock.Anything).After(30 * time.Second).Return(b.acts.Poll)
	_, err := b.run(t)
	require.NoError(t, err)
	polls := only(*starts, "Poll")
	require.Len(t, polls, 4)
	require.Len(t, finished, 4)
	for i := range 4 {
		require.Equal(t, 30*time.Second, finished[i].Sub(polls[i].at), "call %d took 30 s", i+1)
	}
	for i, want := range secs(12, 12, 5) {
		require.Equal(t, want, polls[i+1].at.Sub(finished[i]), "delay after call %d counts from its completion", i+1)
	}
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.WithinDuration(t, finished[3], *task.LastPolledAt, time.Millisecond, "last_polled_at is the completion time")
}

// Spec §7 scenario 20.
func TestInputRequiredFloor(t *testing.T) {
	t.Parallel()
	question := map[string]any{"question": "which region?"}
	ask := statusAnswer{snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: question, PollAfterSeconds: hint(10)}}
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{ask, ask, completed()}}
	b := setup(t, d)
	var waiting *mcpflow.Task
	d.onStatus = func(n int) {
		if n == 2 {
			waiting = b.task(t)
		}
	}
	starts := b.recordActivities()
	_, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, secs(60, 60), gaps(only(*starts, "Poll")), "the 10 s hint is raised to the 60 s floor")
	require.NotNil(t, waiting)
	require.Equal(t, mcpflow.StatusInputRequired, waiting.Status, "input_required stays pollable")
	require.Equal(t, question, waiting.InputRequired)
	require.Equal(t, mcpflow.StatusCompleted, b.task(t).Status)
}

// Spec §2.6: poll_interval × 2^min(n,16) capped at max_poll_backoff.
func TestErrorBackoffSequence(t *testing.T) {
	t.Parallel()
	statuses := make([]statusAnswer, 0, 11)
	for range 10 {
		statuses = append(statuses, fails("network down"))
	}
	statuses = append(statuses, completed())
	d := &fakeDriver{submitID: "remote-1", statuses: statuses}
	b := setup(t, d)
	starts := b.recordActivities()
	_, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, secs(5, 10, 20, 40, 80, 160, 300, 300, 300, 300), gaps(only(*starts, "Poll")))
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.Zero(t, task.ConsecutivePollErrorCount)
}

// --- poll errors ---

// Spec §2.5/§2.6: tracking degrades at tracking_degraded_after_errors; while
// degraded a new error text is recorded, an identical one is not.
func TestTrackingDegradedAfterThreshold(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		fails("e1"), fails("e1"), fails("e1"), // 3: degraded
		fails("e1"), // identical while degraded
		fails("e2"), // new text while degraded
		completed(),
	}}
	b := setup(t, d)
	rows := map[int]*mcpflow.Task{} // the row as it was when call n started
	d.onStatus = func(n int) { rows[n] = b.task(t) }
	_, err := b.run(t)
	require.NoError(t, err)

	require.Equal(t, 1, rows[2].ConsecutivePollErrorCount, "the first error is recorded")
	require.Equal(t, "e1", *rows[2].LastPollError)
	require.Equal(t, 3, rows[4].ConsecutivePollErrorCount, "degraded after 3 errors")
	require.True(t, b.in.Config.Timing.TrackingDegraded(rows[4].ConsecutivePollErrorCount))
	require.Equal(t, "e1", *rows[4].LastPollError)
	require.Equal(t, mcpflow.StatusSubmitted, rows[4].Status, "errors never change the status")
	// The report shape's poll counts every error in the row (spec: +1 per
	// failed poll), still without an event.
	require.Equal(t, 4, rows[5].ConsecutivePollErrorCount)
	require.Equal(t, rows[4].EventVersion, rows[5].EventVersion, "an identical error while degraded is not recorded")
	require.Equal(t, 5, rows[6].ConsecutivePollErrorCount, "a new error text while degraded is recorded")
	require.Equal(t, "e2", *rows[6].LastPollError)

	task := b.task(t)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.Zero(t, task.ConsecutivePollErrorCount)
	require.Nil(t, task.LastPollError)
}

// Spec §7 scenario 39: an applied snapshot resets the error count.
func TestRecoveryResetsErrorCount(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		working(), fails("down"), fails("down"), fails("down"), working(), working(), completed(),
	}}
	b := setup(t, d)
	rows := map[int]*mcpflow.Task{}
	d.onStatus = func(n int) { rows[n] = b.task(t) }
	_, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, 3, rows[5].ConsecutivePollErrorCount)
	// Call 5 answered the same working snapshot as before the errors.
	require.Equal(t, mcpflow.StatusWorking, rows[6].Status)
	require.Zero(t, rows[6].ConsecutivePollErrorCount, "the recovery is recorded")
	require.Nil(t, rows[6].LastPollError)
	require.False(t, b.in.Config.Timing.TrackingDegraded(rows[6].ConsecutivePollErrorCount))
}

func TestTransientErrorsDegradeThenRecover(t *testing.T) {
	t.Parallel()
	down := errors.New("upstream temporarily unavailable")
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{err: down}, {err: down}, {err: down}, {err: down},
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted}},
	}}
	b := setup(t, d)
	_, err := b.run(t)
	require.NoError(t, err)
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.Zero(t, task.ConsecutivePollErrorCount)
	require.Nil(t, task.LastPollError)
	require.Equal(t, 5, d.statusN)
}

// Spec §7 scenario 22.
func TestProtocolErrorFailsTask(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{err: mcpflow.NewProtocolError("bad payload")},
	}}
	b := setup(t, d)
	_, err := b.run(t)
	require.NoError(t, err)
	task := b.task(t)
	require.Equal(t, mcpflow.StatusFailed, task.Status)
	require.Equal(t, "bad payload", *task.Error)
	require.NotNil(t, task.CompletedAt)
	require.Equal(t, 1, d.statusN, "a protocol error is permanent: no retry")
	require.Equal(t, mcpflow.StatusFailed, b.outcome(t).Status)
}

// Spec §7 scenario 23.
func TestProtocolErrorTruncatedTo4000(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{err: mcpflow.NewProtocolError("%s", strings.Repeat("é", 5000))},
	}}
	b := setup(t, d)
	_, err := b.run(t)
	require.NoError(t, err)
	task := b.task(t)
	require.Equal(t, mcpflow.StatusFailed, task.Status)
	require.Equal(t, 4000, utf8.RuneCountInString(*task.Error))
	require.Equal(t, strings.Repeat("é", 4000), *task.Error)
}

// Spec §7 scenario 24: an oversized error reported by the remote side, on
// submit and on poll, is stored cut to 4000 characters.
func TestSnapshotErrorTruncatedTo4000(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 5000)
	d := &fakeDriver{submitID: "remote-1",
		submitSnap: &mcpflow.Snapshot{Status: mcpflow.StatusSubmitted, Error: &long},
		statuses:   []statusAnswer{{snap: mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: &long}}},
	}
	b := setup(t, d)
	var atSubmit *mcpflow.Task
	_, err := b.runWith(t, func() { atSubmit = b.task(t) })
	require.NoError(t, err)
	require.Len(t, *atSubmit.Error, 4000)
	task := b.task(t)
	require.Equal(t, mcpflow.StatusFailed, task.Status)
	require.Len(t, *task.Error, 4000)
}

// Spec §7 scenario 25.
func TestOversizedInputRequiredFailsTask(t *testing.T) {
	t.Parallel()
	big := map[string]any{"question": strings.Repeat("q", 65536)}
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: big}},
	}}
	b := setup(t, d)
	_, err := b.run(t)
	require.NoError(t, err)
	task := b.task(t)
	require.Equal(t, mcpflow.StatusFailed, task.Status)
	require.Contains(t, *task.Error, "65536-byte limit")
	require.Contains(t, *task.Error, "input_required")
	require.Nil(t, task.InputRequired, "the payload is not stored")
	require.Equal(t, 1, d.statusN, "the failure is final")
}

// Spec §7 scenario 26 (max_result_bytes 64, preview 24).
func TestResultTruncatedToPreview(t *testing.T) {
	t.Parallel()
	artifact := map[string]string{"uri": "file:///out/report.json", "mime_type": "application/json"}
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: strings.Repeat("abcdefghij", 10), ResultArtifact: artifact}},
	}}
	b := setup(t, d)
	b.in.Config.Bounds = mcpflow.Bounds{MaxResultBytes: 64, ResultPreviewMaxChars: 24}
	_, err := b.run(t)
	require.NoError(t, err)
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.Nil(t, task.Result, "a truncated result is never stored")
	require.True(t, task.ResultTruncated)
	require.NotNil(t, task.ResultPreview)
	require.Equal(t, "abcdefghijabcdefghijabcd", *task.ResultPreview)
	require.Equal(t, artifact, task.ResultArtifact, "the artifact is kept")

	// A result that fits is kept whole.
	d = &fakeDriver{submitID: "remote-2", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"ok": true}}},
	}}
	b = setup(t, d)
	b.in.Config.Bounds = mcpflow.Bounds{MaxResultBytes: 64, ResultPreviewMaxChars: 24}
	_, err = b.run(t)
	require.NoError(t, err)
	task = b.task(t)
	require.Equal(t, map[string]any{"ok": true}, task.Result)
	require.False(t, task.ResultTruncated)
	require.Nil(t, task.ResultPreview)
}

// Spec §7 scenario 27.
func TestOversizedArtifactFailsTask(t *testing.T) {
	t.Parallel()
	artifact := map[string]string{"uri": "file:///big", "mime_type": "text/plain", "note": strings.Repeat("n", 65536)}
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: "ok", ResultArtifact: artifact}},
	}}
	b := setup(t, d)
	_, err := b.run(t)
	require.NoError(t, err)
	task := b.task(t)
	require.Equal(t, mcpflow.StatusFailed, task.Status)
	require.Contains(t, *task.Error, "result_artifact")
	require.Contains(t, *task.Error, "65536-byte limit")
	require.Nil(t, task.ResultArtifact)
	require.Nil(t, task.Result)
}

// Spec §7 scenario 28.
func TestNaNResultFailsTask(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"score": math.NaN()}}},
	}}
	b := setup(t, d)
	_, err := b.run(t)
	require.NoError(t, err)
	task := b.task(t)
	require.Equal(t, mcpflow.StatusFailed, task.Status)
	require.Contains(t, *task.Error, "not valid JSON")
	require.Nil(t, task.Result)
}

// --- cancel ---

func TestCancelSignalFencesPolling(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking}},
	}}
	b := setup(t, d)
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.SignalCancel, "") }, 3*time.Minute)
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.SignalCancel, "again") }, 4*time.Minute)
	_, err := b.run(t)
	require.NoError(t, err)
	require.NoError(t, b.env.GetWorkflowError())
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCancelled, task.Status)
	require.NotNil(t, task.CancelRequestedAt)
	require.Equal(t, 1, d.cancels, "a repeated cancel request sends no second remote cancel")
}

// Spec §7 scenario 47 / §8.2: a poll in flight when the cancel request
// arrives is never applied, even when it answers afterwards. That is the
// classic shape, where only the workflow writes. In the lean and report
// shapes without a webhook the poll writes what it found itself, and the
// workflow waits for it (WaitForCancellation) and keeps what it wrote: a
// real server shows that (cmd/mcpflow TestCancelDuringAWritingPoll); the
// test environment does not wait for an in-flight activity that ignores
// its cancellation, so its late write would race the test's read here.
func TestCancelFencesInFlightPoll(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: "late result"}},
	}}
	b := setup(t, d)
	b.in.Config.Shape = 0
	release := make(chan struct{})
	var once sync.Once
	answered := make(chan struct{})
	d.onStatus = func(n int) {
		// The cancel request arrives while this status call is in flight;
		// the call answers only after the remote cancel was sent.
		b.env.SignalWorkflow(workflows.SignalCancel, "")
		<-release
		close(answered)
	}
	d.onCancel = func(int) { once.Do(func() { close(release) }) }
	_, err := b.run(t)
	require.NoError(t, err)
	require.NoError(t, b.env.GetWorkflowError())
	select {
	case <-answered:
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight status call never answered")
	}
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCancelled, task.Status, "the late 'completed' answer is discarded")
	require.Nil(t, task.Result)
	require.NotNil(t, task.CancelRequestedAt)
	statuses, cancels := d.counts()
	require.Equal(t, 1, statuses)
	require.Equal(t, 1, cancels)
	require.Equal(t, mcpflow.StatusCancelled, b.outcome(t).Status)
}

func TestRepeatedCancelSendsOneRemoteCancel(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{working()}}
	b := setup(t, d)
	// Two requests at once, then one while the remote cancel is in flight.
	b.env.RegisterDelayedCallback(func() {
		b.env.SignalWorkflow(workflows.SignalCancel, "")
		b.env.SignalWorkflow(workflows.SignalCancel, "twice")
	}, time.Minute)
	d.onCancel = func(int) { b.env.SignalWorkflow(workflows.SignalCancel, "while cancelling") }
	_, err := b.run(t)
	require.NoError(t, err)
	require.NoError(t, b.env.GetWorkflowError())
	_, cancels := d.counts()
	require.Equal(t, 1, cancels)
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCancelled, task.Status)
	require.Equal(t, 1, task.CancelAttemptCount)
}

// Spec §2.6: the remote cancel is retried with backoff (5 s, 10 s, …) until
// it reports a terminal status, which is then applied as reported.
func TestCancelRetriedUntilTerminal(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{working()},
		cancelAns: []statusAnswer{
			fails("cancel endpoint down"),
			working(), // not terminal: not an answer to a cancel
			{snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: "finished before the cancel"}},
		}}
	b := setup(t, d)
	var pending *mcpflow.Task
	d.onCancel = func(n int) {
		if n == 2 {
			pending = b.task(t)
		}
	}
	starts := b.recordActivities()
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.SignalCancel, "") }, time.Minute)
	_, err := b.run(t)
	require.NoError(t, err)
	require.NoError(t, b.env.GetWorkflowError())
	require.NotNil(t, pending)
	require.NotNil(t, pending.CancelRequestedAt, "the API shows cancel_requested while the remote cancel is retried")
	require.Equal(t, mcpflow.StatusWorking, pending.Status, "the task stays active until a terminal status is reported")
	require.Equal(t, 1, pending.CancelAttemptCount, "every failed attempt is counted")
	require.NotNil(t, pending.LastCancelError)
	require.Contains(t, *pending.LastCancelError, "cancel endpoint down", "and its error shown")
	_, cancels := d.counts()
	require.Equal(t, 3, cancels)
	require.Equal(t, secs(5, 10), gaps(only(*starts, "Cancel")), "capped exponential backoff between attempts")
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCompleted, task.Status, "the reported terminal status is applied")
	require.Equal(t, "finished before the cancel", task.Result)
	require.NotNil(t, task.CancelRequestedAt)
	require.NotNil(t, task.CompletedAt)
	require.Nil(t, task.LastCancelError)
	require.Equal(t, 3, task.CancelAttemptCount)
	require.Equal(t, mcpflow.StatusCompleted, b.outcome(t).Status)
}

func TestTemporalCancelRunsRemoteCancel(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{working()}}
	b := setup(t, d)
	b.env.RegisterDelayedCallback(b.env.CancelWorkflow, time.Minute)
	_, err := b.run(t)
	require.NoError(t, err)
	werr := b.env.GetWorkflowError()
	require.Error(t, werr)
	var ce *temporal.CanceledError
	require.ErrorAs(t, werr, &ce)
	_, cancels := d.counts()
	require.Equal(t, 1, cancels)
	require.Equal(t, "remote-1", d.cancelRefs[0].RemoteTaskID)
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCancelled, task.Status)
	require.NotNil(t, task.CancelRequestedAt)
}

// --- history ---

// Unchanged polls are retries of one Poll activity (NextRetryDelay), which
// Temporal keeps out of history: the workflow sees only the answers that
// changed something. The test environment caps "unlimited" retries at 10
// attempts, after which the workflow starts a fresh Poll; so 20 unchanged
// polls are 2 executions here, and 1 on a real server (MaximumAttempts 0).
// The testsuite exposes no history length, so this counts attempts (remote
// calls) against executions (each costs history) and row writes.
func TestUnchangedPollsAddNoHistory(t *testing.T) {
	t.Parallel()
	statuses := []statusAnswer{working()}
	for range 20 {
		statuses = append(statuses, working())
	}
	statuses = append(statuses, completed())
	d := &fakeDriver{submitID: "remote-1", statuses: statuses}
	b := setup(t, d)
	starts := b.recordActivities()
	_, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, b.task(t).Status)

	polls := only(*starts, "Poll")
	require.Len(t, polls, 22, "every remote call is one attempt")
	executions := map[string]int{}
	for _, p := range polls {
		executions[p.id]++
	}
	// The report shape's poll goes on after the change (submitted →
	// working) and is capped at 10 attempts per execution in the test
	// environment: 3 here for 22 polls; 1 on a real server, which never
	// completes (the run closes on the terminal report).
	require.Len(t, executions, 3)
	// Row writes: the create as a local activity (a marker); working and
	// completed by the poll activity that found them (no marker).
	require.Len(t, only(*starts, "Persist"), 1, "the create")
	for _, gap := range gaps(polls) {
		require.Equal(t, 5*time.Second, gap)
	}
}

// Spec/DESIGN: continue-as-new keeps history bounded and carries the task.
// The lean shape continues after the poll that degraded tracking (t = 20 s);
// the report shape as soon as it sees the suggestion after a report (its
// poll stopped at t = 15 s, with the row's two counted errors).
func TestContinueAsNewCarriesState(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		shape, errors int
		next          time.Duration // from the new run's start to its first poll
	}{{workflows.ShapeLean, 3, 20 * time.Second}, {workflows.ShapeReport, 2, 10 * time.Second}} {
		t.Run(fmt.Sprint("shape ", c.shape), func(t *testing.T) {
			t.Parallel()
			d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
				fails("down"), fails("down"), fails("down"), // degraded at call 3 (t = 20 s)
				completed(),
			}}
			b := setup(t, d)
			b.in.Config.Shape = c.shape
			b.env.RegisterDelayedCallback(func() { b.env.SetContinueAsNewSuggested(true) }, 15*time.Second)
			_, err := b.run(t)
			require.NoError(t, err)
			werr := b.env.GetWorkflowError()
			var can *workflow.ContinueAsNewError
			require.ErrorAs(t, werr, &can)
			require.Equal(t, workflows.TaskWorkflowName, can.WorkflowType.Name)
			var next workflows.TaskInput
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
			require.NotNil(t, next.State)
			st := next.State
			require.True(t, st.Submitted)
			require.Equal(t, "remote-1", st.RemoteTaskID)
			require.Equal(t, mcpflow.StatusSubmitted, st.Snapshot.Status)
			require.Equal(t, c.errors, st.ConsecutiveErrors)
			require.Equal(t, "down", *st.LastPollError)
			require.Equal(t, c.errors, st.PollCount)
			require.Equal(t, b.in.TaskID, next.TaskID)
			require.Equal(t, b.in.Config, next.Config)

			// The next run (here on another worker) goes on without a second
			// submit, keeping the error backoff: n errors → the next poll
			// poll_interval × 2^(n-1) later.
			d2 := &fakeDriver{statuses: []statusAnswer{completed()}}
			b2 := newWorker(t, b.db, d2)
			b2.in = next
			starts := b2.recordActivities()
			start := b2.env.Now()
			b2.env.ExecuteWorkflow(workflows.TaskWorkflow, next)
			require.True(t, b2.env.IsWorkflowCompleted())
			require.NoError(t, b2.env.GetWorkflowError())
			require.Empty(t, d2.submitReqs)
			require.Len(t, d.submitReqs, 1)
			polls := only(*starts, "Poll")
			require.Len(t, polls, 1)
			require.Equal(t, c.next, polls[0].at.Sub(start))
			task := b2.task(t)
			require.Equal(t, mcpflow.StatusCompleted, task.Status)
			require.Equal(t, c.errors+1, task.PollAttemptCount)
			require.Zero(t, task.ConsecutivePollErrorCount)
		})
	}
}

// --- placement and visibility ---

// DESIGN "Pinned": a stdio task's remote calls run on the worker process
// that owns its session; the Pin activity finds that worker first.
func TestStdioTaskPinsToWorker(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{working()}}
	b := setup(t, d)
	b.in.Config.Pinned = true
	starts := b.recordActivities()
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.SignalCancel, "") }, time.Minute)
	_, err := b.run(t)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCancelled, b.task(t).Status)

	all := *starts
	require.NotEmpty(t, all)
	require.Equal(t, "Pin", all[0].name, "the Pin activity runs first")
	remote := 0
	for _, s := range all[1:] {
		switch s.name {
		case "Submit", "Poll", "Cancel":
			remote++
			require.Equal(t, "pinned", s.queue, "%s runs on the pinned worker's queue", s.name)
		}
	}
	require.GreaterOrEqual(t, remote, 3)
	require.NotEmpty(t, only(all, "Cancel"))
}

// recordStatusUpserts collects the McpTaskStatus values the workflow upserts.
func (b *bundle) recordStatusUpserts() *[]string {
	var upserted []string
	b.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if v, ok := sa.GetKeyword(workflows.SearchAttrTaskStatus); ok {
			upserted = append(upserted, v)
		}
	}).Return(nil)
	return &upserted
}

// The McpTaskStatus search attribute follows every status the row takes.
func TestSearchAttributeStatusKeptCurrent(t *testing.T) {
	t.Parallel()
	question := map[string]any{"q": "?"}
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		working(),
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: question}},
		completed(),
	}}
	b := setup(t, d)
	upserted := b.recordStatusUpserts()
	_, err := b.run(t)
	require.NoError(t, err)
	// "submitted" is the start options' value: the lean shape upserts only
	// a status that differs from it.
	require.Equal(t, []string{"working", "input_required", "completed"}, *upserted)
	require.Equal(t, (*upserted)[len(*upserted)-1], string(b.task(t).Status))

	// The classic shape upserted after every change (recorded histories
	// replay it).
	b = setup(t, &fakeDriver{submitID: "remote-c", statuses: []statusAnswer{working(), completed()}})
	b.in.Config.Shape = 0
	upserted = b.recordStatusUpserts()
	_, err = b.run(t)
	require.NoError(t, err)
	require.Equal(t, []string{"submitted", "working", "completed"}, *upserted)

	// A cancelled task ends with "cancelled".
	d = &fakeDriver{submitID: "remote-2", statuses: []statusAnswer{working()}}
	b = setup(t, d)
	upserted = b.recordStatusUpserts()
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.SignalCancel, "") }, time.Minute)
	_, err = b.run(t)
	require.NoError(t, err)
	require.Equal(t, []string{"working", "cancelled"}, *upserted)
}

// A cancel that arrives while the poll activity is in flight (the lean
// shape writes changes where it polls, and the workflow waits for a stopped
// poll: WaitForCancellation) leaves the inbox with every version once, in
// order, ending with the cancel's. The test environment cancels an
// in-flight activity at once (its remote call never runs), so the write
// race itself is shown on a real server by cmd/mcpflow's
// TestCancelDuringAWritingPoll: an activity that does not heartbeat
// finishes its attempt, the SDK hands its result to the waiting future, and
// the workflow adopts its row and event state.
func TestCancelWaitsForAWritingPoll(t *testing.T) {
	t.Parallel()
	question := map[string]any{"q": "which?"}
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
		{snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: question}},
	}}
	b := setup(t, d)
	// Every attempt takes 30 s; the first remote call runs from about 35 s
	// to 65 s (after the first attempt's wait), and the cancel comes at 50 s.
	b.env.OnActivity(b.acts.Poll, mock.Anything, mock.Anything).After(30 * time.Second).Return(b.acts.Poll)
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.SignalCancel, "") }, 50*time.Second)
	_, err := b.run(t)
	require.NoError(t, err)
	task := b.task(t)
	require.Equal(t, mcpflow.StatusCancelled, task.Status)
	evs, err := b.db.ListEvents(context.Background(), mcpflow.ThreadRef{UserID: "u", ThreadID: "th"}, 0, 10)
	require.NoError(t, err)
	var got []string
	for i, ev := range evs {
		require.Equal(t, i+1, ev.EventVersion, "versions 1..n, once each")
		got = append(got, string(ev.Status))
	}
	require.Equal(t, "cancelled", got[len(got)-1], "the cancel's event is recorded: %v", got)
}

// The lean shape starts no timer: the submit arrives with the start (no
// bounded wait) and the poll activity waits for each poll itself. The
// classic shape's timers are what recorded histories replay.
func TestLeanShapeStartsNoTimer(t *testing.T) {
	t.Parallel()
	for _, shape := range []int{workflows.ShapeReport, workflows.ShapeLean, 0} {
		d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{
			{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: hint(12)}},
			{snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: hint(12)}},
			completed(),
		}}
		b := setup(t, d)
		b.in.Config.Shape = shape
		var timers []time.Duration
		b.env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })
		_, err := b.run(t)
		require.NoError(t, err)
		require.Equal(t, mcpflow.StatusCompleted, b.task(t).Status)
		if shape >= workflows.ShapeLean {
			require.Empty(t, timers, "lean and report")
		} else {
			require.Equal(t, secs(300, 5, 12), timers, "classic: the bounded wait for the submit, then one timer before each poll after a change")
		}
	}
}
