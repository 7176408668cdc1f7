package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/mcpflow/mcpflow"
	"go.opentelemetry.io/otel/metric"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Application error types (mirrored in workflows/types.go, which cannot be
// imported from here without a cycle).
const (
	errTypeProtocol      = "McpTaskProtocolError"
	errTypeDuplicate     = "DuplicateRemoteTask"
	errTypeSubmit        = "McpTaskSubmitFailed"
	errTypeSubmitUnknown = "McpTaskSubmitOutcomeUnknown"
	errTypePollUnchanged = "McpTaskPollUnchanged"
	errTypePollError     = "McpTaskPollError"
	errTypeCancelPending = "McpTaskCancelNotTerminal"
	errTypePollStale     = "McpTaskPollStale"
	errTypeLimit         = "McpTaskLimit"
)

// Activities are the task workflow's side effects. Workflows reference them
// through a nil *Activities; the worker registers a value wired in cmd/.
type Activities struct {
	Driver  mcpflow.Driver
	Tasks   mcpflow.TaskStore
	Threads mcpflow.ThreadStore
	Events  mcpflow.EventStore // the thread inbox
	// Secrets opens the request secrets a durable submit carries sealed.
	Secrets *mcpflow.SecretBox
	// Webhook receives task events; nil when notifications.webhook_url is
	// not set (the inbox is then the only target).
	Webhook *Webhook
	// PinnedQueue is this worker process's own task queue: activities of a
	// stdio task run there so they reach the subprocess holding its state.
	PinnedQueue string
	Now         func() time.Time
	// Meter records poll and delivery metrics (nil: none).
	Meter metric.Meter
	// Heartbeats records Submit's heartbeats and its sent marker
	// synchronously (the worker's Temporal client). Without it an attempt
	// after the first refuses, as it cannot tell whether the submit was
	// sent.
	Heartbeats Heartbeater
	// Reports signals a poll's changes to its workflow (PollInput.Report;
	// the worker's Temporal client). Without it a reporting poll returns
	// each change as its result instead.
	Reports Signaller
}

// Signaller sends a signal to a workflow; client.Client is one.
type Signaller interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// SignalPollReport is the signal a reporting poll sends its workflow with
// each change it wrote (a PollOutput). Mirrored as workflows.SignalReport.
const SignalPollReport = "report"

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now().UTC()
	}
	return time.Now().UTC()
}

// Pin returns the task queue of the worker process that runs it.
func (a *Activities) Pin(ctx context.Context) (string, error) {
	if a.PinnedQueue == "" {
		return "", temporal.NewNonRetryableApplicationError("this worker has no pinned queue", "NoPinnedQueue", nil)
	}
	return a.PinnedQueue, nil
}

// SubmitInput is the remote submit of a task.
type SubmitInput struct {
	Request mcpflow.SubmitRequest `json:"request"`
	Bounds  mcpflow.Bounds        `json:"bounds"`
	// SealedSecrets are the request's secrets, sealed for Request.LocalTaskID.
	SealedSecrets string `json:"sealed_secrets,omitempty"`
	// Idempotent says the server answers a repeated idempotency key with
	// the task it already started, so an attempt may re-send a submit an
	// earlier one sent.
	Idempotent bool `json:"idempotent,omitempty"`
}

// SubmitOutput is the remote submit's outcome. Problem is set (and the
// snapshot not usable) when the remote side answered but broke the
// contract after creating its task (remote id over 255 characters, a
// payload over the bounds): the workflow must then compensate with a
// cancel of RemoteTaskID.
type SubmitOutput struct {
	RemoteTaskID string            `json:"remote_task_id"`
	Snapshot     mcpflow.Snapshot  `json:"snapshot"`
	DriverData   map[string]string `json:"driver_data"`
	Problem      string            `json:"problem,omitempty"`
	Fingerprint  string            `json:"fingerprint,omitempty"`
}

