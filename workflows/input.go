package workflows

import (
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
)

// Refusals of the input update by its validator, told apart by their
// types (worker.TaskClient.AnswerInput maps them). ErrTypeInputNotRequired
// while the workflow does not know of an answerable question: the lean
// shape's poll activity writes the row just before the workflow applies
// the same change, so a caller that read an answerable question from the
// row may send the update again shortly (AnswerInput does).
var (
	errInputNotRequired = temporal.NewApplicationError("the task does not require input that mcpflow can deliver", ErrTypeInputNotRequired)
	errInputPending     = temporal.NewApplicationError("an answer to this question is already being delivered: "+
		"send yours again shortly (it is delivered if that delivery fails)", ErrTypeInputPending)
	errInputCancelling = temporal.NewApplicationError(mcpflow.TaskCancellingMessage, ErrTypeInputCancelling)
)

// pendingAnswer is an accepted answer on its way upstream.
type pendingAnswer struct {
	answer mcpflow.InputAnswer
	done   bool
	err    error
}

// setInputHandler registers the input update: a user's answer to the
// task's question. Its validator admits an answer only while the task
// requires input that its driver can deliver and no other answer is on its
// way; the tracking loop delivers it (answerDue) and the update completes
// with the delivery's outcome.
//
// Replay: the handler adds no command until an input update arrives, so
// histories recorded before it existed replay unchanged.
func (w *taskRun) setInputHandler(ctx workflow.Context) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateInput,
		func(ctx workflow.Context, ans mcpflow.InputAnswer) error {
			p := &pendingAnswer{answer: ans}
			w.answer = p
			if err := workflow.Await(ctx, func() bool { return p.done }); err != nil {
				return err
			}
			return p.err
		},
		workflow.UpdateHandlerOptions{Validator: func(ans mcpflow.InputAnswer) error {
			switch {
			case w.cancelled:
				return errInputCancelling
			case w.st.Snapshot.Status != mcpflow.StatusInputRequired || !w.st.Snapshot.InputAnswerable:
				return errInputNotRequired
			case w.answer != nil:
				return errInputPending
			}
			return nil
		}})
}

// answerDue reports whether an accepted answer waits for delivery.
func (w *taskRun) answerDue() bool { return w.answer != nil && !w.answer.done }

