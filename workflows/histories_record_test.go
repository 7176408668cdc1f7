package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/store"
	mcpworker "github.com/mcpflow/mcpflow/worker"
	"github.com/mcpflow/mcpflow/workflows"
)

// recordEnv enables TestRecordHistories (`make histories`).
const recordEnv = "MCPFLOW_RECORD_HISTORIES"

// recIdentity is the Temporal identity of the recorder's client and
// workers, so the histories name no host or process.
const recIdentity = "mcpflow-history-recorder"

// recHookSecret signs the recorder's webhook POSTs; it stays in the
// worker's configuration and never enters a history (checked).
const recHookSecret = "history-recorder-webhook-secret"

// recShortHistory is the history length (events) at which the dev server
// that records the continue-as-new paths suggests continuing as new
// (dynamic config limit.historyCount.suggestContinueAsNew, 4,096 by
// default). The workflow continues as new on that suggestion
// (GetContinueAsNewSuggested) as it does on a long history of its own
// (maxEventsPerRun, 2,000 events: too long for test data).
const recShortHistory = 50

// recPath is one path of the task workflow that TestRecordHistories
// records, once per shape.
type recPath struct {
	name   string
	shapes []int // nil: every shape
	short  bool  // recorded on the dev server that suggests continue-as-new early
	slow   bool  // waits for a one-minute Temporal timeout: started first
	run    func(t *testing.T, r *recording)
}

func (p recPath) shapeList() []int {
	if p.shapes == nil {
		return []int{workflows.ShapeReport, workflows.ShapeLean, 0}
	}
	return p.shapes
}

// withApproval are the shapes of the paths a call waiting for approval
// goes (ShapeApproval runs the report shape's commands: its own histories
// keep them so).
var withApproval = []int{workflows.ShapeReport, workflows.ShapeLean, 0, workflows.ShapeApproval}

// recPaths are the recorded paths. TestReplayRecordedHistories requires a
// history of each (in each of its shapes).
var recPaths = []recPath{
	{name: "completed", shapes: withApproval, run: recordCompleted},
	{name: "failed", shapes: withApproval, run: recordFailed},
	{name: "submit_failed", run: recordSubmitFailed},
	{name: "poll_errors", run: recordPollErrors},
	{name: "cancel_signal", shapes: withApproval, run: recordCancel(false)},
	{name: "cancel_temporal", run: recordCancel(true)},
	{name: "compensation", run: recordCompensation},
	{name: "duplicate", run: recordDuplicate},
	{name: "input_ordinary", run: recordInput(false)},
	{name: "input_native", run: recordInput(true)},
	{name: "repin", slow: true, run: recordRepin},
	{name: "can_polling", short: true, run: recordCANPolling},
	{name: "can_cancel_signal", short: true, run: recordCANCancel(false)},
	{name: "can_cancel_temporal", short: true, run: recordCANCancel(true)},
	{name: "webhook_busy", run: recordWebhook(3, mcpflow.NotificationDelivered, http.StatusConflict, http.StatusConflict, http.StatusOK)},
	{name: "webhook_failures", run: recordWebhook(3, mcpflow.NotificationDelivered, http.StatusInternalServerError, http.StatusInternalServerError, http.StatusOK)},
	{name: "webhook_dead_letter", run: recordWebhook(5, mcpflow.NotificationDeadLetter, http.StatusInternalServerError)},
	{name: "webhook_gone", run: recordWebhook(1, mcpflow.NotificationDeadLetter, http.StatusGone)},
	// Only the report shape: the task client starts every task with it,
	// and only it ends a wait for the submit on a Temporal cancel.
	{name: "taskclient_completed", shapes: []int{workflows.ShapeReport}, run: recordTaskClient},
	{name: "cancel_before_submit", shapes: []int{workflows.ShapeReport}, run: recordCancelBeforeSubmit},
}

