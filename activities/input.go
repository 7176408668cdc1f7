package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/mcpflow/mcpflow"
)

// errTypeInputGone mirrors workflows.ErrTypeInputGone.
const errTypeInputGone = "McpTaskInputGone"

// AnswerInput is the Answer activity's input: the task and the user's
// answer to its question.
type AnswerInput struct {
	Ref    mcpflow.TaskReference `json:"ref"`
	Answer mcpflow.InputAnswer   `json:"answer"`
}

// Answer delivers a user's answer to the task's question through the
// driver (mcpflow.InputDriver). A question that is gone, or a driver that
// cannot answer, is a non-retryable failure; other errors are retried.
func (a *Activities) Answer(ctx context.Context, in AnswerInput) error {
	d, ok := a.Driver.(mcpflow.InputDriver)
	if !ok {
		return temporal.NewNonRetryableApplicationError("this task's driver cannot deliver answers", errTypeInputGone, nil)
	}
	err := d.Answer(ctx, in.Ref, in.Answer)
	if errors.Is(err, mcpflow.ErrInputGone) {
		return temporal.NewNonRetryableApplicationError(mcpflow.ErrInputGone.Error(), errTypeInputGone, nil)
	}
	if err != nil {
		return temporal.NewApplicationError(mcpflow.ErrorMessage(err), "McpTaskInputDeliveryFailed")
	}
	return nil
}
