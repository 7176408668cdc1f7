package workflows

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// a references the activities by method; Temporal only uses the names.
var a *activities.Activities

// maxEventsPerRun starts a new run well before the server's own
// suggestion, so no run's history grows without bound.
const maxEventsPerRun = 2000

// pinnedScheduleToStart is how long an activity waits for the worker that
// owns a stdio task's session before the task is pinned to another one.
const pinnedScheduleToStart = time.Minute

// TaskWorkflow runs one durable MCP task: it submits the remote task (the
// "submit" update, sent with the start), persists the row, polls the remote
// status with capped backoff in its history shape's loop (track) until the
// task ends, and cancels it on the "cancel" signal or a Temporal
// cancellation. The workflow owns its task's row: it writes it, or (lean
// and report shapes, no webhook) the poll activity it runs writes the
// changes it finds, one writer at a time (see the package doc).
func TaskWorkflow(ctx workflow.Context, in TaskInput) (*TaskOutcome, error) {
	if in.Config.Shape > ShapeNewest {
		// A panic fails the workflow task (the worker's default panic
		// policy blocks the workflow), so it is retried, on a newer worker
		// once one polls; returning an error would fail the task itself.
		panic(fmt.Sprintf("this mcpflow worker runs task shapes up to %d, but task %s was started with shape %d by a newer mcpflow: a worker of that version must run it",
			ShapeNewest, in.TaskID, in.Config.Shape))
	}
	w := newTaskRun(ctx, in)
	// Temporal cancellation is handled like the cancel signal: the work goes
	// on in a context the cancellation does not reach, and the run ends as
	// cancelled once the remote cancel is applied.
	root, _ := workflow.NewDisconnectedContext(ctx)
	if err := w.listen(ctx, root); err != nil {
		return nil, err
	}
	if !w.st.Submitted {
		if out := w.awaitSubmit(root); out != nil {
			if w.in.Config.Shape < ShapeReport {
				return out, nil
			}
			return w.end(out)
		}
	}
	if w.in.Config.Webhook {
		workflow.Go(root, w.notify)
	}
	out, err := w.track(root)
	if err == nil && !w.drain(root) {
		err = errContinueAsNew // history grew while deliveries went on
	}
	if errors.Is(err, errContinueAsNew) {
		return nil, w.continueAsNew(ctx, root)
	}
	if err != nil {
		return nil, err
	}
	return w.end(out)
}

// errContinueAsNew ends tracking when the run's history has grown long:
// the task goes on in a new run.
var errContinueAsNew = errors.New("continue as new")

// newTaskRun starts the run's state: a new task's, or the one the run
// before handed over.
func newTaskRun(ctx workflow.Context, in TaskInput) *taskRun {
	w := &taskRun{in: in, log: workflow.GetLogger(ctx)}
	if in.State != nil {
		w.st = *in.State
		w.st.Runs++
		w.cancelled = w.st.CancelRequestedAt != nil // a cancel in progress goes on in the new run
	} else {
		w.st.CreatedAt = workflow.Now(ctx).UTC()
		w.st.Snapshot.Status = mcpflow.StatusSubmitted
		if in.Config.Shape >= ShapeLean {
			w.st.SearchStatus = mcpflow.StatusSubmitted // set by the start options
		}
	}
	return w
}

// listen sets up, on root, what the run hears: Temporal's cancellation
// of ctx, the cancel, report and notify signals, the state query and the
// input update.
func (w *taskRun) listen(ctx, root workflow.Context) error {
	workflow.Go(root, func(gctx workflow.Context) {
		_ = workflow.Await(gctx, func() bool { return ctx.Err() != nil })
		if w.st.Snapshot.Status.IsTerminal() {
			return // finished (its notifications draining): the run ends as it is
		}
		w.st.NativeCancel = true // kept across continue-as-new
		w.requestCancel(root)
	})
	sig := workflow.GetSignalChannel(root, SignalCancel)
	workflow.Go(root, func(gctx workflow.Context) {
		for {
			var reason string
			sig.Receive(gctx, &reason)
			w.requestCancel(gctx)
		}
	})
	w.rowMu = workflow.NewMutex(root)
	w.reports = workflow.GetSignalChannel(root, SignalReport)
	notifySig := workflow.GetSignalChannel(root, SignalNotify)
	workflow.Go(root, func(gctx workflow.Context) {
		for {
			notifySig.Receive(gctx, nil)
			w.wake = true
		}
	})
	if err := workflow.SetQueryHandler(root, QueryState, func() (TaskState, error) { return w.st, nil }); err != nil {
		return err
	}
	return w.setInputHandler(root)
}

