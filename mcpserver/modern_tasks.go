package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
)

// The Tasks extension (SEP-2663) of 2026-07-28, on the same rows and
// workflows as 2025-11-25's MCP Tasks: a durable tool's tools/call answers
// resultType "task" once the row is stored; tasks/get shows the status,
// the question as inputRequests, then the result; tasks/update delivers an
// answer before it acknowledges; tasks/cancel signals and acknowledges.

// questionKey is the inputRequests key of a task's question: unique over
// the task's life, as its question number only grows.
func questionKey(t *mcpflow.Task) string {
	return "mcpflow-question-" + strconv.Itoa(t.QuestionSeq)
}

// taskExt is a task as the extension shows it: the Task fields, and with
// detail the DetailedTask fields of its status.
func (s *Server) taskExt(t *mcpflow.Task, detail bool) map[string]any {
	status := mcpStatus(t.Status)
	if toolError(t) {
		// The extension's way to end with a tool error: completed, with
		// the isError result ("failed" is a failed request, with an error).
		status = mcp.TaskStatusCompleted
	}
	out := map[string]any{"taskId": t.ID, "status": status, "createdAt": isoTime(t.CreatedAt),
		"lastUpdatedAt": isoTime(t.UpdatedAt), "ttlMs": nil}
	if msg := s.withLink(statusMessage(t.Status, t.Error, t.InputRequired, t.CancelPending(), t.LastCancelError, t.StatusMessage), t.ID); msg != "" {
		out["statusMessage"] = msg
	}
	if !t.Status.IsTerminal() {
		out["pollIntervalMs"] = s.opts.PollInterval.Milliseconds()
	}
	if !detail {
		return out
	}
	switch t.Status {
	case mcpflow.StatusInputRequired:
		if all, ok := t.InputRequired[mcpflow.InputRequestsKey].(map[string]any); ok && len(all) > 0 && t.Answerable() && s.opts.AnswerInput != nil {
			// A native task's requests, as its server keyed them.
			out["inputRequests"] = all
		} else if t.Answerable() && s.opts.AnswerInput != nil {
			out["inputRequests"] = map[string]any{questionKey(t): map[string]any{
				"method": string(mcp.MethodElicitationCreate),
				"params": map[string]any{"mode": "form", "message": inputQuestion(t.InputRequired), "requestedSchema": requestedSchema(t)},
			}}
		}
	case mcpflow.StatusCompleted:
		res := s.taskResultOf(t)
		res.Meta = nil // the 2025 related-task key has no place here
		out["result"] = s.modernResult(res)
	case mcpflow.StatusFailed:
		if toolError(t) {
			res := s.taskResultOf(t)
			res.Meta = nil
			out["result"] = s.modernResult(res)
			break
		}
		out["error"] = rpcError{Code: mcp.INTERNAL_ERROR, Message: orText(t.Error, "Task failed.")}
	}
	return out
}

// toolError reports a failed task whose failure is its tool's error result
// (a native task's, kept with its blocks).
func toolError(t *mcpflow.Task) bool {
	if t.Status != mcpflow.StatusFailed {
		return false
	}
	_, ok := upstreamBlocks(t.Content)
	return ok
}

// requestedSchema is the schema of a task's question (an empty object
// schema when it has none).
func requestedSchema(t *mcpflow.Task) any {
	if schema, ok := t.InputRequired["requested_schema"].(map[string]any); ok {
		return schema
	}
	return map[string]any{"type": "object", "properties": map[string]any{}}
}

// createTaskResultExt is createTaskResult for the extension; a submit that
// started no task is the tool's error result.
func (c *call) createTaskResultExt(ctx context.Context, res *mcpflow.ToolResult) (any, *rpcError) {
	if res.IsError {
		out := callToolResult{Content: res.Content, StructuredContent: res.StructuredContent, IsError: true}
		if out.Content == nil {
			out.Content = []json.RawMessage{}
		}
		return out, nil
	}
	t, _, rerr := c.submittedTask(ctx, res)
	if rerr != nil {
		return nil, rerr
	}
	out := c.s.taskExt(t, false)
	out["resultType"] = resultTask
	return out, nil
}

func (c *call) getTaskExt(ctx context.Context) (any, *rpcError) {
	t, rerr := c.paramTask(ctx)
	if rerr != nil {
		return nil, rerr
	}
	return c.s.taskExt(t, true), nil
}