// Submit calls the remote submit tool. The server's failure answer is a
// non-retryable error (the submit is not sent twice); nothing needs undoing.
// An attempt cut short (worker stopping, attempt timeout) is retryable: the
// next attempt decides from the sent marker below.
//
// A worker can die mid-submit. Submit heartbeats, so the server sees that
// within the heartbeat timeout and schedules another attempt; before the
// tool call is sent it records a "sent" marker as a synchronous heartbeat.
// An attempt that finds the marker refuses with McpTaskSubmitOutcomeUnknown
// (the remote task may exist but is not tracked); one that does not is
// safe, because no earlier attempt reached the remote server. A server
// that deduplicates submits by idempotency key (in.Idempotent) gets the
// submit again instead. A marker that cannot be recorded fails the attempt
// retryably, nothing sent.
func (a *Activities) Submit(ctx context.Context, in SubmitInput) (*SubmitOutput, error) {
	req := in.Request
	if !in.Idempotent && earlierAttemptSent(ctx, a.Heartbeats) {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("The mcpflow worker running this submit stopped after sending it to MCP server '%s' and before the answer came back: the remote task may have started, but it is not tracked", req.ServerName), errTypeSubmitUnknown, nil)
	}
	if in.SealedSecrets != "" {
		if a.Secrets == nil {
			return nil, temporal.NewNonRetryableApplicationError("this worker cannot open request-scoped secrets: set mcp_tasks.secrets_key", errTypeSubmit, nil)
		}
		secrets, err := a.Secrets.Open(req.LocalTaskID, in.SealedSecrets)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), errTypeSubmit, nil)
		}
		req.Secrets = secrets
	}
	beat := startSubmitBeat(ctx, a.Heartbeats)
	sub, err := a.Driver.Submit(mcpflow.WithBeforeSend(ctx, beat.markSent), req)
	beat.stop()
	if err != nil {
		if merr := beat.markerFailed(); merr != nil {
			return nil, merr // retryable: the submit was not sent
		}
		if cerr := ctx.Err(); cerr != nil {
			// This attempt was cut short (the worker is stopping, the
			// attempt timed out or the workflow went away): that is not the
			// server's answer. Retryable, so the next attempt decides from
			// the sent marker (not sent: submit; sent: resend with the
			// idempotency key, or report the submit as untracked).
			return nil, fmt.Errorf("the submit attempt was interrupted: %w", cerr)
		}
		typ := errTypeSubmit
		switch {
		case mcpflow.IsProtocolError(err):
			typ = errTypeProtocol
		case mcpflow.ErrorCode(err) == mcpflow.ETooMany:
			typ = errTypeLimit // a per-user cap refused it before it was sent
		}
		return nil, temporal.NewNonRetryableApplicationError(boundText(err.Error()), typ, nil)
	}
	out := &SubmitOutput{RemoteTaskID: sub.RemoteTaskID, DriverData: mergeData(in.Request.DriverData, sub.DriverData)}
	if err := sub.Validate(); err != nil {
		out.Problem = err.Error()
		return out, nil
	}
	snap, err := sub.Snapshot.Normalize(in.Bounds)
	if err != nil {
		out.Problem = err.Error()
		return out, nil
	}
	out.Snapshot = snap
	out.Fingerprint = Fingerprint(snap)
	return out, nil
}

func mergeData(a, b map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}

// PersistInput writes the task's projection row and records its event.
type PersistInput struct {
	Task   mcpflow.Task `json:"task"`
	Create bool         `json:"create"`
	// Notification is the task's event and delivery state before this write.
	Notification mcpflow.Notification `json:"notification"`
	// Degraded reports whether tracking is degraded (the event says so).
	Degraded bool `json:"degraded"`
	// InboxOnly is set when no webhook is configured: the inbox append is
	// then the delivery.
	InboxOnly bool `json:"inbox_only"`
}

// PersistOutput is the notification state after the write.
type PersistOutput struct {
	Notification mcpflow.Notification `json:"notification"`
}