// continueAsNew hands the task over to a new run once nothing is left in
// flight: a delivery attempt, an accepted answer, an update handler.
func (w *taskRun) continueAsNew(ctx, root workflow.Context) error {
	// A delivery in flight finishes first (its outcome is recorded); a
	// delivery waiting for its retry time waits in the next run.
	_ = workflow.Await(root, func() bool { return !w.delivering })
	if err := w.settleAnswer(root); err != nil {
		return err
	}
	_ = workflow.Await(root, func() bool { return workflow.AllHandlersFinished(root) })
	next := w.in
	st := w.st
	next.State = &st
	return workflow.NewContinueAsNewError(ctx, TaskWorkflowName, next)
}

// end returns the run's result: a task cancelled through Temporal ends
// Canceled.
func (w *taskRun) end(out *TaskOutcome) (*TaskOutcome, error) {
	if w.st.NativeCancel {
		return out, temporal.NewCanceledError("cancelled through Temporal")
	}
	return out, nil
}

type taskRun struct {
	in        TaskInput
	st        TaskState
	log       interface{ Info(string, ...any) }
	cancelled bool

	// rowMu serializes row writes and every change of st.Notification:
	// the tracking loop and the notifier both write the row.
	rowMu      workflow.Mutex
	delivering bool // a delivery attempt is under way (dispatched, POSTed, outcome not yet stored)
	wake       bool // the notify signal arrived: retry a waiting delivery now

	answer *pendingAnswer // an accepted answer to the task's question (input update)

	reports workflow.ReceiveChannel // changes a reporting poll wrote (ShapeReport)
	delay   time.Duration           // the next poll's wait (track)
}

// requestCancel records a cancel request. A repeated one sends no second
// remote cancel, and a finished task (still delivering its notifications)
// ignores it.
func (w *taskRun) requestCancel(ctx workflow.Context) {
	if w.st.CancelRequestedAt != nil || w.st.Snapshot.Status.IsTerminal() {
		return
	}
	now := workflow.Now(ctx).UTC()
	w.st.CancelRequestedAt = &now
	w.cancelled = true
}

// awaitSubmit serves the submit update. It returns the outcome of a task
// that ended without being tracked (submit failed, compensated, duplicate,
// or no submit arrived), nil once it is submitted.
func (w *taskRun) awaitSubmit(ctx workflow.Context) *TaskOutcome {
	running := false // a submit started (and may have finished)
	var submitErr error
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSubmit,
		func(uctx workflow.Context) (*SubmitResult, error) {
			running = true
			res, err := w.submit(uctx)
			submitErr = err
			return res, err
		},
		workflow.UpdateHandlerOptions{Validator: func(workflow.Context) error {
			if running {
				return errors.New("this task was already submitted")
			}
			return nil
		}})
	if err != nil {
		return untracked(mcpflow.StatusFailed, err.Error())
	}
	// A submit that has started is waited for whatever its duration (a
	// remote call may take up to lease_seconds): giving up on it would
	// leave its remote task untracked and uncancelled.
	yield := w.in.Config.Shape >= ShapeLean // the classic shape always waits with a timer
	if yield {
		// Update-with-start delivers the submit in the first workflow task:
		// one yield lets its handler start, and only a workflow without
		// one pays the bounded wait's timer (two events otherwise spent on
		// every task).
		yielded := false
		_ = workflow.Await(ctx, func() bool {
			done := running || yielded
			yielded = true
			return done
		})
	}
	// A cancel ends the wait (ShapeReport on): nothing remote exists yet.
	cancelEnds := w.in.Config.Shape >= ShapeReport
	if !yield || !running {
		wctx, stopTimer := workflow.WithCancel(ctx) // so the timer does not outlive the wait
		_, _ = workflow.AwaitWithTimeout(wctx, 5*time.Minute, func() bool { return running || (cancelEnds && w.cancelled) })
		stopTimer()
	}
	switch {
	case !running && cancelEnds && w.cancelled:
		return untracked(mcpflow.StatusCancelled, "cancelled before a submit request arrived")
	case !running:
		return untracked(mcpflow.StatusFailed, "no submit request arrived")
	}
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	if submitErr != nil {
		return untracked(mcpflow.StatusFailed, submitErr.Error())
	}
	return nil
}