// TestRecordHistories records the histories that
// TestReplayRecordedHistories replays: every path of recPaths in each of
// its shapes, as a real worker (workflows.TaskWorkflow, activities on a
// SQLite store, the worker's client sending reports and heartbeats) runs it
// on a Temporal dev server started from bin/temporal, against a scripted
// remote side (recDriver) and webhook receiver (httptest). Each path checks
// that it went the way its name says, each file is replayed once written,
// and testdata/histories is replaced only when every path recorded.
func TestRecordHistories(t *testing.T) {
	if os.Getenv(recordEnv) != "1" {
		t.Skipf("set %s=1 (make histories) to re-record %s on a Temporal dev server", recordEnv, historiesDir)
	}
	began := time.Now()
	servers := map[bool]client.Client{
		false: startRecordServer(t),
		true: startRecordServer(t, "--dynamic-config-value",
			fmt.Sprintf("limit.historyCount.suggestContinueAsNew=%d", recShortHistory)),
	}
	out := t.TempDir()

	type job struct {
		p     recPath
		shape int
	}
	var jobs []job
	for _, slow := range []bool{true, false} {
		for _, p := range recPaths {
			if p.slow == slow {
				for _, shape := range p.shapeList() {
					jobs = append(jobs, job{p, shape})
				}
			}
		}
	}
	// Subtests run from goroutines (t.Run allows it), so -parallel, which
	// defaults to the CPU count, does not serialize the waits; the slow
	// paths take their slots first.
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			name := shapeNames[j.shape] + "_" + j.p.name
			t.Run(name, func(t *testing.T) {
				r := newRecording(t, servers[j.p.short], j.shape, name, out)
				j.p.run(t, r)
				require.True(t, r.saved, "%s saved no history", name)
			})
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.Fatalf("a path failed: %s is left as it was", historiesDir)
	}

	recorded, err := filepath.Glob(filepath.Join(out, "*.json"))
	require.NoError(t, err)
	old, err := filepath.Glob(filepath.Join(historiesDir, "*.json"))
	require.NoError(t, err)
	for _, f := range old {
		require.NoError(t, os.Remove(f))
	}
	require.NoError(t, os.MkdirAll(historiesDir, 0o755))
	for _, f := range recorded {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(historiesDir, filepath.Base(f)), b, 0o644))
	}
	t.Logf("recorded %d histories of %d paths in %s", len(recorded), len(jobs), time.Since(began).Round(time.Second))
}

// startRecordServer starts a Temporal dev server from the local CLI as
// testenv.StartTemporal does, with extra dev-server flags, and returns its
// client (identity recIdentity).
func startRecordServer(t *testing.T, extra ...string) client.Client {
	t.Helper()
	cli, err := testenv.TemporalCLIPath()
	require.NoError(t, err)
	logs := &testenv.SyncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:     cli,
		ClientOptions:    &client.Options{Namespace: "default", Identity: recIdentity, Logger: quietLogger()},
		LogLevel:         "error",
		SearchAttributes: testenv.SearchAttributes(workflows.SearchAttributeNames...),
		Stdout:           logs,
		Stderr:           logs,
		ExtraArgs:        append([]string{"--dynamic-config-value", "system.enableActivityEagerExecution=true"}, extra...),
	})
	require.NoError(t, err, "start Temporal dev server: %s", logs)
	t.Cleanup(func() { _ = srv.Stop() })
	return srv.Client()
}

// recording is one path recorded in one shape: its task, store, scripted
// remote side and workers.
type recording struct {
	name   string // file name without .json
	out    string // directory the files go to
	c      client.Client
	db     *store.DB
	tasks  mcpflow.TaskStore // the activities' task store
	driver *recDriver
	hook   *recHook // nil: no webhook
	in     workflows.TaskInput
	queue  string
	tc     *mcpworker.TaskClient // cancels and answers as the API does
	first  string                // the first run's id
	saved  bool
}

func newRecording(t *testing.T, c client.Client, shape int, name, out string) *recording {
	db := openDB(t)
	r := &recording{name: name, out: out, c: c, db: db, tasks: db, driver: &recDriver{remoteID: "job-1"},
		queue: "mcpflow-tasks-" + name}
	r.in = workflows.TaskInput{
		TaskID: mcpflow.NewTaskID(), UserID: "u", ThreadID: "th", ServerName: "srv", TaskName: "job",
		DriverName: mcpflow.DriverOrdinary,
		DriverData: map[string]string{mcpflow.DriverDataSubmitTool: "submit_job",
			mcpflow.DriverDataStatusTool: "get_job_status", mcpflow.DriverDataCancelTool: "cancel_job"},
		Arguments: mcpflow.Arguments{"duration_seconds": json.Number("3"), "label": "history"},
		Config: workflows.TaskConfig{
			Timing: mcpflow.PollTiming{PollInterval: time.Second, InputRequiredInterval: time.Second,
				MaxPollBackoff: 2 * time.Second, DegradedAfterErrors: 3},
			Bounds: mcpflow.DefaultBounds(), CallTimeout: 10 * time.Second, Shape: shape,
		},
	}
	r.tc = &mcpworker.TaskClient{Client: c, TaskQueue: r.queue, Config: r.in.Config,
		Servers: map[string]config.Server{"srv": {Name: "srv", Enabled: true, Type: "http", URL: "http://mcp.invalid/mcp"}}}
	return r
}

