package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// ToolReviewApprovals is the built-in tool through which an approver
// decides the calls that wait for them, by MCP elicitation: each is asked
// as a question (approve or deny, and why). A 2025-11-25 client that
// declared elicitation is asked on the call's stream; a 2026-07-28 client
// gets the question as the call's input_required result and answers it by
// calling again. A client that cannot answer questions (or REST) gets the
// list, to decide with the API or the CLI. It is listed only to callers an
// approve rule names as approvers.
const ToolReviewApprovals = "review_approvals"

// approvalKey is the inputRequests key of the question.
const approvalKey = "approval"

// SetApprovals installs (or, with nil, removes) the store of calls waiting
// for approval behind ToolReviewApprovals; record, when set, receives the
// audit record of each decision.
func (r *Runtime) SetApprovals(store mcpflow.ApprovalStore, record func(context.Context, mcpflow.AuditRecord)) {
	r.mu.Lock()
	r.approvals, r.recordDecision = store, record
	r.mu.Unlock()
}

func (r *Runtime) approvalStore() (mcpflow.ApprovalStore, func(context.Context, mcpflow.AuditRecord)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.approvals, r.recordDecision
}

// reviews reports whether the caller of ctx sees ToolReviewApprovals: the
// approval store is installed and an approve rule of the policies in force
// names the caller, by user id or group, as an approver.
func (r *Runtime) reviews(ctx context.Context) bool {
	if store, _ := r.approvalStore(); store == nil {
		return false
	}
	set, err := r.Policies(ctx)
	if err != nil || set == nil {
		return false
	}
	anyone := mcpflow.Approval{Approvers: set.Approvers()}
	return anyone.MayDecide(mcpflow.CallerFrom(ctx))
}

func reviewTool() mcpflow.Tool {
	return mcpflow.Tool{Name: ToolReviewApprovals, OriginalName: ToolReviewApprovals, Server: builtinServer,
		Description: "Review the tool calls that wait for your approval: each is asked as a question (approve or deny). Without a client that answers questions, lists them.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"string","description":"Review this call only (default: the oldest one waiting for you)."}}}`)}
}

// approvalSchema is the answer an approver gives.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"decision":{"type":"string","enum":["approve","deny"],"description":"approve: call the tool with these arguments; deny: refuse the call"},` +
	`"reason":{"type":"string","description":"shown to the caller"}},"required":["decision"]}`)

// reviewApprovals runs ToolReviewApprovals for the caller of ctx.
func reviewApprovals(ctx context.Context, store mcpflow.ApprovalStore, record func(context.Context, mcpflow.AuditRecord), call mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	caller := mcpflow.CallerFrom(ctx)
	rel := call.Relay
	if rel != nil && rel.PassInput && rel.RequestState != "" && len(rel.InputResponses) > 0 {
		var answers map[string]json.RawMessage
		if json.Unmarshal(rel.InputResponses, &answers) == nil && answers[approvalKey] != nil {
			return decideReview(ctx, store, record, caller, rel.RequestState, answers[approvalKey])
		}
	}
	mine, err := pendingFor(ctx, store, caller, call)
	if err != nil {
		return nil, err
	}
	if len(mine) == 0 {
		return textResult("No calls wait for your approval.", false), nil
	}
	a := &mine[0]
	question, _ := json.Marshal(map[string]any{"method": string(mcp.MethodElicitationCreate), "params": map[string]any{
		"mode": "form", "message": approvalQuestion(a, len(mine)-1), "requestedSchema": approvalSchema}})
	switch {
	case rel != nil && rel.Ask != nil:
		answers, err := rel.Ask(ctx, map[string]json.RawMessage{approvalKey: question})
		if err != nil {
			return textResult("Could not ask you: "+mcpflow.ErrorMessage(err)+". Decide with POST /api/approvals/"+a.TaskID+" or `mcpflow approvals`.", true), nil
		}
		return decideReview(ctx, store, record, caller, a.TaskID, answers[approvalKey])
	case rel != nil && rel.PassInput:
		raw, _ := json.Marshal(map[string]any{"resultType": "input_required",
			"inputRequests": map[string]json.RawMessage{approvalKey: question}, "requestState": a.TaskID})
		return &mcpflow.ToolResult{InputRequired: raw}, nil
	}
	b, _ := json.Marshal(map[string]any{"approvals": mine,
		"how": "decide with POST /api/approvals/{task_id} {\"decision\": \"approve\" or \"deny\"}, or `mcpflow approvals approve|deny TASK_ID`"})
	res := textResult(string(b), false)
	_ = json.Unmarshal(b, &res.StructuredContent)
	return res, nil
}

