package workflows

import (
	"fmt"
	"time"

	"github.com/mcpflow/mcpflow/activities"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// track polls until the task ends or is cancelled, in the polling loop of
// the task's history shape (TaskConfig.Shape), chosen here once: each loop
// emits its shape's commands and no other's. The report shape polls as
// the lean one when a webhook is configured (the notifier writes the row
// too, so the poll activity may not). It returns errContinueAsNew when the
// run should continue as new.
func (w *taskRun) track(ctx workflow.Context) (*TaskOutcome, error) {
	w.delay, _ = w.in.Config.Timing.NextPollDelay(w.st.Snapshot)
	if w.st.ConsecutiveErrors > 0 { // a run continued as new keeps its error backoff
		w.delay = w.in.Config.Timing.ErrorBackoff(w.st.ConsecutiveErrors - 1)
	}
	switch {
	case w.in.Config.Shape < ShapeLean:
		return w.trackClassic(ctx)
	case w.in.Config.Shape == ShapeLean || w.in.Config.Webhook:
		return w.trackLean(ctx)
	}
	return w.trackReport(ctx)
}

// trackClassic is the classic shape's loop (Shape 0): a workflow timer
// waits out each delay, the poll activity returns each change, and the
// workflow writes the row.
func (w *taskRun) trackClassic(ctx workflow.Context) (*TaskOutcome, error) {
	for {
		if out, err := w.ahead(ctx); out != nil || err != nil {
			return out, err
		}
		in := w.pollInput()
		if w.delay > 0 {
			wctx, stopTimer := workflow.WithCancel(ctx)
			_, _ = workflow.AwaitWithTimeout(wctx, w.delay, w.interrupted)
			stopTimer()
			if w.interrupted() {
				continue
			}
		}
		if err := w.poll(ctx, in, false); err != nil {
			return nil, err
		}
	}
}

// trackLean is the lean shape's loop: the poll activity waits out the
// delay itself (a retry delay: no timer, no workflow task, no history),
// and without a webhook writes the change it finds to the row (no marker).
func (w *taskRun) trackLean(ctx workflow.Context) (*TaskOutcome, error) {
	for {
		if out, err := w.ahead(ctx); out != nil || err != nil {
			return out, err
		}
		in := w.pollInput()
		in.Delay = w.delay
		if err := w.poll(ctx, in, !w.in.Config.Webhook); err != nil {
			return nil, err
		}
	}
}

// trackReport is the report shape's loop (no webhook): one poll activity
// runs across changes, writes each to the row, signals it (takeReports)
// and polls on. Only the terminal status (the run closes with the poll
// pending: nothing is left for it to do), a cancel, an answer or a long
// history ends the wait; a stopped poll's row is read back (adoptRow).
func (w *taskRun) trackReport(ctx workflow.Context) (*TaskOutcome, error) {
	for {
		if out, err := w.ahead(ctx); out != nil || err != nil {
			return out, err
		}
		in := w.pollInput()
		in.Delay, in.Report = w.delay, true
		opts := w.writingPoll(ctx, &in)
		pctx, stopPoll := workflow.WithCancel(ctx)
		fut := w.start(pctx, "poll status", opts, a.Poll, in)
		long, reported := false, false
		for {
			// Like the other shapes, a run continues as new only after a
			// change grew its history.
			_ = workflow.Await(ctx, func() bool {
				long = reported && w.long(ctx)
				return fut.IsReady() || w.interrupted() || long || w.reports.Len() > 0
			})
			if !w.takeReports(ctx) {
				break
			}
			reported = true
			if w.st.Snapshot.Status.IsTerminal() {
				return w.outcome(), nil
			}
		}
		if w.interrupted() || long {
			stopPoll()
			w.keepWrite(ctx, fut)
			if err := w.adoptRow(ctx); err != nil {
				return nil, err
			}
			if long && !w.interrupted() {
				return nil, errContinueAsNew
			}
			continue
		}
		var out activities.PollOutput
		err := fut.Get(ctx, &out)
		stopPoll()
		// Ended without completing (a capped retry, its worker gone): go on
		// from what it wrote.
		if err != nil {
			if aerr := w.adoptRow(ctx); aerr != nil {
				return nil, aerr
			}
		}
		if err := w.polled(ctx, out, err); err != nil {
			return nil, err
		}
	}
}

// ahead takes the steps every loop takes before a poll: a task that ended
// returns its outcome, a requested cancel is carried out, an accepted
// answer is delivered (and the next poll starts at once). It returns nil,
// nil when the loop should poll.
func (w *taskRun) ahead(ctx workflow.Context) (*TaskOutcome, error) {
	for {
		switch {
		case w.st.Snapshot.Status.IsTerminal():
			return w.outcome(), nil
		case w.cancelled:
			return w.cancel(ctx)
		case !w.answerDue():
			return nil, nil
		}
		if err := w.deliverAnswer(ctx); err != nil {
			return nil, err
		}
		w.delay = 0
	}
}

// interrupted reports a cancel request or an answer waiting for delivery:
// either ends the wait for a poll, whose result is then discarded.
func (w *taskRun) interrupted() bool { return w.cancelled || w.answerDue() }

// pollInput is the next poll's input.
func (w *taskRun) pollInput() activities.PollInput {
	cfg := w.in.Config
	return activities.PollInput{Ref: w.ref(), Timing: cfg.Timing, Bounds: cfg.Bounds, LastFingerprint: w.st.Fingerprint,
		ConsecutiveErrors: w.st.ConsecutiveErrors, LastPollError: w.st.LastPollError}
}

// poll runs a poll activity until it finishes, and applies its result
// (polled), or until the task is interrupted: then it is stopped. writes
// lets the activity write a change to the row itself (writingPoll).
func (w *taskRun) poll(ctx workflow.Context, in activities.PollInput, writes bool) error {
	opts := pollForever(w.in.Config)
	if writes {
		opts = w.writingPoll(ctx, &in)
	}
	pctx, stopPoll := workflow.WithCancel(ctx)
	fut := w.start(pctx, "poll status", opts, a.Poll, in)
	_ = workflow.Await(ctx, func() bool { return fut.IsReady() || w.interrupted() })
	if w.interrupted() {
		stopPoll()
		if writes {
			w.keepWrite(ctx, fut)
		}
		return nil
	}
	var out activities.PollOutput
	err := fut.Get(ctx, &out)
	stopPoll()
	return w.polled(ctx, out, err)
}

// writingPoll has the poll activity write a change to the row itself, from
// the row as the workflow would write it now, and returns its options: a
// poll stopped by a cancel or an answer is waited for (keepWrite), so that
// a write it made is known before the workflow writes.
func (w *taskRun) writingPoll(ctx workflow.Context, in *activities.PollInput) workflow.ActivityOptions {
	row := w.row(ctx)
	in.Row, in.Notification = &row, w.st.Notification
	opts := pollForever(w.in.Config)
	opts.WaitForCancellation = true
	return opts
}

// keepWrite waits for a stopped writing poll. If it wrote before it
// stopped, the row and event state are its: the workflow's next write
// goes on from them.
func (w *taskRun) keepWrite(ctx workflow.Context, fut workflow.Future) {
	var out activities.PollOutput
	if fut.Get(ctx, &out) == nil && out.Notification != nil {
		w.apply(out)
	}
}

// polled applies a finished poll and sets the next one's delay. A failed
// poll is re-pinned or started afresh; a result is written (unless the
// activity wrote it) and shown. It returns errContinueAsNew when the
// history grew long.
func (w *taskRun) polled(ctx workflow.Context, out activities.PollOutput, err error) error {
	if err != nil {
		if w.rePin(ctx, err) {
			w.delay = 0
			return nil
		}
		// The retry policy is unlimited, so this only happens where
		// attempts are capped (the test environment caps them at 10):
		// start a fresh poll after the delay the activity asked for.
		if d, ok := retryDelay(err); ok {
			w.delay = d
			return nil
		}
		return fmt.Errorf("poll MCP task: %w", err)
	}
	w.apply(out)
	if out.Notification == nil { // the activity did not write the row
		if err := w.persist(ctx, false, 0); err != nil {
			return err
		}
	}
	w.upsertStatus(ctx)
	w.delay = 0
	if out.Snapshot != nil && out.ConsecutiveErrors == 0 {
		w.delay, _ = w.in.Config.Timing.NextPollDelay(w.st.Snapshot)
	} else if out.PollError != nil {
		w.delay = w.in.Config.Timing.ErrorBackoff(out.ConsecutiveErrors - 1)
	}
	if !w.st.Snapshot.Status.IsTerminal() && !w.cancelled && w.long(ctx) {
		return errContinueAsNew
	}
	return nil
}

// takeReports applies the changes a reporting poll signalled, in order,
// and reports whether there were any. The activity wrote each one to the
// row already.
func (w *taskRun) takeReports(ctx workflow.Context) bool {
	took := false
	for {
		var out activities.PollOutput
		if !w.reports.ReceiveAsync(&out) {
			return took
		}
		took = true
		w.apply(out)
		w.st.PollCount = out.PollCount
		w.upsertStatus(ctx)
	}
}

// adoptRow takes what a stopped reporting poll wrote: its reports, then
// the row itself, which also holds a write whose report never arrived (a
// local activity: one marker, only when a poll is stopped).
func (w *taskRun) adoptRow(ctx workflow.Context) error {
	w.takeReports(ctx)
	opts := workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: w.in.Config.Timing.MaxPollBackoff},
		Summary: "read the task row the poll wrote",
	}
	var rs activities.RowState
	if err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), a.ReadRow, w.in.TaskID).Get(ctx, &rs); err != nil {
		return err
	}
	if rs.Fingerprint != w.st.Fingerprint { // the same content keeps its poll hint
		w.st.Snapshot, w.st.Fingerprint = rs.Snapshot, rs.Fingerprint
	}
	w.st.Notification = rs.Notification
	w.st.PollCount = rs.PollCount
	w.st.LastPolledAt = rs.LastPolledAt
	w.st.ConsecutiveErrors = rs.ConsecutiveErrors
	w.st.LastPollError = rs.LastPollError
	if rs.CompletedAt != nil {
		w.st.CompletedAt = rs.CompletedAt
	}
	w.upsertStatus(ctx)
	return nil
}