// untracked is the outcome of a task that ended before it was tracked.
func untracked(status mcpflow.Status, msg string) *TaskOutcome {
	return &TaskOutcome{Status: status, Error: &msg}
}

// submit runs the remote submit, bounds the answer and persists the row;
// any failure after the remote task exists is compensated with a
// best-effort remote cancel (spec §2.6), except a duplicate remote handle.
func (w *taskRun) submit(ctx workflow.Context) (*SubmitResult, error) {
	in := w.in
	if in.Config.Pinned {
		if err := w.pin(ctx); err != nil {
			return nil, err
		}
	}
	req := mcpflow.SubmitRequest{UserID: in.UserID, ThreadID: in.ThreadID, RunID: in.RunID, ToolCallID: in.ToolCallID,
		ServerName: in.ServerName, TaskName: in.TaskName, Arguments: in.Arguments, DriverData: in.DriverData, LocalTaskID: in.TaskID}
	var out activities.SubmitOutput
	err := w.exec(ctx, "submit "+in.TaskName, w.submitOptions(), a.Submit, &out,
		activities.SubmitInput{Request: req, Bounds: in.Config.Bounds, SealedSecrets: in.SealedSecrets,
			Idempotent: in.Config.IdempotentSubmit})
	if err != nil {
		return nil, appMessage(err)
	}
	w.st.RemoteTaskID = out.RemoteTaskID
	w.in.DriverData = out.DriverData
	if out.Problem != "" {
		w.compensate(ctx)
		return nil, temporal.NewNonRetryableApplicationError(out.Problem, ErrTypeProtocol, nil)
	}
	w.st.Snapshot = out.Snapshot
	w.st.Fingerprint = out.Fingerprint
	w.st.Submitted = true
	if err := w.persist(ctx, true, 3); err != nil {
		w.st.Submitted = false
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) && ae.Type() == ErrTypeDuplicate {
			return nil, temporal.NewNonRetryableApplicationError(ae.Message(), ErrTypeDuplicate, nil)
		}
		w.compensate(ctx)
		// The agent gets a fixed text; the storage error stays the cause
		// (in the history and the logs, not in the answer).
		return nil, temporal.NewNonRetryableApplicationError(PersistFailedMessage, ErrTypePersist, appMessage(err))
	}
	w.upsertStatus(ctx)
	return &SubmitResult{TaskID: in.TaskID, TaskName: in.TaskName, Status: w.st.Snapshot.Status, Message: SubmitMessage}, nil
}

// compensate cancels an untracked remote task on a disconnected context,
// best effort: failures are logged, the original error stands.
func (w *taskRun) compensate(ctx workflow.Context) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	var out activities.CancelOutput
	err := w.exec(dctx, "compensate: cancel untracked remote task", retry(w.in.Config, 3), a.Cancel, &out,
		activities.CancelInput{Ref: w.ref(), Bounds: w.in.Config.Bounds})
	if err != nil {
		w.log.Info("Failed to cancel untracked MCP task after persistence failure", "task_id", w.in.TaskID, "error", err.Error())
	}
}

// long reports whether the run's history is long enough to continue as new.
func (w *taskRun) long(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > maxEventsPerRun
}

// apply folds a poll result into the state, with the event state of a
// poll that wrote the row itself.
func (w *taskRun) apply(out activities.PollOutput) {
	if out.Notification != nil {
		w.st.Notification = *out.Notification
	}
	at := out.PolledAt
	w.st.LastPolledAt = &at
	w.st.PollCount += out.Polls
	if out.Snapshot == nil { // degraded tracking
		w.st.ConsecutiveErrors = out.ConsecutiveErrors
		w.st.LastPollError = out.PollError
		return
	}
	w.st.Snapshot = *out.Snapshot
	w.st.Fingerprint = out.Fingerprint
	w.st.ConsecutiveErrors = 0
	w.st.LastPollError = nil
	w.st.InputQueue = out.InputQueue
	if w.st.Snapshot.Status.IsTerminal() && w.st.CompletedAt == nil {
		w.st.CompletedAt = &at
	}
}

