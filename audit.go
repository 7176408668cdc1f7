package mcpflow

import (
	"context"
	"encoding/json"
	"time"
)

// Audit record kinds.
const (
	AuditCall       = "call"        // a tool call (allowed, refused or failed)
	AuditTaskCancel = "task_cancel" // a durable task's cancellation asked by its owner
	AuditTaskAnswer = "task_answer" // a durable task's question answered by its owner
	AuditConfig     = "config"      // the MCP servers changed through the admin API
	AuditPolicies   = "policies"    // the tool policies changed through the admin API
	AuditApproval   = "approval"    // a call waiting for approval approved or denied by an approver
	AuditPrompt     = "prompt"      // a prompts/get (Tool: the prompt's name as listed)
	AuditResource   = "resource"    // a resources/read (Tool: the resource's URI)
)

// Audit outcomes of a call.
const (
	OutcomeOK            = "ok"             // the tool answered
	OutcomeToolError     = "tool_error"     // the tool answered with isError
	OutcomeUpstreamError = "upstream_error" // the call failed (the server, a timeout, mcpflow)
	OutcomeRefused       = "refused"        // a policy refused it (or the tool does not exist for the caller)
	OutcomePending       = "pending"        // it waits for approval, as a durable task
)

// AuditRecord is one entry of the audit log: who did what, through which
// surface, what was decided and how it ended. It never holds argument
// values or secrets.
type AuditRecord struct {
	ID        int64     `json:"id"`
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"`
	UserID    string    `json:"user_id"`
	Admin     bool      `json:"admin"`
	Provider  string    `json:"provider"`
	Client    string    `json:"client"`  // the MCP client's clientInfo "name/version"; "" on REST
	Surface   string    `json:"surface"` // "rest", "mcp 2025-11-25", "mcp 2026-07-28"
	ThreadID  string    `json:"thread_id"`
	Server    string    `json:"server"`
	Tool      string    `json:"tool"`
	Decision  string    `json:"decision"` // "allow", "deny" or "approve" ("" where no policy decides)
	Rule      string    `json:"rule"`     // the policy rule that decided; "" for a default
	Outcome   string    `json:"outcome"`
	LatencyMS float64   `json:"latency_ms"`
	TaskID    string    `json:"task_id"`
	RequestID string    `json:"request_id"`
	TraceID   string    `json:"trace_id"`
	// Detail says more for kinds other than call: the servers added,
	// removed and changed, the rule names before and after. Never a value.
	Detail string `json:"detail"`
	// Arguments are the call's arguments the policies name for the audit
	// log (policies.audit_arguments), as a JSON object; "" for none. No
	// other argument value is ever recorded.
	Arguments string `json:"arguments,omitempty"`
}

// AuditFilter selects audit records, newest first.
type AuditFilter struct {
	UserID   string
	Tool     string
	Decision string
	Kind     string
	Since    time.Time // zero: no bound
	Until    time.Time // zero: no bound
	Before   int64     // the cursor: records with ID < Before; 0: from the newest
	Limit    int
}

// AuditStore keeps the audit log.
type AuditStore interface {
	// InsertAudit stores records in one transaction.
	InsertAudit(ctx context.Context, records []AuditRecord) error
	// ListAudit returns the records f selects, newest first (by ID).
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditRecord, error)
	// DeleteAuditBefore deletes the records older than t and returns how
	// many.
	DeleteAuditBefore(ctx context.Context, t time.Time) (int64, error)
}

// CallOrigin is where a request came from, as the edges know it: what an
// audit record of its calls says beyond the caller.
type CallOrigin struct {
	Surface    string          // "rest", "mcp 2025-11-25", "mcp 2026-07-28"
	ClientInfo json.RawMessage // the MCP client's clientInfo as it sent it (read only when audited)
	RequestID  string
}

type originKey struct{}

// WithCallOrigin marks ctx with o.
func WithCallOrigin(ctx context.Context, o CallOrigin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// CallOriginFrom returns what WithCallOrigin put in ctx.
func CallOriginFrom(ctx context.Context) CallOrigin {
	o, _ := ctx.Value(originKey{}).(CallOrigin)
	return o
}