// recWorker is one mcpflow worker process: the task queue's worker and
// its own pinned queue's.
type recWorker struct {
	ws   []sdkworker.Worker
	once sync.Once
}

func (w *recWorker) stop() {
	w.once.Do(func() {
		for _, x := range w.ws {
			x.Stop()
		}
	})
}

// startWorker starts a worker process named process, wired like
// cmd/mcpflow's: TaskWorkflow and the activities on the task queue, the
// activities on its pinned queue <queue>@<process>, the client as the
// activities' heartbeater and report signaller.
func (r *recording) startWorker(t *testing.T, process string) *recWorker {
	t.Helper()
	acts := &activities.Activities{Driver: r.driver, Tasks: r.tasks, Threads: r.db, Events: r.db,
		PinnedQueue: r.queue + "@" + process, Heartbeats: r.c, Reports: r.c}
	if r.hook != nil {
		acts.Webhook = &activities.Webhook{URL: r.hook.url(), Secret: []byte(recHookSecret)}
	}
	main := sdkworker.New(r.c, r.queue, sdkworker.Options{})
	main.RegisterWorkflow(workflows.TaskWorkflow)
	main.RegisterActivity(acts)
	pinned := sdkworker.New(r.c, acts.PinnedQueue, sdkworker.Options{})
	pinned.RegisterActivity(acts)
	w := &recWorker{ws: []sdkworker.Worker{pinned, main}}
	require.NoError(t, pinned.Start())
	require.NoError(t, main.Start())
	t.Cleanup(w.stop)
	return w
}

// submit starts the task's workflow with its submit update
// (update-with-start, as worker.TaskClient.Submit does with this input).
func (r *recording) submit(t *testing.T) (*workflows.SubmitResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	op := r.c.NewWithStartWorkflowOperation(mcpworker.StartOptions(r.in, r.queue), workflows.TaskWorkflowName, r.in)
	h, err := r.c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: op,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: workflows.UpdateSubmit, UpdateID: r.in.TaskID,
			WaitForStage: client.WorkflowUpdateStageCompleted}})
	var res workflows.SubmitResult
	if err == nil {
		err = h.Get(ctx, &res)
	}
	run, rerr := op.Get(ctx)
	require.NoError(t, rerr, "the workflow started")
	r.first = run.GetRunID()
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// row reads the task's row as the API does.
func (r *recording) row(t *testing.T) *mcpflow.Task {
	t.Helper()
	task, err := r.db.GetTask(context.Background(), r.in.TaskID)
	require.NoError(t, err)
	return task
}

// waitRow waits until the task's row satisfies ok.
func (r *recording) waitRow(t *testing.T, what string, ok func(*mcpflow.Task) bool) *mcpflow.Task {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		task, err := r.db.GetTask(context.Background(), r.in.TaskID)
		if err == nil && ok(task) {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task's row never showed %s (last read: %+v, %v)", what, task, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasStatus(s mcpflow.Status) func(*mcpflow.Task) bool {
	return func(task *mcpflow.Task) bool { return task.Status == s }
}

// finish waits until the task's workflow (its last run) closed, writes
// one file per run (oldest first) and replays each. It returns the runs'
// events.
func (r *recording) finish(t *testing.T) [][]*historypb.HistoryEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var last string
	for {
		d, err := r.c.DescribeWorkflow(ctx, r.in.TaskID, "")
		require.NoError(t, err)
		info := d.RawResponse.GetWorkflowExecutionInfo()
		if s := info.GetStatus(); s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && s != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
			last = info.GetExecution().GetRunId()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var runs [][]*historypb.HistoryEvent
	for run := last; run != ""; {
		evs := r.history(ctx, t, run)
		runs = append([][]*historypb.HistoryEvent{evs}, runs...)
		run = evs[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
	}
	for i, evs := range runs {
		name := r.name + ".json"
		if len(runs) > 1 {
			name = fmt.Sprintf("%s_run%d.json", r.name, i+1)
		}
		r.requireClean(t, name, evs)
		b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: evs})
		require.NoError(t, err)
		path := filepath.Join(r.out, name)
		require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
		require.NoError(t, replayHistoryFile(path), "%s replays", name)
	}
	r.saved = true
	return runs
}

