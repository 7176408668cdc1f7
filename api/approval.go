package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mcpflow/mcpflow"
)

// listApprovals answers GET /api/approvals: the calls the caller may
// decide (a named approver, never the caller of the call), oldest first,
// with their arguments; ?state= selects another state than pending.
func (s *Server) listApprovals(c *gin.Context) {
	state := c.DefaultQuery("state", mcpflow.ApprovalPending)
	switch state {
	case mcpflow.ApprovalPending, mcpflow.ApprovalApproved, mcpflow.ApprovalDenied, mcpflow.ApprovalExpired,
		mcpflow.ApprovalCancelled, mcpflow.ApprovalCalling, mcpflow.ApprovalDone:
	default:
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "state must be one of pending, approved, denied, expired, cancelled, calling, done"))
		return
	}
	list, err := s.opts.Approvals.ListApprovals(c.Request.Context(), mcpflow.ApprovalFilter{State: state, Limit: 1000})
	if err != nil {
		s.renderError(c, err)
		return
	}
	caller := mcpflow.CallerFrom(c.Request.Context())
	mine := []mcpflow.Approval{}
	for i := range list {
		if list[i].MayDecide(caller) {
			mine = append(mine, list[i])
		}
	}
	c.JSON(http.StatusOK, gin.H{"approvals": mine})
}

// decideApproval answers POST /api/approvals/{task_id} with
// {"decision": "approve"|"deny", "reason"?}: 200 with the approval once the
// decision is recorded (the task's workflow acts on it within seconds);
// 404 when there is no such approval; 403 when the caller is not one of its
// approvers (or made the call); 409 when it is no longer pending (decided,
// cancelled, or past its deadline).
func (s *Server) decideApproval(c *gin.Context) {
	body, ok := s.readBody(c)
	if !ok {
		return
	}
	var in struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || (in.Decision != "approve" && in.Decision != "deny") {
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, `request body must be {"decision": "approve"|"deny", "reason"?: "..."}`))
		return
	}
	ctx := c.Request.Context()
	id := c.Param("task_id")
	a, err := s.opts.Approvals.GetApproval(ctx, id)
	if err != nil {
		s.renderError(c, err)
		return
	}
	caller := mcpflow.CallerFrom(ctx)
	if !a.MayDecide(caller) {
		msg := "you are not an approver of this call (" + strings.Join(a.Approvers, ", ") + ")"
		if caller != nil && caller.UserID == a.UserID {
			msg = "the caller of a call cannot approve or deny it"
		}
		s.renderError(c, mcpflow.Errorf(mcpflow.EForbidden, "%s", msg))
		return
	}
	now := s.now().UTC()
	if a.State == mcpflow.ApprovalPending && !now.Before(a.Deadline) {
		s.renderError(c, mcpflow.Errorf(mcpflow.EConflict, "the approval's deadline (%s) has passed", a.Deadline.Format("2006-01-02T15:04:05Z")))
		return
	}
	to := mcpflow.ApprovalApproved
	if in.Decision == "deny" {
		to = mcpflow.ApprovalDenied
	}
	d := &mcpflow.ApprovalDecision{Approver: caller.UserID, Reason: mcpflow.TruncateChars(strings.TrimSpace(in.Reason), 1000), At: now}
	moved, err := s.opts.Approvals.MoveApproval(ctx, id, mcpflow.ApprovalPending, to, d)
	if err != nil {
		s.renderError(c, err)
		return
	}
	if !moved {
		if fresh, err := s.opts.Approvals.GetApproval(ctx, id); err == nil {
			a = fresh
		}
		s.renderError(c, mcpflow.Errorf(mcpflow.EConflict, "the approval is %s, not pending", a.State))
		return
	}
	if s.opts.RecordAudit != nil {
		s.opts.RecordAudit(restOrigin(c), mcpflow.AuditRecord{Kind: mcpflow.AuditApproval, Tool: a.Tool, Server: a.Server,
			ThreadID: a.ThreadID, TaskID: a.TaskID, Decision: map[string]string{mcpflow.ApprovalApproved: "approve", mcpflow.ApprovalDenied: "deny"}[to],
			Rule: a.Rule, Outcome: mcpflow.OutcomeOK, Detail: "the call of " + a.UserID})
	}
	if fresh, err := s.opts.Approvals.GetApproval(ctx, id); err == nil {
		a = fresh
	}
	c.JSON(http.StatusOK, a)
}
