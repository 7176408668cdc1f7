package worker

import "context"

// EnsureApprovalAttributes runs what SubmitApproval runs first.
func EnsureApprovalAttributes(ctx context.Context, c *TaskClient) { c.ensureAttributes(ctx) }