// Persist records the task's current event ("record event if changed",
// spec §2.5: a new fingerprint is a new version, appended to the thread's
// inbox) and then creates or updates the task row with the notification
// fields. A duplicate remote handle is a non-retryable DuplicateRemoteTask
// error. Retrying Persist is safe: the inbox keeps one entry per version,
// and a create whose row already exists (a worker that died after the
// insert and before the workflow task completed runs it again on replay)
// becomes an update of that row.
func (a *Activities) Persist(ctx context.Context, in PersistInput) (*PersistOutput, error) {
	t := in.Task
	n := in.Notification
	if w, ok := a.Tasks.(mcpflow.TaskEventWriter); ok && !in.Create && t.RowVersion != 0 {
		// A write fenced by the row version it read (the poll activity's):
		// its event goes in with the row, or neither does, so that a
		// refused write leaves no event behind to take the version the
		// workflow's own write will number.
		done, out, err := a.persistFenced(ctx, w, t, n, in)
		if done {
			return out, err
		}
	}
	if err := a.recordEvent(ctx, &t, &n, in.Degraded, in.InboxOnly); err != nil {
		return nil, fmt.Errorf("persist task %s: %w", t.ID, err)
	}
	n.Apply(&t)
	var err error
	if in.Create {
		err = a.Tasks.CreateTask(ctx, &t)
		if mcpflow.ErrorCode(err) == mcpflow.EConflict {
			// Either constraint may report the re-insert (SQLite checks the
			// remote handle first, PostgreSQL the id). A row with this
			// task's id is this task's (ids are the workflow ids); without
			// one the remote handle really is another task's.
			if uerr := a.Tasks.UpdateTask(ctx, &t); mcpflow.ErrorCode(uerr) != mcpflow.ENotFound {
				err = uerr
			}
		}
	} else {
		err = a.Tasks.UpdateTask(ctx, &t)
	}
	if mcpflow.IsDuplicateRemoteTask(err) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), errTypeDuplicate, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("persist task %s: %w", t.ID, err)
	}
	return &PersistOutput{Notification: n}, nil
}

// persistFenced is Persist of a fenced write through w: the event (when
// there is a new one) and the row in one transaction. It reports done =
// false, having written nothing, when the thread is gone or missing (the
// plain path then dead-letters the event and writes the row).
func (a *Activities) persistFenced(ctx context.Context, w mcpflow.TaskEventWriter, t mcpflow.Task, n mcpflow.Notification, in PersistInput) (bool, *PersistOutput, error) {
	ev, err := taskEvent(&t, &n, in.Degraded)
	if err != nil {
		return true, nil, fmt.Errorf("persist task %s: %w", t.ID, err)
	}
	if ev == nil {
		n.Apply(&t)
		if err := a.Tasks.UpdateTask(ctx, &t); err != nil {
			return true, nil, fmt.Errorf("persist task %s: %w", t.ID, err)
		}
		return true, &PersistOutput{Notification: n}, nil
	}
	if in.InboxOnly {
		n.Dispatch()
		n.Delivered()
	}
	n.Apply(&t)
	_, err = w.UpdateTaskWithEvent(ctx, &t, ev)
	switch code := mcpflow.ErrorCode(err); {
	case err == nil:
		return true, &PersistOutput{Notification: n}, nil
	case code == mcpflow.EGone || code == mcpflow.ENotFound:
		return false, nil, nil
	}
	return true, nil, fmt.Errorf("persist task %s: %w", t.ID, err)
}

// taskEvent builds the task's event; a new one (its fingerprint differs
// from the last recorded) gets the next version in n and is returned, nil
// otherwise.
func taskEvent(t *mcpflow.Task, n *mcpflow.Notification, degraded bool) (*mcpflow.ThreadEvent, error) {
	ev, ok := mcpflow.BuildEvent(t.ID, t.TaskName, t.Snapshot(), degraded, t.LastPollError)
	if !ok {
		return nil, nil
	}
	payload, err := ev.CanonicalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	fp, err := ev.Fingerprint()
	if err != nil {
		return nil, err
	}
	version, changed := n.Record(fp)
	if !changed {
		return nil, nil
	}
	return &mcpflow.ThreadEvent{UserID: t.UserID, ThreadID: t.ThreadID, TaskID: t.ID, EventVersion: version, Status: ev.Status, Payload: payload}, nil
}

// recordEvent builds the task's event; a new one gets the next version in
// n and is appended to the inbox. Without a webhook that append delivers
// it; a deleted thread gets nothing and the version is dead-lettered.
func (a *Activities) recordEvent(ctx context.Context, t *mcpflow.Task, n *mcpflow.Notification, degraded, inboxOnly bool) error {
	ev, err := taskEvent(t, n, degraded)
	if err != nil || ev == nil {
		return err
	}
	_, err = a.Events.AppendEvent(ctx, ev)
	switch code := mcpflow.ErrorCode(err); {
	case err == nil:
		if inboxOnly {
			n.Dispatch()
			n.Delivered()
		}
	case code == mcpflow.EGone || code == mcpflow.ENotFound:
		// A delivery in flight finds the thread gone itself and moves on to
		// this version, which then dead-letters the same way.
		if !n.InFlight() {
			n.Dispatch()
			n.DeadLetter(fmt.Sprintf("thread '%s' was deleted; the event was not delivered", t.ThreadID), true)
		}
	default:
		return fmt.Errorf("append event v%d to the inbox: %w", ev.EventVersion, err)
	}
	return nil
}