// history reads one run's full history.
func (r *recording) history(ctx context.Context, t *testing.T, runID string) []*historypb.HistoryEvent {
	t.Helper()
	it := r.c.GetWorkflowHistory(ctx, r.in.TaskID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var evs []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		evs = append(evs, e)
	}
	require.NotEmpty(t, evs)
	return evs
}

var identityRE = regexp.MustCompile(`"identity":\s*"([^"]*)"`)

// requireClean checks a run's history: it holds neither the webhook's
// secret nor its address (payloads read as JSON, not base64), names no
// identity but the recorder's, carries no stack trace, and no workflow
// task failed but for a command the server had to refuse (a signal that
// raced the run's end, which running tasks meet too).
func (r *recording) requireClean(t *testing.T, name string, evs []*historypb.HistoryEvent) {
	t.Helper()
	b, err := temporalproto.CustomJSONMarshalOptions{
		Metadata: map[string]any{commonpb.EnablePayloadShorthandMetadataKey: true},
	}.Marshal(&historypb.History{Events: evs})
	require.NoError(t, err)
	s := string(b)
	require.NotContains(t, s, recHookSecret, name)
	if r.hook != nil {
		require.NotContains(t, s, r.hook.srv.Listener.Addr().String(), name)
	}
	require.NotContains(t, s, `"stackTrace"`, name)
	for _, m := range identityRE.FindAllStringSubmatch(s, -1) {
		require.Equal(t, recIdentity, m[1], "%s: an identity other than the recorder's", name)
	}
	for _, e := range evs {
		if f := e.GetWorkflowTaskFailedEventAttributes(); f != nil {
			require.Equal(t, enumspb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND, f.GetCause(),
				"%s: workflow task %d failed: %s", name, e.GetEventId(), f.GetFailure().GetMessage())
		}
	}
}

// --- the scripted remote side ---

// recDriver is the remote MCP side of a recorded task: its status and
// cancel answers are scripted per path, it takes answers to questions
// (mcpflow.InputDriver, as both real drivers do), and it holds its state
// across worker processes as a server would.
type recDriver struct {
	remoteID  string
	submitErr error
	holds     bool // the question is held in the worker's memory (the native driver)
	// status and cancel answer the n-th call (from 1); ctx is the
	// activity's. A nil cancel answers cancelled.
	status func(ctx context.Context, n int) (mcpflow.Snapshot, error)
	cancel func(ctx context.Context, n int) (mcpflow.Snapshot, error)

	mu       sync.Mutex
	firstRun string // the run of the task's workflow that submitted it
	submits  int
	statusN  int
	cancelN  int
	answers  []mcpflow.InputAnswer
}

func (d *recDriver) Submit(ctx context.Context, req mcpflow.SubmitRequest) (mcpflow.Submission, error) {
	if err := mcpflow.BeforeSend(ctx); err != nil {
		return mcpflow.Submission{}, err
	}
	d.mu.Lock()
	d.submits++
	d.firstRun = activity.GetInfo(ctx).WorkflowExecution.RunID
	d.mu.Unlock()
	if d.submitErr != nil {
		return mcpflow.Submission{}, d.submitErr
	}
	return mcpflow.Submission{RemoteTaskID: d.remoteID, Snapshot: mcpflow.Snapshot{Status: mcpflow.StatusSubmitted}}, nil
}

func (d *recDriver) Status(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	d.mu.Lock()
	d.statusN++
	n := d.statusN
	d.mu.Unlock()
	return d.status(ctx, n)
}

func (d *recDriver) Cancel(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	d.mu.Lock()
	d.cancelN++
	n := d.cancelN
	d.mu.Unlock()
	if d.cancel == nil {
		return mcpflow.Snapshot{Status: mcpflow.StatusCancelled}, nil
	}
	return d.cancel(ctx, n)
}

func (d *recDriver) Answer(ctx context.Context, ref mcpflow.TaskReference, a mcpflow.InputAnswer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answers = append(d.answers, a)
	return nil
}

func (d *recDriver) HoldsQuestion(mcpflow.TaskReference) bool { return d.holds }

func (d *recDriver) counts() (submits, cancels, answers int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.submits, d.cancelN, len(d.answers)
}

// answer is the first answer the task got, or nil.
func (d *recDriver) answer() *mcpflow.InputAnswer {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.answers) == 0 {
		return nil
	}
	a := d.answers[0]
	return &a
}

func recWorking() mcpflow.Snapshot { return mcpflow.Snapshot{Status: mcpflow.StatusWorking} }

