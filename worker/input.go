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
// update) and waits until it was delivered upstream. EConflict when the
// workflow refuses it (the task does not require input now, another answer
// is on its way, the question is gone, the task ended); EUnavailable when no
// worker runs or Temporal cannot be reached.
func (c *TaskClient) AnswerInput(ctx context.Context, t *mcpflow.Task, ans mcpflow.InputAnswer) error {
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
	for wait := 50 * time.Millisecond; isInputNotRequired(err) && wait <= answerRaceWait; wait *= 2 {
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
		return mcpflow.Errorf(mcpflow.EConflict, "the task already finished")
	case errors.As(err, &ae):
		// The validator's refusal or the delivery's failure: its text is
		// ours (workflows/input.go).
		return mcpflow.Errorf(mcpflow.EConflict, "%s", ae.Message())
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

// isInputNotRequired reports the validator's refusal for want of an
// answerable question.
func isInputNotRequired(err error) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Message() == workflows.InputNotRequiredMessage
}