// PollInput asks for the remote status of a task.
type PollInput struct {
	Ref               mcpflow.TaskReference `json:"ref"`
	Timing            mcpflow.PollTiming    `json:"timing"`
	Bounds            mcpflow.Bounds        `json:"bounds"`
	LastFingerprint   string                `json:"last_fingerprint"`
	ConsecutiveErrors int                   `json:"consecutive_errors"`
	LastPollError     *string               `json:"last_poll_error,omitempty"`
	// Delay is how long the first attempt waits before the first remote
	// call (the workflow's next poll time): the activity asks for it as a
	// retry delay, which Temporal keeps out of the history.
	Delay time.Duration `json:"delay,omitempty"`
	// Row, when set, is the task's row as the workflow would write it now:
	// the activity then writes a changed snapshot itself (row and event,
	// with Notification as the event state before the write), where the
	// poll happens, and returns the new event state. Only for tasks whose
	// events go to the inbox alone (no webhook notifier writes the row).
	Row          *mcpflow.Task        `json:"row,omitempty"`
	Notification mcpflow.Notification `json:"notification"`
	// Report (with Row) keeps the activity polling after a change: it
	// writes the change, signals it to the workflow (SignalPollReport) and
	// polls on as a retry, so a change costs the workflow a signal and a
	// workflow task instead of an activity's completion and a new one. It
	// never completes on its own; the workflow stops it, or closes with it
	// pending once a terminal status was reported. While it runs it is the
	// row's only writer, and it takes the event state and poll count from
	// the row (mcpflow.InboxNotification), so a lost heartbeat or report
	// never numbers an event twice.
	Report bool `json:"report,omitempty"`
}

// PollOutput is a poll result the workflow must apply: a changed snapshot,
// a recovery after errors, a failure (protocol error), or tracking that
// just degraded.
type PollOutput struct {
	Snapshot          *mcpflow.Snapshot `json:"snapshot,omitempty"`
	Fingerprint       string            `json:"fingerprint,omitempty"`
	ConsecutiveErrors int               `json:"consecutive_errors"`
	PollError         *string           `json:"poll_error,omitempty"`
	PolledAt          time.Time         `json:"polled_at"`
	Polls             int               `json:"polls"` // remote calls made, this one included
	// InputQueue is this worker's own queue when the snapshot's question is
	// held in its memory (mcpflow.InputDriver.HoldsQuestion): answers must
	// be delivered here.
	InputQueue string `json:"input_queue,omitempty"`
	// Notification is the event state after the activity wrote the changed
	// snapshot to the row itself (PollInput.Row); nil when it did not.
	Notification *mcpflow.Notification `json:"notification,omitempty"`
	// PollCount is the row's poll_attempt_count after a reported change
	// (PollInput.Report): the total, not this activity's share.
	PollCount int `json:"poll_count,omitempty"`
}

// pollProgress survives between attempts of one Poll activity in its
// heartbeat details (never in history), which are recorded only when it
// changes: errors, and for a reporting poll a written change whose report
// has not reached the workflow yet.
type pollProgress struct {
	Errors     int         `json:"errors"`
	LastError  *string     `json:"last_error,omitempty"`
	Unreported *PollOutput `json:"unreported,omitempty"`
	Idle       int         `json:"idle,omitempty"` // attempts that only retried a report
	// errorsBefore is the error count this attempt started with (not
	// recorded): a recovery must reset the recorded one.
	errorsBefore int
}

