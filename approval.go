package mcpflow

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// DriverApproval drives a call that a policy rule sent for approval
// (effect "approve"): a durable task that waits for one of the rule's
// approvers to approve or deny the call, and only then calls the tool,
// once.
const DriverApproval = "approval"

// Driver data keys of an approval task. DriverDataApprovalTool, the tool
// as callers name it, selects the approval driver; the others are the
// policy rule, its approvers (comma-separated) and the deadline (RFC 3339).
const (
	DriverDataApprovalTool      = "approval_tool"
	DriverDataApprovalRule      = "approval_rule"
	DriverDataApprovalApprovers = "approval_approvers"
	DriverDataApprovalDeadline  = "approval_deadline"
)

// ApprovalDriverData is the driver data of an approval task for tool.
func ApprovalDriverData(tool string, req ApprovalRequest, deadline time.Time) map[string]string {
	return map[string]string{DriverDataApprovalTool: tool, DriverDataApprovalRule: req.Rule,
		DriverDataApprovalApprovers: strings.Join(req.Approvers, ","), DriverDataApprovalDeadline: deadline.UTC().Format(time.RFC3339Nano)}
}

// Approval states. A pending approval becomes approved, denied, expired
// (its deadline passed) or cancelled (by its caller); an approved one
// becomes calling when a worker starts the call, then done. Only pending
// approvals can be decided.
const (
	ApprovalPending   = "pending"
	ApprovalApproved  = "approved"
	ApprovalDenied    = "denied"
	ApprovalExpired   = "expired"
	ApprovalCancelled = "cancelled"
	ApprovalCalling   = "calling"
	ApprovalDone      = "done"
)

// ApprovalStates are the states an approval can be in.
var ApprovalStates = []string{ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalExpired, ApprovalCancelled, ApprovalCalling, ApprovalDone}

