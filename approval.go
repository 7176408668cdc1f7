package mcpflow

import (
	"context"
	"encoding/json"
	"time"
)

// DriverApproval drives a call that a policy rule sent for approval
// (effect "approve"): a durable task that waits for a person of the rule's
// group to approve or deny the call, and only then calls the tool, once.
const DriverApproval = "approval"

// Driver data keys of an approval task. DriverDataApprovalTool, the tool
// as callers name it, selects the approval driver.
const (
	DriverDataApprovalTool = "approval_tool"
)

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

// Approval is a call waiting for (or past) a person's decision.
type Approval struct {
	TaskID   string    `json:"task_id"`
	UserID   string    `json:"user_id"` // the caller
	ThreadID string    `json:"thread_id"`
	Server   string    `json:"server"`
	Tool     string    `json:"tool"`  // as the caller named it
	Rule     string    `json:"rule"`  // the policy rule that asked for approval
	Group    string    `json:"group"` // who may decide: a member of this group
	State    string    `json:"state"`
	Deadline time.Time `json:"deadline"` // denied when not approved by then
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
	State  string   // "" for every state
	Groups []string // only these groups; nil for every group
	Limit  int      // 0: 100; at most 1000
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
// the rule, the group whose members decide and how long they have.
type ApprovalRequest struct {
	Rule    string
	Group   string
	Timeout time.Duration
}

// Approvals starts the durable task of a call that needs approval and
// answers with the task's handle (ToolResult.Task set), like a durable
// task tool's submit.
type Approvals interface {
	SubmitApproval(ctx context.Context, call ToolCall, tool Tool, req ApprovalRequest) (*ToolResult, error)
}