// Poll reads the remote status once. While nothing changed it fails with a
// benign error whose NextRetryDelay is the next poll time, so Temporal
// waits without adding history; transient errors are retried the same way
// with capped exponential backoff, forever. It returns (and the workflow
// records) only what changes the task: a new snapshot, a recovery, a
// protocol failure, a new poll error text, or degraded tracking. Delays
// count from when the remote call finished.
func (a *Activities) Poll(ctx context.Context, in PollInput) (*PollOutput, error) {
	report := in.Report && in.Row != nil && a.Reports != nil
	prog, err := a.pollStart(ctx, in, report)
	if err != nil {
		return nil, err
	}
	polls := int(activity.GetInfo(ctx).Attempt) - prog.Idle // remote calls in this execution, this one included
	if in.Delay > 0 {
		if polls == 1 {
			return nil, benignRetry("MCP task poll scheduled", errTypePollUnchanged, in.Delay)
		}
		polls-- // the first attempt only waited
	}
	snap, err := a.Driver.Status(ctx, in.Ref)
	polledAt := a.now()
	outcome := "changed"
	defer func() { a.countPoll(ctx, in.Ref.ServerName, outcome) }()
	if err == nil {
		snap, err = snap.Normalize(in.Bounds)
	}
	if err != nil && mcpflow.IsProtocolError(err) {
		msg := mcpflow.TruncateChars(err.Error(), mcpflow.MaxErrorChars)
		failed := mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: &msg}
		out := &PollOutput{Snapshot: &failed, Fingerprint: Fingerprint(failed), PolledAt: polledAt, Polls: polls}
		if report {
			return a.reportChange(ctx, in, prog, out, true)
		}
		return a.changed(ctx, in, out)
	}
	if err != nil {
		outcome = "error"
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, err // cancelled or timed out attempt: no bookkeeping
		}
		msg := boundText(err.Error())
		return a.pollFailed(ctx, in, prog, report, &PollOutput{PollError: &msg, PolledAt: polledAt, Polls: polls})
	}
	fp := Fingerprint(snap)
	unchanged := fp == in.LastFingerprint
	if !unchanged && report && prog.Errors == 0 && snap.IsPollable() {
		// After its first change a reporting poll compares with the row it
		// wrote: carrying the fingerprint in a heartbeat instead would cost
		// a billed action and a write in Temporal per change.
		unchanged = a.rowHolds(ctx, in.Ref.LocalTaskID, snap)
	}
	if unchanged && prog.Errors == 0 && snap.IsPollable() {
		outcome = "unchanged"
		if report && snap.Message != nil {
			a.writeMessage(ctx, in, *snap.Message, polledAt)
		} else {
			a.touchPolled(ctx, in, polledAt)
		}
		// Nothing to carry to the next attempt (no errors), so no heartbeat:
		// an unchanged poll costs one failed attempt and no history.
		delay, _ := in.Timing.NextPollDelay(snap)
		return nil, benignRetry("MCP task unchanged; next poll scheduled", errTypePollUnchanged, delay)
	}
	out := &PollOutput{Snapshot: &snap, Fingerprint: fp, PolledAt: polledAt, Polls: polls}
	if d, ok := a.Driver.(mcpflow.InputDriver); ok && snap.InputAnswerable && d.HoldsQuestion(in.Ref) {
		out.InputQueue = a.PinnedQueue
	}
	if report {
		return a.reportChange(ctx, in, pollProgress{Idle: prog.Idle, errorsBefore: prog.Errors}, out, true)
	}
	return a.changed(ctx, in, out)
}

// pollStart returns the progress an earlier attempt of this Poll recorded
// (or the workflow's count), after reporting a change whose report did not
// get through (a reporting poll: the attempt then polls nothing if it
// still does not).
func (a *Activities) pollStart(ctx context.Context, in PollInput, report bool) (pollProgress, error) {
	prog := pollProgress{Errors: in.ConsecutiveErrors, LastError: in.LastPollError}
	if activity.HasHeartbeatDetails(ctx) {
		var p pollProgress
		if err := activity.GetHeartbeatDetails(ctx, &p); err == nil {
			prog = p
		}
	}
	if report && prog.Unreported != nil { // written, but its report did not get through
		if err := a.report(ctx, in, prog.Unreported); err != nil {
			prog.Idle++ // this attempt polls nothing
			activity.RecordHeartbeat(ctx, prog)
			return prog, err
		}
		prog.Unreported = nil
		activity.RecordHeartbeat(ctx, prog)
	}
	return prog, nil
}