func recCompleted() mcpflow.Snapshot {
	return mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"report": "ready"}}
}

// workingThenCompleted answers working to the first status call and
// completed to the next.
func workingThenCompleted(_ context.Context, n int) (mcpflow.Snapshot, error) {
	if n == 1 {
		return recWorking(), nil
	}
	return recCompleted(), nil
}

func alwaysWorking(context.Context, int) (mcpflow.Snapshot, error) { return recWorking(), nil }

// inFirstRun reports whether the activity calling the driver belongs to
// the run that submitted the task (not to a run it continued as).
func (d *recDriver) inFirstRun(ctx context.Context) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return activity.GetInfo(ctx).WorkflowExecution.RunID == d.firstRun
}

// onWorker reports whether the activity calling the driver runs on the
// pinned queue of the worker process named process.
func onWorker(ctx context.Context, r *recording, process string) bool {
	return activity.GetInfo(ctx).TaskQueue == r.queue+"@"+process
}

// recQuestion is the question of the input paths (as server-everything
// asks it).
var recQuestion = map[string]any{"message": "Which interpretation?", "requested_schema": map[string]any{"type": "object",
	"properties": map[string]any{"interpretation": map[string]any{"type": "string"}}, "required": []any{"interpretation"}}}

// unwritableTasks is a task store whose inserts fail, as a database that
// went away after the remote submit would.
type unwritableTasks struct{ mcpflow.TaskStore }

func (unwritableTasks) CreateTask(context.Context, *mcpflow.Task) error {
	return errors.New("database is locked")
}

// recHook is the webhook receiver: its n-th POST (from 1) is answered with
// codes[n-1], the last code repeating.
type recHook struct {
	srv   *httptest.Server
	mu    sync.Mutex
	codes []int
	posts int
}

func newRecHook(t *testing.T, codes ...int) *recHook {
	h := &recHook{codes: codes}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.mu.Lock()
		h.posts++
		code := h.codes[min(h.posts, len(h.codes))-1]
		h.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *recHook) url() string { return h.srv.URL + "/hook" }

func (h *recHook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.posts
}

// --- history checks ---

func allEvents(runs [][]*historypb.HistoryEvent) []*historypb.HistoryEvent {
	var out []*historypb.HistoryEvent
	for _, evs := range runs {
		out = append(out, evs...)
	}
	return out
}

func countEvents(evs []*historypb.HistoryEvent, typ enumspb.EventType) int {
	n := 0
	for _, e := range evs {
		if e.GetEventType() == typ {
			n++
		}
	}
	return n
}

func lastEvent(evs []*historypb.HistoryEvent) enumspb.EventType {
	return evs[len(evs)-1].GetEventType()
}

// scheduledQueues lists the task queues an activity type was scheduled on.
func scheduledQueues(evs []*historypb.HistoryEvent, activityType string) []string {
	var out []string
	for _, e := range evs {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activityType {
			out = append(out, a.GetTaskQueue().GetName())
		}
	}
	return out
}

// cancelRequested reports whether a run got a cancel request: the cancel
// signal or a Temporal cancellation.
func cancelRequested(evs []*historypb.HistoryEvent) bool {
	for _, e := range evs {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED {
			return true
		}
		if s := e.GetWorkflowExecutionSignaledEventAttributes(); s != nil && s.GetSignalName() == workflows.SignalCancel {
			return true
		}
	}
	return false
}

func requireAppError(t *testing.T, err error, typ string) {
	t.Helper()
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, typ, ae.Type())
}

// --- the paths ---

func recordCompleted(t *testing.T, r *recording) {
	r.driver.status = workingThenCompleted
	r.startWorker(t, "a")
	_, err := r.submit(t)
	require.NoError(t, err)
	runs := r.finish(t)
	require.Len(t, runs, 1)
	require.Equal(t, mcpflow.StatusCompleted, r.row(t).Status)
}

func recordFailed(t *testing.T, r *recording) {
	r.driver.status = func(_ context.Context, n int) (mcpflow.Snapshot, error) {
		if n == 1 {
			return recWorking(), nil
		}
		msg := "remote job crashed"
		return mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: &msg}, nil
	}
	r.startWorker(t, "a")
	_, err := r.submit(t)
	require.NoError(t, err)
	r.finish(t)
	task := r.row(t)
	require.Equal(t, mcpflow.StatusFailed, task.Status)
	require.Equal(t, "remote job crashed", *task.Error)
}

