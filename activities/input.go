package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/mcpflow/mcpflow"
)

// Error types of Answer, mirrored in workflows/types.go.
const (
	errTypeInputGone  = "McpTaskInputGone"
	errTypeInputStale = "McpTaskInputStale"
)

// AnswerInput is the Answer activity's input: the task and the user's
// answer to its question.
type AnswerInput struct {
	Ref    mcpflow.TaskReference `json:"ref"`
	Answer mcpflow.InputAnswer   `json:"answer"`
}

// Answer delivers a user's answer to the task's question through the
// driver (mcpflow.InputDriver). A question that is gone, or a driver that
// cannot answer, is a non-retryable failure; other errors are retried.
//
// An answer that names its question (InputAnswer.QuestionID) is checked
// against the task's row right before it goes upstream: an answer for an
// earlier question is refused (McpTaskInputStale, non-retryable) and never
// reaches the server's newer question.
func (a *Activities) Answer(ctx context.Context, in AnswerInput) error {
	d, ok := a.Driver.(mcpflow.InputDriver)
	if !ok {
		return temporal.NewNonRetryableApplicationError("this task's driver cannot deliver answers", errTypeInputGone, nil)
	}
	if in.Answer.QuestionID != 0 && a.Tasks != nil {
		t, err := a.Tasks.GetTask(ctx, in.Ref.LocalTaskID)
		if err != nil {
			return fmt.Errorf("read task %s before delivering its answer: %w", in.Ref.LocalTaskID, err)
		}
		if err := mcpflow.StaleAnswer(t, in.Answer.QuestionID); err != nil {
			return temporal.NewNonRetryableApplicationError(mcpflow.ErrorMessage(err), errTypeInputStale, nil)
		}
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