// pollFailed counts a failed poll (out: its error text, time and calls).
// What the API shows reaches the workflow and is recorded: a new
// last_poll_error text (the first error included, spec §7 scenario 49)
// and the step into degraded tracking. A repeated identical error changes
// nothing visible and only waits its backoff (a reporting poll counts it
// in the row, so a poll stopped now loses none).
func (a *Activities) pollFailed(ctx context.Context, in PollInput, prog pollProgress, report bool, out *PollOutput) (*PollOutput, error) {
	n := prog.Errors
	msg := *out.PollError
	degradedBefore := in.Timing.TrackingDegraded(n)
	prog.Errors = n + 1
	changedText := prog.LastError == nil || *prog.LastError != msg
	prog.LastError = &msg
	out.ConsecutiveErrors = prog.Errors
	visible := changedText || (in.Timing.TrackingDegraded(prog.Errors) && !degradedBefore)
	switch {
	case report:
		return a.reportChange(ctx, in, prog, out, visible)
	case visible:
		return out, nil
	}
	a.touchPolled(ctx, in, out.PolledAt)
	activity.RecordHeartbeat(ctx, prog)
	return nil, benignRetry(msg, errTypePollError, in.Timing.ErrorBackoff(n))
}

// reportChange writes a change a reporting poll found (PollInput.Report),
// signals it to the workflow (unless signal is false: a repeated error
// only counted in the row) and asks for the next attempt: the next poll
// time, the error backoff, or for a terminal status the backoff cap (the
// workflow closes first; should it not, the terminal status is reported
// again). prog is the progress to keep (errors and their last text).
//
// The row is read first: while the poll runs it is the row's only writer,
// so the row's event state and poll count are the truth, whatever an
// earlier attempt's heartbeat or report lost.
func (a *Activities) reportChange(ctx context.Context, in PollInput, prog pollProgress, out *PollOutput, signal bool) (*PollOutput, error) {
	row, err := a.pollRow(ctx, in)
	if err != nil {
		return nil, err
	}
	t := *row // its RowVersion fences the write
	at := out.PolledAt
	t.LastPolledAt = &at
	t.PollAttemptCount = in.Row.PollAttemptCount + out.Polls
	t.UpdatedAt = at
	delay := in.Timing.ErrorBackoff(out.ConsecutiveErrors - 1)
	if out.Snapshot != nil {
		t.ConsecutivePollErrorCount = 0
		t.LastPollError = nil
		t.ApplySnapshot(*out.Snapshot, at)
		delay, _ = in.Timing.NextPollDelay(*out.Snapshot)
		if out.Snapshot.Status.IsTerminal() {
			delay = in.Timing.MaxPollBackoff
		}
	} else {
		t.ConsecutivePollErrorCount = out.ConsecutiveErrors
		t.LastPollError = out.PollError
	}
	po, err := a.Persist(ctx, PersistInput{Task: t, Notification: mcpflow.InboxNotification(row),
		Degraded: in.Timing.TrackingDegraded(t.ConsecutivePollErrorCount), InboxOnly: true})
	if err != nil {
		return nil, err
	}
	out.Notification = &po.Notification
	out.PollCount = t.PollAttemptCount
	if !signal {
		activity.RecordHeartbeat(ctx, prog)
		return nil, benignRetry(*out.PollError, errTypePollError, delay)
	}
	if err := a.report(ctx, in, out); err != nil {
		prog.Unreported = out
		activity.RecordHeartbeat(ctx, prog)
		return nil, err
	}
	if out.Snapshot == nil || prog.errorsBefore > 0 {
		// The error count goes on, or (recovered) starts again from 0.
		activity.RecordHeartbeat(ctx, prog)
	}
	return nil, benignRetry("MCP task change reported; next poll scheduled", errTypePollUnchanged, delay)
}

// benignRetry fails a Poll attempt on purpose: the next attempt runs after
// delay, and Temporal neither records the wait in the history nor logs it
// as a failure.
func benignRetry(msg, typ string, delay time.Duration) error {
	return temporal.NewApplicationErrorWithOptions(msg, typ, temporal.ApplicationErrorOptions{
		NextRetryDelay: delay, Category: temporal.ApplicationErrorCategoryBenign})
}

// rowHolds reports whether the task's row shows snap already (what a
// reporting poll wrote last). snap is compared as the row would hold it
// (encoded and decoded with exact numbers, as the store does), so only a
// visible difference counts; a row that cannot be read counts as
// different (the write that follows reads it again).
func (a *Activities) rowHolds(ctx context.Context, taskID string, snap mcpflow.Snapshot) bool {
	t, err := a.Tasks.GetTask(ctx, taskID)
	if err != nil {
		return false
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return false
	}
	var stored mcpflow.Snapshot
	if err := json.Unmarshal(b, &stored); err != nil {
		return false
	}
	return Fingerprint(stored) == Fingerprint(t.Snapshot())
}

