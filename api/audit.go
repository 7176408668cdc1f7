package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mcpflow/mcpflow"
)

// listAudit answers GET /api/audit (admin): the audit log, newest first,
// filtered by user, tool, decision, kind and time, a page at a time
// (next is the cursor of the following page, null after the last).
func (s *Server) listAudit(c *gin.Context) {
	if s.opts.Audit == nil {
		s.renderError(c, mcpflow.Errorf(mcpflow.ENotFound, "the audit log is off (audit.enabled in config.yaml)"))
		return
	}
	f := mcpflow.AuditFilter{UserID: c.Query("user"), Tool: c.Query("tool"), Decision: c.Query("decision"), Kind: c.Query("kind"), Limit: 100}
	for _, q := range []struct {
		name string
		to   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := c.Query(q.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "%s must be an RFC 3339 time like 2026-12-05T10:00:00Z", q.name))
				return
			}
			*q.to = t
		}
	}
	for _, q := range []struct {
		name     string
		to       *int64
		min, max int64
	}{{"before", &f.Before, 1, 1 << 62}, {"limit", new(int64), 1, 1000}} {
		if v := c.Query(q.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < q.min || n > q.max {
				s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "%s must be an integer between %d and %d", q.name, q.min, q.max))
				return
			}
			*q.to = n
			if q.name == "limit" {
				f.Limit = int(n)
			}
		}
	}
	recs, err := s.opts.Audit.ListAudit(c.Request.Context(), f)
	if err != nil {
		s.renderError(c, err)
		return
	}
	var next *string
	if len(recs) == f.Limit && len(recs) > 0 {
		cur := strconv.FormatInt(recs[len(recs)-1].ID, 10)
		next = &cur
	}
	if recs == nil {
		recs = []mcpflow.AuditRecord{}
	}
	c.JSON(http.StatusOK, gin.H{"records": recs, "next": next})
}