// cancel retries the remote cancel with backoff until it reports a
// terminal status, then applies it.
func (w *taskRun) cancel(ctx workflow.Context) (*TaskOutcome, error) {
	if err := w.persist(ctx, false, 0); err != nil { // cancel_requested_at reaches the API
		return nil, err
	}
	for {
		// One remote attempt per activity, so every attempt is counted and
		// its error shown (cancel_attempt_count, last_cancel_error); cancels
		// are rare, so the few history events per retry are affordable.
		var out activities.CancelOutput
		err := w.exec(ctx, "cancel remote task", oneAttempt(), a.Cancel, &out,
			activities.CancelInput{Ref: w.ref(), Bounds: w.in.Config.Bounds})
		w.st.CancelAttempts++
		if err != nil {
			if w.rePin(ctx, err) {
				continue
			}
			msg := mcpflow.TruncateChars(errText(err), mcpflow.MaxErrorChars)
			w.st.LastCancelError = &msg
			if perr := w.persist(ctx, false, 0); perr != nil {
				return nil, perr
			}
			// Backoff counts from the failed attempt: poll_interval × 2^n, capped.
			_ = workflow.Sleep(ctx, w.in.Config.Timing.ErrorBackoff(w.st.CancelAttempts-1))
			if w.long(ctx) {
				return nil, errContinueAsNew
			}
			continue
		}
		w.st.Snapshot = out.Snapshot
		w.st.Fingerprint = out.Fingerprint
		at := out.CompletedAt
		w.st.CompletedAt = &at
		w.st.LastCancelError = nil
		if err := w.persist(ctx, false, 0); err != nil {
			return nil, err
		}
		w.upsertStatus(ctx)
		return w.outcome(), nil
	}
}

func (w *taskRun) outcome() *TaskOutcome {
	return &TaskOutcome{Status: w.st.Snapshot.Status, Error: w.st.Snapshot.Error}
}

func (w *taskRun) ref() mcpflow.TaskReference {
	return mcpflow.TaskReference{LocalTaskID: w.in.TaskID, UserID: w.in.UserID, ThreadID: w.in.ThreadID,
		ServerName: w.in.ServerName, RemoteTaskID: w.st.RemoteTaskID, DriverData: w.in.DriverData}
}

// row builds the projection row from the state.
func (w *taskRun) row(ctx workflow.Context) mcpflow.Task {
	in, st := w.in, w.st
	t := mcpflow.Task{
		ID: in.TaskID, UserID: in.UserID, ThreadID: in.ThreadID, RunID: in.RunID, ToolCallID: in.ToolCallID,
		ServerName: in.ServerName, DriverName: in.DriverName, RemoteTaskID: st.RemoteTaskID, TaskName: in.TaskName,
		DriverData: in.DriverData, NotificationStatus: mcpflow.NotificationNone,
		LastPolledAt: st.LastPolledAt, LastPollError: st.LastPollError, PollAttemptCount: st.PollCount,
		ConsecutivePollErrorCount: st.ConsecutiveErrors, CancelRequestedAt: st.CancelRequestedAt,
		CancelAttemptCount: st.CancelAttempts, LastCancelError: st.LastCancelError, CompletedAt: st.CompletedAt,
		CreatedAt: st.CreatedAt, UpdatedAt: workflow.Now(ctx).UTC(),
	}
	t.ApplySnapshot(st.Snapshot, t.UpdatedAt)
	if st.CompletedAt != nil {
		t.CompletedAt = st.CompletedAt
	}
	return t
}

// persist records the task's event and writes the row; attempts 0 retries
// until it succeeds.
func (w *taskRun) persist(ctx workflow.Context, create bool, attempts int32) error {
	if err := w.rowMu.Lock(ctx); err != nil {
		return err
	}
	defer w.rowMu.Unlock()
	return w.persistLocked(ctx, create, attempts)
}

// persistLocked is persist with rowMu held. The notification state comes
// back from the activity: it numbers a changed event's version.
func (w *taskRun) persistLocked(ctx workflow.Context, create bool, attempts int32) error {
	// A local activity: the row write runs inside the workflow task on the
	// worker that runs the workflow (one marker event instead of three
	// events and another task dispatch per status change).
	opts := workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: w.in.Config.Timing.MaxPollBackoff, MaximumAttempts: attempts,
			NonRetryableErrorTypes: []string{ErrTypeDuplicate}},
		Summary: "persist task row",
	}
	in := activities.PersistInput{Task: w.row(ctx), Create: create, Notification: w.st.Notification,
		Degraded: w.in.Config.Timing.TrackingDegraded(w.st.ConsecutiveErrors), InboxOnly: !w.in.Config.Webhook}
	var out activities.PersistOutput
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), a.Persist, in).Get(ctx, &out)
	if err == nil {
		w.st.Notification = out.Notification
	}
	return err
}