// writeMessage writes a new progress message of an otherwise unchanged
// task to its row (a reporting poll is the row's writer while it runs):
// the API shows it, and Temporal records nothing. A failure only leaves
// the older message; the next poll tries again.
func (a *Activities) writeMessage(ctx context.Context, in PollInput, msg string, polledAt time.Time) {
	t, err := a.pollRow(ctx, in)
	if err != nil {
		return
	}
	if t.StatusMessage != nil && *t.StatusMessage == msg {
		a.touchPolled(ctx, in, polledAt)
		return
	}
	t.StatusMessage = &msg
	t.LastPolledAt = &polledAt
	if err := a.Tasks.UpdateTask(ctx, t); err != nil { // fenced by the version read
		activity.GetLogger(ctx).Debug("could not write the progress message", "task_id", t.ID, "error", err)
	}
}

// touchPolled records a poll that changed nothing in the row's
// last_polled_at (mcpflow.PollRecorder): one column, no event, no
// Temporal history. A failure only leaves the older time.
func (a *Activities) touchPolled(ctx context.Context, in PollInput, at time.Time) {
	pr, ok := a.Tasks.(mcpflow.PollRecorder)
	if !ok {
		return
	}
	if _, err := pr.TouchPolled(ctx, in.Ref.LocalTaskID, at); err != nil {
		activity.GetLogger(ctx).Debug("could not record the poll time", "task_id", in.Ref.LocalTaskID, "error", err)
	}
}

// pollRow reads the task's row for a write of the poll activity (the
// lean and report shapes): the row, whose RowVersion then fences the
// write (UpdateTask writes only if nobody wrote the row since), or a
// stale-poll error when the workflow has moved on without this poll: a
// cancel was requested or the task ended since the poll started (the
// attempt timed out and another one, or the workflow's cancel, took
// over). Such a poll must write nothing: a late write would overwrite
// the cancel.
func (a *Activities) pollRow(ctx context.Context, in PollInput) (*mcpflow.Task, error) {
	row, err := a.Tasks.GetTask(ctx, in.Ref.LocalTaskID)
	if err != nil {
		return nil, fmt.Errorf("read task %s before writing its change: %w", in.Ref.LocalTaskID, err)
	}
	if row.Status.IsTerminal() || (row.CancelRequestedAt != nil && (in.Row == nil || in.Row.CancelRequestedAt == nil)) {
		return nil, temporal.NewApplicationErrorWithOptions(
			fmt.Sprintf("task %s was cancelled or ended while this poll ran: its result is dropped", in.Ref.LocalTaskID),
			errTypePollStale, temporal.ApplicationErrorOptions{NextRetryDelay: in.Timing.PollInterval})
	}
	return row, nil
}

// report signals a written change to the task's workflow (its current run).
// A failure is retried after the poll interval, by the next attempt.
func (a *Activities) report(ctx context.Context, in PollInput, out *PollOutput) error {
	if err := a.Reports.SignalWorkflow(ctx, in.Ref.LocalTaskID, "", SignalPollReport, out); err != nil {
		msg := boundText(fmt.Sprintf("report the change of task %s to its workflow: %s", in.Ref.LocalTaskID, err))
		return temporal.NewApplicationErrorWithOptions(msg, errTypePollError, temporal.ApplicationErrorOptions{
			NextRetryDelay: in.Timing.PollInterval,
		})
	}
	return nil
}

// changed returns a changed snapshot; with PollInput.Row it first writes
// it, as the workflow's row write would after applying out: polled now,
// the poll count grown, no errors, completed now when it ended. A failed
// write is retried (the next attempt polls again and writes what it
// finds; an event version is appended once).
func (a *Activities) changed(ctx context.Context, in PollInput, out *PollOutput) (*PollOutput, error) {
	if in.Row == nil {
		return out, nil
	}
	cur, err := a.pollRow(ctx, in)
	if err != nil {
		return nil, err
	}
	t := *in.Row
	t.RowVersion = cur.RowVersion // written only if nobody wrote the row since
	at := out.PolledAt
	t.LastPolledAt = &at
	t.PollAttemptCount += out.Polls
	t.ConsecutivePollErrorCount = 0
	t.LastPollError = nil
	completed := t.CompletedAt
	if out.Snapshot.Status.IsTerminal() && completed == nil {
		completed = &at
	}
	t.UpdatedAt = at
	t.ApplySnapshot(*out.Snapshot, at)
	if completed != nil {
		t.CompletedAt = completed
	}
	po, err := a.Persist(ctx, PersistInput{Task: t, Notification: in.Notification, InboxOnly: true})
	if err != nil {
		return nil, err
	}
	out.Notification = &po.Notification
	return out, nil
}