// deliverAnswer runs the driver's answer delivery: on the worker that holds
// the question when the driver keeps it in process memory (st.InputQueue),
// else where the task's calls run. The update completes with the outcome,
// typed for its caller:
//   - delivered: the task moves back to working (the server resumes; the
//     next poll says how it goes), or shows the requests left open;
//   - ErrTypeInputStale: an answer for an earlier question, refused right
//     before it went upstream; the current question stays open;
//   - ErrTypeInputGone: the question is gone (upstream, or with the worker
//     that held it): it is no longer answerable;
//   - ErrTypeInputDeliveryFailed: the server did not take the answer after
//     the delivery's retries: the question stays open and answerable, so a
//     later answer can be delivered.
func (w *taskRun) deliverAnswer(ctx workflow.Context) error {
	p := w.answer
	opts := workflow.ActivityOptions{RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3,
		NonRetryableErrorTypes: []string{ErrTypeInputGone, ErrTypeInputStale}}}
	if w.st.InputQueue != "" {
		opts.TaskQueue = w.st.InputQueue
		opts.ScheduleToStartTimeout = pinnedScheduleToStart
	}
	// Replay: histories recorded before Answer returned anything have no
	// result, which decodes as nil: the same state and commands as then.
	var out *activities.AnswerOutput
	err := w.exec(ctx, "deliver answer to the task's question", opts, a.Answer, &out,
		activities.AnswerInput{Ref: w.ref(), Answer: p.answer, Bounds: w.in.Config.Bounds})
	var ae *temporal.ApplicationError
	stale := errors.As(err, &ae) && ae.Type() == ErrTypeInputStale
	switch {
	case err == nil && out != nil && out.Snapshot.Status == mcpflow.StatusInputRequired:
		// Some of the server's requests answered: the others stay open.
		w.st.Snapshot, w.st.Fingerprint = out.Snapshot, out.Fingerprint
	case err == nil:
		w.st.Snapshot = mcpflow.Snapshot{Status: mcpflow.StatusWorking}
		w.st.Fingerprint = ""
	case stale:
		// An answer for an earlier question: refused, and the current
		// question stays open. (The same commands follow as in the other
		// cases, so histories recorded before this case replay.)
		err = temporal.NewApplicationError(ae.Message(), ErrTypeInputStale)
	case !answerGone(err) && workflow.GetVersion(ctx, versionKeepQuestionOnFailure, workflow.DefaultVersion, 1) >= 1:
		// The server did not take the answer: nothing changed, the
		// question stays open (and where it is held) for the next answer.
		p.err, p.done = deliveryFailed(err), true
		w.answer = nil
		return nil
	case answerGone(err):
		// Gone, or the worker that held it never picked the delivery up:
		// the question cannot be answered any more; polling goes on.
		w.st.Snapshot.InputAnswerable = false
		w.st.Fingerprint = ""
		err = temporal.NewApplicationError(goneMessage(err), ErrTypeInputGone)
	default:
		// A failed delivery in a run recorded before
		// versionKeepQuestionOnFailure: it closed the question as a gone
		// one did.
		w.st.Snapshot.InputAnswerable = false
		w.st.Fingerprint = ""
		err = deliveryFailed(err)
	}
	if !stale {
		w.st.InputQueue = "" // the question was answered or is gone
	}
	p.err, p.done = err, true
	w.answer = nil
	if perr := w.persist(ctx, false, 0); perr != nil {
		return perr
	}
	w.upsertStatus(ctx)
	return nil
}

// versionKeepQuestionOnFailure is the change id (workflow.GetVersion) of
// a failed delivery that keeps the question open: runs recorded before it
// made the question unanswerable (and wrote the row) after any failure.
const versionKeepQuestionOnFailure = "answer-delivery-failure-keeps-question"

// answerGone reports a delivery's failure that means the question is gone:
// the driver said so, or the worker that held the question in memory did
// not pick the delivery up.
func answerGone(err error) bool {
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		return te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START
	}
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == ErrTypeInputGone
}

// goneMessage is the update's error text for a gone question.
func goneMessage(err error) string {
	var te *temporal.TimeoutError
	var ae *temporal.ApplicationError
	if !errors.As(err, &te) && errors.As(err, &ae) {
		return ae.Message()
	}
	return "the worker that held the task's question is gone: the question can no longer be answered"
}

// deliveryFailed is the update's error for an answer the server did not
// take: the activity's text (what the server or the connection said), or
// why the delivery did not finish.
func deliveryFailed(err error) error {
	msg := "the answer's delivery to the MCP server did not finish in time"
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Message() != "" {
		msg = ae.Message()
	}
	return temporal.NewApplicationError(msg+"; the question is still open: answer it again", ErrTypeInputDeliveryFailed)
}

// versionSettleAnswer is the change id of settleAnswer (workflow.GetVersion).
const versionSettleAnswer = "settle-answer-before-continue-as-new"

// settleAnswer finishes an answer accepted while the run decided to
// continue as new, before it waits for its handlers: the answer's update
// waits for the tracking loop, which has ended, so it would wait forever
// (and the run with it). The answer is delivered, or refused when the task
// is being cancelled. Versioned: a run recorded before this existed (one
// that hung here) replays as it ran.
func (w *taskRun) settleAnswer(ctx workflow.Context) error {
	if !w.answerDue() || workflow.GetVersion(ctx, versionSettleAnswer, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	if w.cancelled {
		p := w.answer
		p.err, p.done = errInputCancelling, true
		w.answer = nil
		return nil
	}
	return w.deliverAnswer(ctx)
}
