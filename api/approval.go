package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mcpflow/mcpflow"
)

// listApprovals answers GET /api/approvals: the calls the caller may
// decide (a named approver, never the caller of the call), oldest first,
// with their arguments; ?state= selects another state than pending.
func (s *Server) listApprovals(c *gin.Context) {
	state := c.DefaultQuery("state", mcpflow.ApprovalPending)
	if !slices.Contains(mcpflow.ApprovalStates, state) {
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "state must be one of %s", strings.Join(mcpflow.ApprovalStates, ", ")))
		return
	}
	mine, err := mcpflow.ApprovalsFor(c.Request.Context(), s.opts.Approvals, mcpflow.CallerFrom(c.Request.Context()), state)
	if err != nil {
		s.renderError(c, err)
		return
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
	a, err := mcpflow.DecideApproval(ctx, s.opts.Approvals, c.Param("task_id"), mcpflow.CallerFrom(ctx), in.Decision == "approve", in.Reason, s.now())
	if err != nil {
		s.renderError(c, err)
		return
	}
	if s.opts.RecordAudit != nil {
		s.opts.RecordAudit(restOrigin(c), mcpflow.AuditOfDecision(a))
	}
	c.JSON(http.StatusOK, a)
}