// CancelInput asks the remote side to cancel a task.
type CancelInput struct {
	Ref    mcpflow.TaskReference `json:"ref"`
	Bounds mcpflow.Bounds        `json:"bounds"`
}

// CancelOutput is the terminal state the remote side reported.
type CancelOutput struct {
	Snapshot    mcpflow.Snapshot `json:"snapshot"`
	Fingerprint string           `json:"fingerprint"`
	CompletedAt time.Time        `json:"completed_at"`
}

// Cancel calls the remote cancel tool. Any failure, protocol errors and
// non-terminal answers included, is retried by the workflow's retry policy
// (spec §2.6: the cancel path never terminalizes on its own).
func (a *Activities) Cancel(ctx context.Context, in CancelInput) (*CancelOutput, error) {
	snap, err := a.Driver.Cancel(ctx, in.Ref)
	if err == nil {
		snap, err = snap.Normalize(in.Bounds)
	}
	if err != nil {
		return nil, temporal.NewApplicationError(boundText(err.Error()), errTypeCancelPending)
	}
	if !snap.Status.IsTerminal() {
		return nil, temporal.NewApplicationError("MCP task cancellation must return a terminal status", errTypeCancelPending)
	}
	return &CancelOutput{Snapshot: snap, Fingerprint: Fingerprint(snap), CompletedAt: a.now()}, nil
}

// Fingerprint identifies a snapshot's content: equal fingerprints mean
// nothing the user could see changed. Activities compute it (it encodes
// JSON), so workflow code only compares the strings. A completed native
// task's content blocks (Content, ResultStructured) count: the MCP
// endpoint shows them. They are omitted from the JSON when absent, so a
// snapshot without them (every snapshot of an older worker, every
// snapshot that is not completed) keeps the fingerprint it always had.
func Fingerprint(s mcpflow.Snapshot) string {
	s.PollAfterSeconds = nil // a changing hint alone is not news
	s.Message = nil          // nor a progress message: written to the row only (Poll)
	b, err := mcpflow.StrictJSON(s)
	if err != nil {
		b = []byte(fmt.Sprintf("%#v", s))
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func boundText(s string) string { return mcpflow.TruncateChars(s, mcpflow.MaxErrorChars) }

// RowState is a task's tracking state as its row holds it: what a
// reporting poll wrote (PollInput.Report), for the workflow to go on from
// once it stopped that poll.
type RowState struct {
	Snapshot          mcpflow.Snapshot     `json:"snapshot"`
	Fingerprint       string               `json:"fingerprint"`
	Notification      mcpflow.Notification `json:"notification"`
	PollCount         int                  `json:"poll_count"`
	LastPolledAt      *time.Time           `json:"last_polled_at,omitempty"`
	ConsecutiveErrors int                  `json:"consecutive_errors"`
	LastPollError     *string              `json:"last_poll_error,omitempty"`
	CompletedAt       *time.Time           `json:"completed_at,omitempty"`
}

// ReadRow reads the task's tracking state from its row (inbox-only tasks:
// the event state is mcpflow.InboxNotification).
func (a *Activities) ReadRow(ctx context.Context, taskID string) (*RowState, error) {
	t, err := a.Tasks.GetTask(ctx, taskID)
	if err != nil {
		return nil, fmt.Errorf("read task %s: %w", taskID, err)
	}
	snap := t.Snapshot()
	return &RowState{Snapshot: snap, Fingerprint: Fingerprint(snap), Notification: mcpflow.InboxNotification(t),
		PollCount: t.PollAttemptCount, LastPolledAt: t.LastPolledAt, ConsecutiveErrors: t.ConsecutivePollErrorCount,
		LastPollError: t.LastPollError, CompletedAt: t.CompletedAt}, nil
}
