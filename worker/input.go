package worker

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/workflows"
)

// answerWait bounds how long the input route waits for the delivery of an
// answer upstream.
const answerWait = 2 * time.Minute

// answerRaceWait bounds the last wait between retries of an answer the
// workflow refused for want of a question the row already shows (about
// 3 s in all).
const answerRaceWait = 1600 * time.Millisecond

// AnswerInput sends a user's answer to a task's question (the input
// update) and waits until it was delivered upstream. The outcomes a caller
// tells apart (the workflow's, by their error types):
//   - EConflict caused by mcpflow.ErrInputGone: the answer names no open
//     question (the task does not require input now, asks another
//     question, its question went away, or it finished);
//   - EConflict caused by mcpflow.ErrAnswerPending: another answer to the
//     question is being delivered; this one may be sent again;
//   - EConflict caused by mcpflow.ErrTaskCancelling: the task is being
//     cancelled;
//   - EUpstream: the MCP server did not take the answer after the
//     delivery's retries; the question stays open;
//   - EUnavailable when no worker runs or Temporal cannot be reached,
//     ETimeout when the delivery's outcome did not come in time.
func (c *TaskClient) AnswerInput(ctx context.Context, t *mcpflow.Task, ans mcpflow.InputAnswer) error {
	if t.CancelPending() { // (the workflow would say so too, with a worker to ask)
		return &mcpflow.Error{Code: mcpflow.EConflict, Message: mcpflow.TaskCancellingMessage, Err: mcpflow.ErrTaskCancelling}
	}
	ok, err := c.WorkersAvailable(ctx)
	if err != nil {
		return &mcpflow.Error{Code: mcpflow.EUnavailable, Message: "cannot reach Temporal to deliver the answer", Err: err}
	}
	if !ok {
		return mcpflow.Errorf(mcpflow.EUnavailable, "no mcpflow worker is running to deliver the answer; try again when one is")
	}
	ctx, cancel := context.WithTimeout(ctx, answerWait)
	defer cancel()
	err = c.sendAnswer(ctx, t.ID, ans)
	// The row (which said the question is answerable) is written by the
	// poll that found the question, just before the workflow applies it:
	// a refusal for want of a question is retried for a few seconds.
	for wait := 50 * time.Millisecond; errorType(err) == workflows.ErrTypeInputNotRequired && wait <= answerRaceWait; wait *= 2 {
		select {
		case <-ctx.Done():
		case <-time.After(wait):
			err = c.sendAnswer(ctx, t.ID, ans)
		}
	}
	if err == nil {
		return nil
	}
	var nf *serviceerror.NotFound
	var ae *temporal.ApplicationError
	switch {
	case errors.As(err, &nf):
		return &mcpflow.Error{Code: mcpflow.EConflict, Message: "the task already finished", Err: mcpflow.ErrInputGone}
	case errors.As(err, &ae):
		// The validator's refusal or the delivery's outcome: its text is
		// ours (workflows/input.go), its type says which.
		switch ae.Type() {
		case workflows.ErrTypeInputNotRequired, workflows.ErrTypeInputGone, workflows.ErrTypeInputStale:
			return &mcpflow.Error{Code: mcpflow.EConflict, Message: ae.Message(), Err: mcpflow.ErrInputGone}
		case workflows.ErrTypeInputPending:
			return &mcpflow.Error{Code: mcpflow.EConflict, Message: ae.Message(), Err: mcpflow.ErrAnswerPending}
		case workflows.ErrTypeInputCancelling:
			return &mcpflow.Error{Code: mcpflow.EConflict, Message: ae.Message(), Err: mcpflow.ErrTaskCancelling}
		case workflows.ErrTypeInputDeliveryFailed:
			return mcpflow.Errorf(mcpflow.EUpstream, "%s", ae.Message())
		}
		// A type this build does not know (a newer worker's): refused,
		// for a reason the caller cannot take as an ignorable one.
		return &mcpflow.Error{Code: mcpflow.EConflict, Message: ae.Message(), Err: err}
	case ctx.Err() != nil:
		return &mcpflow.Error{Code: mcpflow.ETimeout, Message: "the answer was not delivered in time; the task's detail shows whether it still requires input", Err: err}
	}
	return &mcpflow.Error{Code: mcpflow.EUnavailable, Message: "the answer could not be delivered", Err: err}
}

// sendAnswer sends the input update and waits for its outcome.
func (c *TaskClient) sendAnswer(ctx context.Context, taskID string, ans mcpflow.InputAnswer) error {
	h, err := c.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: taskID, UpdateName: workflows.UpdateInput,
		Args: []any{ans}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	return err
}

// errorType is the type of the application error in err's chain ("" for
// none).
func errorType(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Type()
	}
	return ""
}
