package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/mcpflow/mcpflow"
)

// Error types of Answer, mirrored in workflows/types.go.
const (
	errTypeInputGone           = "McpTaskInputGone"
	errTypeInputStale          = "McpTaskInputStale"
	errTypeInputDeliveryFailed = "McpTaskInputDeliveryFailed"
)

// deliveryErrorChars bounds the server's or connection's words quoted in a
// failed delivery's error.
const deliveryErrorChars = 500

// AnswerInput is the Answer activity's input: the task and the user's
// answer to its question.
type AnswerInput struct {
	Ref    mcpflow.TaskReference `json:"ref"`
	Answer mcpflow.InputAnswer   `json:"answer"`
	Bounds mcpflow.Bounds        `json:"bounds"`
}

// AnswerOutput is the task's state right after a partial answer: still
// input_required, with the requests left open. Nil otherwise (the task
// goes on working; the next poll says how).
type AnswerOutput struct {
	Snapshot    mcpflow.Snapshot `json:"snapshot"`
	Fingerprint string           `json:"fingerprint"`
}

// Answer delivers a user's answer to the task's question through the
// driver (mcpflow.InputDriver). A question that is gone, or a driver that
// cannot answer, is a non-retryable failure; other errors
// (McpTaskInputDeliveryFailed, with what the server said) are retried.
//
// An answer that names its question (InputAnswer.QuestionID) is checked
// against the task's row right before it goes upstream: an answer for an
// earlier question is refused (McpTaskInputStale, non-retryable) and never
// reaches the server's newer question.
//
// An answer to some of a native task's input requests (InputAnswer.Responses)
// is followed by a status read: while the task still requires input (the
// other requests), that state is returned, so the task shows the requests
// left open at once rather than working until its next poll.
func (a *Activities) Answer(ctx context.Context, in AnswerInput) (*AnswerOutput, error) {
	err := a.answer(ctx, in)
	if err != nil || len(in.Answer.Responses) == 0 {
		return nil, err
	}
	snap, err := a.Driver.Status(ctx, in.Ref)
	if err == nil {
		snap, err = snap.Normalize(in.Bounds)
	}
	if err != nil || snap.Status != mcpflow.StatusInputRequired {
		return nil, nil // delivered: the polls go on as after any answer
	}
	return &AnswerOutput{Snapshot: snap, Fingerprint: Fingerprint(snap)}, nil
}

func (a *Activities) answer(ctx context.Context, in AnswerInput) error {
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
		// Retried; after the last attempt the question stays open. The
		// text says what the server or the connection said, as a poll
		// error does (last_poll_error).
		return temporal.NewApplicationError("the MCP server did not take the answer: "+
			mcpflow.TruncateChars(strings.TrimSpace(err.Error()), deliveryErrorChars), errTypeInputDeliveryFailed)
	}
	return nil
}