// notify delivers the task's events to the webhook, one attempt per
// activity, for as long as the workflow runs: the newest version goes,
// a failure waits its backoff (a busy receiver the poll interval) and a
// newer version starts a fresh budget (mcpflow.Notification). Polling goes
// on meanwhile.
func (w *taskRun) notify(ctx workflow.Context) {
	n := &w.st.Notification
	for {
		_ = workflow.Await(ctx, func() bool { return n.Undelivered() })
		if n.Status == mcpflow.NotificationRetry && n.NextAttemptAt != nil {
			if d := n.NextAttemptAt.Sub(workflow.Now(ctx)); d > 0 {
				w.wake = false
				tctx, stopTimer := workflow.WithCancel(ctx)
				_, _ = workflow.AwaitWithTimeout(tctx, d, func() bool { return w.wake })
				stopTimer()
			}
		}
		// From here until the outcome is stored the run does not continue
		// as new: the attempt's number and result stay in one run.
		w.delivering = true
		if err := w.rowMu.Lock(ctx); err != nil {
			return
		}
		version, attempt := n.Dispatch()
		err := w.persistLocked(ctx, false, 0)
		w.rowMu.Unlock()
		if err != nil {
			return
		}

		opts := workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
			Summary:             fmt.Sprintf("deliver event v%d (attempt %d)", version, attempt),
		}
		var out activities.DeliverOutput
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.Deliver, activities.DeliverInput{
			TaskID: w.in.TaskID, ThreadID: w.in.ThreadID, UserID: w.in.UserID, Version: version, Attempt: attempt,
		}).Get(ctx, &out)

		if err := w.rowMu.Lock(ctx); err != nil {
			return
		}
		now := workflow.Now(ctx).UTC()
		timing := w.in.Config.Timing
		switch {
		case err != nil: // the activity itself failed or timed out; the details are in the history
			n.Failed(DeliveryRunFailedMessage, now, timing.ErrorBackoff)
		case out.Outcome == mcpflow.DeliveryDelivered:
			n.Delivered()
		case out.Outcome == mcpflow.DeliveryBusy:
			n.Busy(out.Error, now.Add(timing.PollInterval))
		case out.Outcome == mcpflow.DeliveryGone:
			n.DeadLetter(out.Error, true)
		default:
			n.Failed(out.Error, now, timing.ErrorBackoff)
		}
		err = w.persistLocked(ctx, false, 0)
		w.rowMu.Unlock()
		w.delivering = false
		if err != nil {
			return
		}
	}
}

// drain waits, once the task has ended, until its last event is delivered
// or dead-lettered. It reports false when the run should continue as new
// first (a receiver that stays busy retries without limit).
func (w *taskRun) drain(ctx workflow.Context) bool {
	if !w.in.Config.Webhook {
		return true // the inbox append delivered synchronously
	}
	long := false
	_ = workflow.Await(ctx, func() bool {
		long = w.long(ctx)
		return w.settled() || long
	})
	return w.settled()
}

// settled reports whether nothing is left to deliver and the last
// attempt's outcome is stored.
func (w *taskRun) settled() bool {
	return !w.st.Notification.Undelivered() && !w.delivering
}

// upsertStatus shows the task's status in the McpTaskStatus search
// attribute and the workflow's current details. The lean shape upserts only
// a status that differs from the attribute's value (each upsert is a
// history event); the details cost no history.
func (w *taskRun) upsertStatus(ctx workflow.Context) {
	status := w.st.Snapshot.Status
	if w.in.Config.Shape < ShapeLean || w.st.SearchStatus != status {
		_ = workflow.UpsertTypedSearchAttributes(ctx, SearchAttrTaskStatus.ValueSet(string(status)))
		if w.in.Config.Shape >= ShapeLean {
			w.st.SearchStatus = status
		}
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** on `%s`: %s", w.in.TaskName, w.in.ServerName, status))
}

// pin routes the remote calls of a stdio task to one worker process.
func (w *taskRun) pin(ctx workflow.Context) error {
	opts := workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, Summary: "pin to the worker owning the stdio session",
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3}}
	var q string
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.Pin).Get(ctx, &q); err != nil {
		return err
	}
	w.st.PinnedQueue = q
	return nil
}

