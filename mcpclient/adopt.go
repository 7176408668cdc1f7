package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpclient/route"
	"github.com/mcpflow/mcpflow/mcpclient/session"
	"github.com/mcpflow/mcpflow/mcpclient/taskdriver"
)

// Cancelling a remote task that nothing tracks: attempts, the wait before
// the second (doubling after), and the bound of the whole, on a context of
// its own (the caller may be gone).
const (
	untrackedCancelAttempts = 3
	untrackedCancelBackoff  = 500 * time.Millisecond
	untrackedCancelBudget   = time.Minute
)

// adopt tracks a task the server answered an ordinary call with (2026-07-28,
// resultType "task") as a durable task run by the native driver: the call
// answers the task's handle, as a submit wrapper's does (the submitter
// marks it ToolResult.Adopted). When the durable task does not take the
// remote task over (no task runtime, the running-task cap, Temporal or its
// workers unavailable, the server's configuration changed, any other
// refusal) the remote task would run on untracked, and the caller's retry
// would start it again: it is cancelled upstream (tasks/cancel, retried),
// and the refusal says so, or that cancelling failed. A remote task another
// durable task tracks already (a duplicate handle) is left alone, and so is
// one whose caller, with an idempotency key, went away while its submit ran.
// A retry with an idempotency key calls the tool again: the remote task that
// call started is cancelled, and the retry answers the task of the first.
func (r *Runtime) adopt(ctx context.Context, call mcpflow.ToolCall, e *toolEntry, ta *session.TaskAnswer) (*mcpflow.ToolResult, error) {
	r.mu.Lock()
	sub := r.submitter
	r.mu.Unlock()
	if sub == nil {
		note := r.cancelUntracked(ctx, e, call, ta)
		return ToolError(fmt.Sprintf("MCP server '%s' answered this call with a long-running task, which mcpflow tracks only with its durable task runtime (mcp_tasks.enabled). %s", e.server.Name, note)), nil
	}
	ts := config.TaskToolset{Name: e.tool.Name, SubmitTool: e.tool.OriginalName, Native: true, Adopt: ta.TaskID}
	res, err := sub(ctx, call, e.tool, ts)
	if (err == nil && res != nil && res.Adopted) || mcpflow.IsDuplicateRemoteTask(err) {
		return res, err
	}
	if err != nil && call.IdempotencyKey != "" && ctx.Err() != nil {
		// The caller went away with its submit under way: its workflow
		// adopts the remote task, and a retry with the key answers it.
		return res, err
	}
	note := r.cancelUntracked(ctx, e, call, ta)
	if err != nil {
		return nil, &mcpflow.Error{Code: mcpflow.ErrorCode(err), Message: mcpflow.ErrorMessage(err) + " " + note, Err: err}
	}
	if res == nil || !res.IsError {
		// A handle of another task (nothing refused): ours is not it.
		return res, nil
	}
	return ToolError(strings.TrimSpace(resultTexts(res) + " " + note)), nil
}

// cancelUntracked cancels a remote task nobody will track, on a context of
// its own (the caller may be gone) that keeps the call's values (the
// caller's token, for a server whose credential is exchanged per caller):
// tasks/cancel on the session the call went to, until the task is terminal
// or gone, up to untrackedCancelAttempts times. It returns the sentence
// that tells the caller the outcome.
func (r *Runtime) cancelUntracked(ctx context.Context, e *toolEntry, call mcpflow.ToolCall, ta *session.TaskAnswer) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), untrackedCancelBudget)
	defer cancel()
	d := &taskdriver.Native{Run: func(ctx context.Context, _, userID, threadID string, op route.Op) error {
		return r.run(ctx, e.server, e.config, userID, threadID, op)
	}}
	ref := mcpflow.TaskReference{ServerName: e.server.Name, UserID: call.UserID, ThreadID: call.ThreadID, RemoteTaskID: ta.TaskID}
	var err error
	wait := untrackedCancelBackoff
	for attempt := 0; attempt < untrackedCancelAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(wait):
				wait *= 2
			case <-ctx.Done():
			}
		}
		if _, err = d.Cancel(ctx, ref); err == nil || mcpflow.IsProtocolError(err) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		r.log.Warn("could not cancel a remote task mcpflow does not track", "server", e.server.Name, "attempts", untrackedCancelAttempts, "error", err)
		return fmt.Sprintf("The task MCP server '%s' started for this call could not be cancelled (tasks/cancel: %s): it may still be running there.",
			e.server.Name, mcpflow.TruncateChars(mcpflow.ErrorMessage(err), 300))
	}
	return fmt.Sprintf("The task MCP server '%s' started for this call was cancelled there (tasks/cancel).", e.server.Name)
}

// resultTexts joins the text blocks of a result's content.
func resultTexts(res *mcpflow.ToolResult) string {
	var texts []string
	for _, raw := range res.Content {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &b) == nil && b.Type == "text" && b.Text != "" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}