// Approval is a call waiting for (or past) a person's decision.
type Approval struct {
	TaskID   string `json:"task_id"`
	UserID   string `json:"user_id"` // the caller
	ThreadID string `json:"thread_id"`
	Server   string `json:"server"`
	Tool     string `json:"tool"` // as the caller named it
	Rule     string `json:"rule"` // the policy rule that asked for approval
	// Approvers may decide: "group:<name>" (a member of the group, by the
	// caller's groups claim) or "user:<id>".
	Approvers []string  `json:"approvers"`
	State     string    `json:"state"`
	Deadline  time.Time `json:"deadline"` // denied when not approved by then
	// Arguments are the call's arguments, shown to approvers and called
	// with as approved.
	Arguments json.RawMessage `json:"arguments"`
	Approver  string          `json:"approver,omitempty"` // who decided
	Reason    string          `json:"reason,omitempty"`
	DecidedAt *time.Time      `json:"decided_at,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	// Outcome is the task's final snapshot once the call ended (done), so
	// a repeated read answers it without calling again.
	Outcome *Snapshot `json:"-"`
}

// ApprovalFilter selects approvals, oldest first.
type ApprovalFilter struct {
	State string // "" for every state
	Limit int    // 0: 100; at most 1000
	// Approvers, when set, keeps the approvals that name one of them
	// ("user:<id>", "group:<name>"). The store may keep more (SQLite's
	// LIKE ignores ASCII case; past 1000 names it does not filter):
	// MayDecide decides.
	Approvers []string
}

// ApprovalStore keeps approvals. Every change of state is a compare and
// set: it happens only from the state named, and reports whether it did.
type ApprovalStore interface {
	CreateApproval(ctx context.Context, a *Approval) error // a second create of the same task is a no-op
	GetApproval(ctx context.Context, taskID string) (*Approval, error)
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, error)
	// MoveApproval changes the approval's state from one to another; for
	// a decision it records approver, reason and time (decided).
	MoveApproval(ctx context.Context, taskID, from, to string, decided *ApprovalDecision) (bool, error)
	// FinishApproval records the outcome of the call (calling → done).
	FinishApproval(ctx context.Context, taskID string, outcome Snapshot) error
}

// ApprovalDecision is who decided an approval, how and why.
type ApprovalDecision struct {
	Approver string
	Reason   string
	At       time.Time
}

// ApprovalRequest is what a policy decision that asks for approval says:
// the rule, who may decide (Approval.Approvers) and how long they have.
type ApprovalRequest struct {
	Rule      string
	Approvers []string
	Timeout   time.Duration
}

// MayDecide reports whether c is one of a's approvers: its user id is
// named ("user:<id>"), or its identity provider's "groups" claim (a string
// or a list of strings) holds a named group ("group:<name>"). The caller
// of the approved call never decides it.
func (a *Approval) MayDecide(c *Caller) bool {
	if c == nil || c.UserID == "" || c.UserID == a.UserID {
		return false
	}
	groups := c.groups()
	for _, ap := range a.Approvers {
		if kind, name, _ := strings.Cut(ap, ":"); kind == "user" && name == c.UserID || kind == "group" && slices.Contains(groups, name) {
			return true
		}
	}
	return false
}

// groups are the caller's "groups" claim: a string or a list of them.
func (c *Caller) groups() []string {
	var groups []string
	if raw, ok := c.Claims["groups"]; ok {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			groups = []string{one}
		} else {
			_ = json.Unmarshal(raw, &groups)
		}
	}
	return groups
}

// Approvals starts the durable task of a call that needs approval and
// answers with the task's handle (ToolResult.Task set), like a durable
// task tool's submit.
type Approvals interface {
	SubmitApproval(ctx context.Context, call ToolCall, tool Tool, req ApprovalRequest) (*ToolResult, error)
}

// DecideApproval records c's decision on the pending approval of taskID:
// ENotFound when there is none, EForbidden when c may not decide it
// (MayDecide), EConflict when it is no longer pending or its deadline has
// passed. It returns the approval as decided.
func DecideApproval(ctx context.Context, store ApprovalStore, taskID string, c *Caller, approve bool, reason string, now time.Time) (*Approval, error) {
	var a *Approval
	var err error = Errorf(ENotFound, "no such approval") // the id is not echoed
	if ValidTaskID(taskID) {
		a, err = store.GetApproval(ctx, taskID)
	}
	if ErrorCode(err) == ENotFound {
		return nil, Errorf(ENotFound, "no such approval")
	}
	if err != nil {
		return nil, err
	}
	if !a.MayDecide(c) {
		if c != nil && c.UserID == a.UserID {
			return nil, Errorf(EForbidden, "the caller of a call cannot approve or deny it")
		}
		// Another user's call: not there for them (nor who may decide it).
		return nil, Errorf(ENotFound, "no such approval")
	}
	if a.State == ApprovalPending && !now.Before(a.Deadline) {
		return nil, Errorf(EConflict, "the approval's deadline (%s) has passed", a.Deadline.UTC().Format(time.RFC3339))
	}
	to := ApprovalApproved
	if !approve {
		to = ApprovalDenied
	}
	d := &ApprovalDecision{Approver: c.UserID, Reason: TruncateChars(strings.TrimSpace(reason), 1000), At: now.UTC()}
	moved, err := store.MoveApproval(ctx, taskID, ApprovalPending, to, d)
	if err != nil {
		return nil, err
	}
	if fresh, err := store.GetApproval(ctx, taskID); err == nil {
		a = fresh
	} else if moved {
		// What the move wrote, when it cannot be read back.
		a.State, a.Approver, a.Reason, a.DecidedAt = to, d.Approver, d.Reason, &d.At
	}
	if !moved {
		return nil, Errorf(EConflict, "the approval is %s, not pending", a.State)
	}
	return a, nil
}

// ApprovalsFor are the approvals in state that c may decide (MayDecide),
// oldest first, of the first 1000 in that state the store matches for c:
// those naming user:<id> or one of c's groups (it may match more; for a
// caller of 1000 groups or more, every approval in that state).
func ApprovalsFor(ctx context.Context, store ApprovalStore, c *Caller, state string) ([]Approval, error) {
	if c == nil || c.UserID == "" {
		return []Approval{}, nil
	}
	names := []string{"user:" + c.UserID}
	for _, g := range c.groups() {
		names = append(names, "group:"+g)
	}
	list, err := store.ListApprovals(ctx, ApprovalFilter{State: state, Limit: 1000, Approvers: names})
	if err != nil {
		return nil, err
	}
	mine := []Approval{}
	for i := range list {
		if list[i].MayDecide(c) {
			mine = append(mine, list[i])
		}
	}
	return mine, nil
}

// AuditOfDecision is the audit record of an approver's decision on a.
func AuditOfDecision(a *Approval) AuditRecord {
	decision := "approve"
	if a.State == ApprovalDenied {
		decision = "deny"
	}
	return AuditRecord{Kind: AuditApproval, Tool: a.Tool, Server: a.Server, ThreadID: a.ThreadID, TaskID: a.TaskID,
		Decision: decision, Rule: a.Rule, Outcome: OutcomeOK, Detail: "the call of " + a.UserID}
}