// The remote submit answers an error: nothing is tracked.
func recordSubmitFailed(t *testing.T, r *recording) {
	r.driver.submitErr = errors.New("MCP task tool 'submit_job' returned an error: quota exceeded")
	r.startWorker(t, "a")
	_, err := r.submit(t)
	requireAppError(t, err, workflows.ErrTypeSubmit)
	r.finish(t)
	_, err = r.db.GetTask(context.Background(), r.in.TaskID)
	require.Equal(t, mcpflow.ENotFound, mcpflow.ErrorCode(err))
}

// Three failed polls degrade tracking; the task recovers and completes.
func recordPollErrors(t *testing.T, r *recording) {
	r.driver.status = func(_ context.Context, n int) (mcpflow.Snapshot, error) {
		switch {
		case n <= 3:
			return mcpflow.Snapshot{}, errors.New("upstream temporarily unavailable")
		case n == 4:
			return recWorking(), nil
		}
		return recCompleted(), nil
	}
	r.startWorker(t, "a")
	_, err := r.submit(t)
	require.NoError(t, err)
	r.finish(t)
	task := r.row(t)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.Equal(t, 5, task.PollAttemptCount)
	evs, err := r.db.ListEvents(context.Background(), mcpflow.ThreadRef{UserID: r.in.UserID, ThreadID: r.in.ThreadID}, 0, 0)
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	require.Contains(t, string(evs[0].Payload), `"tracking_degraded":true`, "tracking degraded on the way")
}

// cancelWorking starts a worker and a task, waits until it is working,
// cancels it with the cancel signal the API sends
// (worker.TaskClient.CancelTask) or through Temporal (native), and returns
// its runs' histories once it has ended.
func (r *recording) cancelWorking(t *testing.T, native bool) [][]*historypb.HistoryEvent {
	t.Helper()
	r.startWorker(t, "a")
	_, err := r.submit(t)
	require.NoError(t, err)
	task := r.waitRow(t, "working", hasStatus(mcpflow.StatusWorking))
	ctx := context.Background()
	if native {
		require.NoError(t, r.c.CancelWorkflow(ctx, r.in.TaskID, ""))
	} else {
		require.NoError(t, r.tc.CancelTask(ctx, task))
	}
	return r.finish(t)
}

// A working task is cancelled, with the cancel signal the API sends
// (worker.TaskClient.CancelTask) or with a Temporal cancellation.
func recordCancel(native bool) func(*testing.T, *recording) {
	return func(t *testing.T, r *recording) {
		r.driver.status = alwaysWorking
		runs := r.cancelWorking(t, native)
		require.Len(t, runs, 1)
		end := enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
		if native {
			end = enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED
		}
		require.Equal(t, end, lastEvent(runs[0]))
		require.Equal(t, mcpflow.StatusCancelled, r.row(t).Status)
		_, cancels, _ := r.driver.counts()
		require.Equal(t, 1, cancels)
	}
}

// The row cannot be stored after the remote submit: the remote task is
// cancelled (compensation) and the submit answers the persist failure.
func recordCompensation(t *testing.T, r *recording) {
	r.tasks = unwritableTasks{r.db}
	r.driver.status = alwaysWorking
	r.startWorker(t, "a")
	_, err := r.submit(t)
	requireAppError(t, err, workflows.ErrTypePersist)
	r.finish(t)
	_, cancels, _ := r.driver.counts()
	require.Equal(t, 1, cancels, "one compensating cancel")
	_, err = r.db.GetTask(context.Background(), r.in.TaskID)
	require.Equal(t, mcpflow.ENotFound, mcpflow.ErrorCode(err))
}

// The remote handle is already tracked by another task: 409, no cancel.
func recordDuplicate(t *testing.T, r *recording) {
	owner := &mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: r.in.UserID, ThreadID: r.in.ThreadID, ServerName: r.in.ServerName,
		DriverName: mcpflow.DriverOrdinary, RemoteTaskID: r.driver.remoteID, TaskName: "first", Status: mcpflow.StatusWorking}
	require.NoError(t, r.db.CreateTask(context.Background(), owner))
	r.startWorker(t, "a")
	_, err := r.submit(t)
	requireAppError(t, err, workflows.ErrTypeDuplicate)
	r.finish(t)
	_, cancels, _ := r.driver.counts()
	require.Zero(t, cancels)
}