// updateTaskExt delivers the answers of tasks/update: the one to the
// task's current question goes to its workflow and reaches the server
// before the acknowledgement; keys that name no open question (an earlier
// one, or one never asked) are ignored, as the extension says.
func (c *call) updateTaskExt(ctx context.Context) (any, *rpcError) {
	var responses map[string]json.RawMessage
	if raw := c.msg.Params.InputResponses; c.msg.paramsErr == nil && !isNull(raw) && json.Unmarshal(raw, &responses) != nil {
		return nil, invalidParams("invalid params for %s: inputResponses must be an object", c.msg.Method)
	}
	t, rerr := c.paramTask(ctx)
	if rerr != nil {
		return nil, rerr
	}
	if t.Status != mcpflow.StatusInputRequired || !t.InputAnswerable || c.s.opts.AnswerInput == nil {
		return struct{}{}, nil
	}
	if all, ok := t.InputRequired[mcpflow.InputRequestsKey].(map[string]any); ok && len(all) > 0 {
		return c.updateRequests(ctx, t, all, responses)
	}
	raw, ok := responses[questionKey(t)]
	if !ok {
		return struct{}{}, nil
	}
	var res struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		return nil, invalidParams("inputResponses[%q] must be an elicitation result {action, content?}", questionKey(t))
	}
	ans := mcpflow.InputAnswer{Action: res.Action, Content: res.Content, QuestionID: t.QuestionSeq}
	if err := ans.Validate(t.InputRequired); err != nil {
		return nil, invalidParams("inputResponses[%q]: %s", questionKey(t), mcpflow.ErrorMessage(err))
	}
	if err := c.s.opts.AnswerInput(c.origin(ctx), t, ans); err != nil {
		return c.updateFailed(err)
	}
	return struct{}{}, nil
}

// updateFailed answers an undelivered answer: acknowledged when it is for
// no open question (as the extension says), else answerFailure's error.
func (c *call) updateFailed(err error) (any, *rpcError) {
	if errors.Is(err, mcpflow.ErrInputGone) {
		return struct{}{}, nil
	}
	return nil, c.s.answerFailure(err, c.requestID())
}

// cancelTaskExt signals the cancel and acknowledges, also for an ended task
// (cancellation is cooperative in the extension).
func (c *call) cancelTaskExt(ctx context.Context) (any, *rpcError) {
	t, rerr := c.paramTask(ctx)
	if rerr != nil {
		return nil, rerr
	}
	if !t.Status.IsTerminal() {
		if err := c.s.opts.CancelTask(c.origin(ctx), t); err != nil && mcpflow.ErrorCode(err) != mcpflow.EConflict {
			return nil, c.domainError("cancel task", err)
		}
	}
	return struct{}{}, nil
}

// updateRequests delivers answers to a native task's own input requests
// (unknown keys ignored, elicitations checked against requestedSchema)
// through its workflow; the others stay open.
func (c *call) updateRequests(ctx context.Context, t *mcpflow.Task, open map[string]any, responses map[string]json.RawMessage) (any, *rpcError) {
	answers := map[string]json.RawMessage{}
	for key, raw := range responses {
		req, ok := open[key].(map[string]any)
		if !ok {
			continue
		}
		if req["method"] == string(mcp.MethodElicitationCreate) {
			var res struct {
				Action  string         `json:"action"`
				Content map[string]any `json:"content"`
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&res); err != nil {
				return nil, invalidParams("inputResponses[%q] must be an elicitation result {action, content?}", truncate(key, 100))
			}
			question := map[string]any{}
			if params, ok := req["params"].(map[string]any); ok && params["requestedSchema"] != nil {
				question["requested_schema"] = params["requestedSchema"]
			}
			if err := (mcpflow.InputAnswer{Action: res.Action, Content: res.Content}).Validate(question); err != nil {
				return nil, invalidParams("inputResponses[%q]: %s", truncate(key, 100), mcpflow.ErrorMessage(err))
			}
		} else if !isJSONObject(raw) {
			return nil, invalidParams("inputResponses[%q] must be an object", truncate(key, 100))
		}
		answers[key] = raw
	}
	if len(answers) == 0 {
		return struct{}{}, nil
	}
	if err := c.s.opts.AnswerInput(c.origin(ctx), t, mcpflow.InputAnswer{Responses: answers, QuestionID: t.QuestionSeq}); err != nil {
		return c.updateFailed(err) // ignored when the requests changed meanwhile: nothing open to answer
	}
	return struct{}{}, nil
}