// pendingFor is the approvals waiting for caller, oldest first: the one
// call.Arguments["task_id"] names when it does (read by its id, however
// many others wait), else every one (mcpflow.ApprovalsFor).
func pendingFor(ctx context.Context, store mcpflow.ApprovalStore, caller *mcpflow.Caller, call mcpflow.ToolCall) ([]mcpflow.Approval, error) {
	only, _ := call.Arguments["task_id"].(string)
	if only == "" {
		return mcpflow.ApprovalsFor(ctx, store, caller, mcpflow.ApprovalPending)
	}
	if !mcpflow.ValidTaskID(only) {
		return nil, nil
	}
	a, err := store.GetApproval(ctx, only)
	switch {
	case mcpflow.ErrorCode(err) == mcpflow.ENotFound:
		return nil, nil
	case err != nil:
		return nil, err
	case a == nil || a.State != mcpflow.ApprovalPending || !a.MayDecide(caller):
		return nil, nil
	}
	return []mcpflow.Approval{*a}, nil
}

// approvalQuestion is what the approver is asked about a.
func approvalQuestion(a *mcpflow.Approval, more int) string {
	q := fmt.Sprintf("%s asks to call %s (server %s) in thread %s with the arguments %s. Policy rule %q needs your approval by %s.",
		a.UserID, a.Tool, a.Server, a.ThreadID, mcpflow.TruncateChars(string(a.Arguments), 4000), a.Rule, a.Deadline.UTC().Format(time.RFC3339))
	if more > 0 {
		q += fmt.Sprintf(" (%d more wait for you.)", more)
	}
	return Neutralize(q)
}

// decideReview applies an approver's answer to the question about the
// approval of taskID.
func decideReview(ctx context.Context, store mcpflow.ApprovalStore, record func(context.Context, mcpflow.AuditRecord), caller *mcpflow.Caller, taskID string, answer json.RawMessage) (*mcpflow.ToolResult, error) {
	if !mcpflow.ValidTaskID(taskID) { // a requestState the client wrote: never echoed
		return textResult("No such approval.", true), nil
	}
	var ans struct {
		Action  string `json:"action"`
		Content struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		} `json:"content"`
	}
	if err := json.Unmarshal(answer, &ans); err != nil {
		return textResult("Your answer could not be read; the call "+taskID+" is still waiting.", true), nil
	}
	if ans.Action != "accept" {
		return textResult("Left undecided: the call "+taskID+" is still waiting.", false), nil
	}
	if ans.Content.Decision != "approve" && ans.Content.Decision != "deny" {
		return textResult(`The decision must be "approve" or "deny"; the call `+taskID+" is still waiting.", true), nil
	}
	a, err := mcpflow.DecideApproval(ctx, store, taskID, caller, ans.Content.Decision == "approve", ans.Content.Reason, time.Now())
	if err != nil {
		if code := mcpflow.ErrorCode(err); code == mcpflow.EForbidden || code == mcpflow.EConflict || code == mcpflow.ENotFound {
			return textResult(mcpflow.ErrorMessage(err), true), nil
		}
		return nil, err
	}
	if record != nil {
		record(ctx, mcpflow.AuditOfDecision(a))
	}
	verb := "Approved"
	if a.State == mcpflow.ApprovalDenied {
		verb = "Denied"
	}
	return textResult(fmt.Sprintf("%s %s's call of %s (task %s).", verb, a.UserID, a.Tool, a.TaskID), false), nil
}