// rePin moves a pinned task to another worker when its worker is gone (the
// pinned activity was never picked up). It reports whether to try again.
func (w *taskRun) rePin(ctx workflow.Context, err error) bool {
	var te *temporal.TimeoutError
	if !w.in.Config.Pinned || !errors.As(err, &te) || te.TimeoutType() != enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
		return false
	}
	w.log.Info("the worker owning this task's session is gone; pinning to another worker", "task_id", w.in.TaskID)
	return w.pin(ctx) == nil
}

// exec runs an activity, on the pinned queue when the task has one.
func (w *taskRun) exec(ctx workflow.Context, summary string, opts workflow.ActivityOptions, fn, result any, args ...any) error {
	return w.start(ctx, summary, opts, fn, args...).Get(ctx, result)
}

func (w *taskRun) start(ctx workflow.Context, summary string, opts workflow.ActivityOptions, fn any, args ...any) workflow.Future {
	opts.Summary = summary
	if opts.StartToCloseTimeout == 0 {
		opts.StartToCloseTimeout = w.in.Config.CallTimeout
	}
	if w.in.Config.Pinned && w.st.PinnedQueue != "" {
		opts.TaskQueue = w.st.PinnedQueue
		opts.ScheduleToStartTimeout = pinnedScheduleToStart
	}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), fn, args...)
}

// submitHeartbeat is the heartbeat timeout of the Submit activity: how
// long a dead worker holds a submit before another attempt starts.
const submitHeartbeat = 10 * time.Second

// submitOptions run Submit with heartbeats and up to three attempts: an
// attempt only reaches the remote server when no earlier one may have (the
// activity checks its "sent" marker), so a worker that dies before sending
// costs a retry, not the submit. A pinned (stdio) submit gets one attempt:
// its queue belonged to the worker that died.
func (w *taskRun) submitOptions() workflow.ActivityOptions {
	attempts := int32(3)
	if w.in.Config.Pinned {
		attempts = 1
	}
	return workflow.ActivityOptions{HeartbeatTimeout: submitHeartbeat, RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: attempts}}
}

func oneAttempt() workflow.ActivityOptions {
	return workflow.ActivityOptions{RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}}
}

// retry is the cancel backoff of spec §2.6: poll_interval × 2^n capped at
// max_poll_backoff; attempts 0 = forever.
func retry(cfg TaskConfig, attempts int32) workflow.ActivityOptions {
	return workflow.ActivityOptions{RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: cfg.Timing.PollInterval, BackoffCoefficient: 2,
		MaximumInterval: cfg.Timing.MaxPollBackoff, MaximumAttempts: attempts,
	}}
}

// pollForever retries the poll activity without limit; the activity sets
// every retry delay itself (NextRetryDelay). The policy's own interval only
// applies to attempts that died without answering (a worker killed
// mid-call, lease_seconds ran out); it stays flat at the poll interval
// because unchanged polls count as attempts too and an exponential policy
// would have grown to the cap after a few of them.
func pollForever(cfg TaskConfig) workflow.ActivityOptions {
	return workflow.ActivityOptions{RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: cfg.Timing.PollInterval, BackoffCoefficient: 1,
		MaximumInterval: cfg.Timing.PollInterval, MaximumAttempts: 0,
		NonRetryableErrorTypes: []string{ErrTypeProtocol},
	}}
}

// retryDelay reports whether err is an activity's retryable failure of
// our own types, and the delay it asked for.
func retryDelay(err error) (time.Duration, bool) {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.NonRetryable() {
		return 0, false
	}
	switch ae.Type() {
	case ErrTypePollUnchanged, ErrTypePollError, ErrTypeCancelPending:
		return ae.NextRetryDelay(), true
	}
	return 0, false
}

// appMessage unwraps an activity error to the application error inside.
func appMessage(err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return temporal.NewNonRetryableApplicationError(ae.Message(), ae.Type(), nil)
	}
	return err
}

// errText is what a user reads of an activity's failure: its application
// error's message (without Temporal's "(type: …, retryable: …)", which
// names internal types and says nothing true of a cancel, retried here).
func errText(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Message()
	}
	return err.Error()
}