// The task asks a question; the user's answer (worker.TaskClient.AnswerInput,
// as the API sends it) is delivered and the task completes with it. The
// ordinary driver's answer goes through the toolset's input_tool from any
// worker; the native driver's question waits in the memory of the worker
// that polls the task, which delivers the answer.
func recordInput(native bool) func(*testing.T, *recording) {
	return func(t *testing.T, r *recording) {
		if native {
			r.in.DriverName = mcpflow.DriverNative
			r.in.DriverData = map[string]string{mcpflow.DriverDataNativeTool: "research"}
			r.in.Config.Pinned = true // as worker.TaskClient sets it for native tasks
			r.driver.holds = true
		} else {
			r.in.DriverData[mcpflow.DriverDataInputTool] = "answer_job"
		}
		r.driver.status = func(context.Context, int) (mcpflow.Snapshot, error) {
			if a := r.driver.answer(); a != nil {
				return mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"used": a.Content["interpretation"]}}, nil
			}
			return mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: recQuestion, InputAnswerable: true}, nil
		}
		r.startWorker(t, "a")
		_, err := r.submit(t)
		require.NoError(t, err)
		task := r.waitRow(t, "an answerable question", func(task *mcpflow.Task) bool {
			return task.Status == mcpflow.StatusInputRequired && task.InputAnswerable
		})
		require.NoError(t, r.tc.AnswerInput(context.Background(), task,
			mcpflow.InputAnswer{Action: mcpflow.InputAccept, Content: map[string]any{"interpretation": "historical"}}))
		runs := r.finish(t)
		done := r.row(t)
		require.Equal(t, mcpflow.StatusCompleted, done.Status)
		require.Equal(t, map[string]any{"used": "historical"}, done.Result)
		_, _, answers := r.driver.counts()
		require.Equal(t, 1, answers, "delivered once")
		queues := scheduledQueues(runs[0], "Answer")
		require.Len(t, queues, 1)
		if native {
			require.Equal(t, r.queue+"@a", queues[0], "delivered by the worker holding the question")
		} else {
			require.Equal(t, r.queue, queues[0], "delivered by any worker")
		}
	}
}

// A stdio task (pinned to the worker process owning its session) whose
// worker goes away: its next call is not picked up within a minute, the
// task is pinned to the other worker and completes there (the scripted
// server kept the task, as the demo server does with --state).
func recordRepin(t *testing.T, r *recording) {
	r.in.Config.Pinned = true
	r.driver.status = func(ctx context.Context, _ int) (mcpflow.Snapshot, error) {
		if onWorker(ctx, r, "b") {
			return recCompleted(), nil
		}
		return recWorking(), nil
	}
	first := r.startWorker(t, "a")
	_, err := r.submit(t)
	require.NoError(t, err)
	r.waitRow(t, "working", hasStatus(mcpflow.StatusWorking))
	first.stop()
	r.startWorker(t, "b")
	runs := r.finish(t)
	require.Len(t, runs, 1)
	require.Equal(t, mcpflow.StatusCompleted, r.row(t).Status)
	evs := runs[0]
	require.Equal(t, []string{r.queue, r.queue}, scheduledQueues(evs, "Pin"), "pinned, then pinned again")
	polls := scheduledQueues(evs, "Poll")
	require.Equal(t, r.queue+"@a", polls[0])
	require.Equal(t, r.queue+"@b", polls[len(polls)-1])
	timedOut := false
	for _, e := range evs {
		if a := e.GetActivityTaskTimedOutEventAttributes(); a != nil &&
			a.GetFailure().GetTimeoutFailureInfo().GetTimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
			timedOut = true
		}
	}
	require.True(t, timedOut, "a call on the gone worker's queue timed out unstarted")
}

// A task whose run grows long continues as new while polling (each poll
// finds a change); the next run's poll finds it completed.
func recordCANPolling(t *testing.T, r *recording) {
	r.driver.status = func(ctx context.Context, n int) (mcpflow.Snapshot, error) {
		if !r.driver.inFirstRun(ctx) {
			return recCompleted(), nil
		}
		return mcpflow.Snapshot{Status: mcpflow.StatusWorking, Result: map[string]any{"progress": n}}, nil
	}
	r.startWorker(t, "a")
	_, err := r.submit(t)
	require.NoError(t, err)
	runs := r.finish(t)
	require.Len(t, runs, 2)
	require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, lastEvent(runs[0]))
	require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, lastEvent(runs[len(runs)-1]))
	require.False(t, cancelRequested(allEvents(runs)))
	require.Equal(t, mcpflow.StatusCompleted, r.row(t).Status)
	submits, _, _ := r.driver.counts()
	require.Equal(t, 1, submits)
}

