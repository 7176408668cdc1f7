package workflows

import (
	"errors"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// InputNotRequiredMessage is the input update's refusal while the workflow
// does not know of an answerable question. The lean shape's poll activity
// writes the row just before the workflow applies the same change, so a
// caller that read an answerable question from the row may send the update
// again shortly (worker.TaskClient.AnswerInput does).
const InputNotRequiredMessage = "the task does not require input that mcpflow can deliver"

// Rejections of the input update (the API answers them with 409).
var (
	errInputNotRequired = errors.New(InputNotRequiredMessage)
	errInputPending     = errors.New("an answer to this question is already being delivered")
	errInputCancelling  = errors.New("the task is being cancelled")
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
// else where the task's calls run. A delivered answer moves the task back to
// working (the server resumes; the next poll says how it goes); a question
// that is gone is no longer answerable. The update completes with the
// outcome either way.
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
	switch {
	case err == nil && out != nil && out.Snapshot.Status == mcpflow.StatusInputRequired:
		// Some of the server's requests answered: the others stay open.
		w.st.Snapshot, w.st.Fingerprint = out.Snapshot, out.Fingerprint
	case err == nil:
		w.st.Snapshot = mcpflow.Snapshot{Status: mcpflow.StatusWorking}
		w.st.Fingerprint = ""
	case errors.As(err, &ae) && ae.Type() == ErrTypeInputStale:
		// An answer for an earlier question: refused, and the current
		// question stays open. (The same commands follow as in the other
		// cases, so histories recorded before this case replay.)
		err = errors.New(ae.Message())
	default:
		// Gone, or the worker that held it never picked the delivery up:
		// the question cannot be answered any more; polling goes on.
		w.st.Snapshot.InputAnswerable = false
		w.st.Fingerprint = ""
		err = errors.New(appMessage(err).Error())
	}
	if ae == nil || ae.Type() != ErrTypeInputStale {
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