// A cancel whose remote cancel keeps failing for as long as the first run
// lasts continues as new while cancelling once that run grew long; the
// next run's cancel lands (after a Temporal cancellation it still ends
// Canceled).
func recordCANCancel(native bool) func(*testing.T, *recording) {
	return func(t *testing.T, r *recording) {
		r.driver.status = alwaysWorking
		r.driver.cancel = func(ctx context.Context, _ int) (mcpflow.Snapshot, error) {
			if !r.driver.inFirstRun(ctx) {
				return mcpflow.Snapshot{Status: mcpflow.StatusCancelled}, nil
			}
			return mcpflow.Snapshot{}, errors.New("cancel endpoint down")
		}
		runs := r.cancelWorking(t, native)
		require.Len(t, runs, 2)
		require.True(t, cancelRequested(runs[0]), "the first run was cancelling when it continued as new")
		require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, lastEvent(runs[0]))
		require.NotZero(t, countEvents(runs[0], enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED), "a remote cancel failed in the first run")
		require.Zero(t, countEvents(runs[1], enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED), "the next run's cancel lands")
		end := enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
		if native {
			end = enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED
		}
		require.Equal(t, end, lastEvent(runs[len(runs)-1]))
		require.Equal(t, mcpflow.StatusCancelled, r.row(t).Status)
	}
}

// With a webhook configured the task's completed event is POSTed to the
// receiver, which answers codes in turn; posts and status are what the
// receiver and the row must end with.
func recordWebhook(posts int, status string, codes ...int) func(*testing.T, *recording) {
	return func(t *testing.T, r *recording) {
		r.hook = newRecHook(t, codes...)
		r.in.Config.Webhook = true
		r.driver.status = workingThenCompleted
		r.startWorker(t, "a")
		_, err := r.submit(t)
		require.NoError(t, err)
		r.finish(t)
		task := r.row(t)
		require.Equal(t, mcpflow.StatusCompleted, task.Status)
		require.Equal(t, status, task.NotificationStatus)
		require.Equal(t, posts, r.hook.count())
	}
}

// A task created through worker.TaskClient.Submit, the code path of the
// REST tool call and of the MCP endpoint's tools/call (which passes its
// _meta run and tool call ids): the workflow input is the one the client
// builds.
func recordTaskClient(t *testing.T, r *recording) {
	r.driver.status = workingThenCompleted
	r.startWorker(t, "a")
	r.tc.Config = r.in.Config
	runID, callID, toolset := "run-1", "call-1", "job"
	res, err := r.tc.Submit(context.Background(),
		mcpflow.ToolCall{UserID: r.in.UserID, ThreadID: r.in.ThreadID, Tool: "srv_submit_job",
			Arguments: map[string]any{"duration_seconds": json.Number("3"), "label": "history"}, RunID: &runID, ToolCallID: &callID},
		mcpflow.Tool{Name: "srv_submit_job", Server: "srv", OriginalName: "submit_job", TaskToolset: &toolset},
		config.TaskToolset{Name: "job", SubmitTool: "submit_job", StatusTool: "get_job_status", CancelTool: "cancel_job"})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s", res.Content)
	sub, ok := res.StructuredContent.(workflows.SubmitResult)
	require.True(t, ok, "%T", res.StructuredContent)
	r.in.TaskID = sub.TaskID
	runs := r.finish(t)
	require.Len(t, runs, 1)
	require.Equal(t, mcpflow.StatusCompleted, r.row(t).Status)
	var in workflows.TaskInput
	require.NoError(t, json.Unmarshal(runs[0][0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0].GetData(), &in))
	require.Equal(t, workflows.ShapeReport, in.Config.Shape)
	require.Equal(t, "call-1", *in.ToolCallID)
}

// A task workflow started without its submit update and cancelled through
// Temporal while it waits for one.
func recordCancelBeforeSubmit(t *testing.T, r *recording) {
	r.startWorker(t, "a")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := r.c.ExecuteWorkflow(ctx, mcpworker.StartOptions(r.in, r.queue), workflows.TaskWorkflowName, r.in)
	require.NoError(t, err)
	r.first = run.GetRunID()
	// Cancel once the workflow waits (its bounded wait's timer is started).
	for countEvents(r.history(ctx, t, r.first), enumspb.EVENT_TYPE_TIMER_STARTED) == 0 {
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, r.c.CancelWorkflow(ctx, r.in.TaskID, ""))
	runs := r.finish(t)
	require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, lastEvent(runs[0]))
	submits, _, _ := r.driver.counts()
	require.Zero(t, submits)
}
