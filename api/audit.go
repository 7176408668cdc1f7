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
	f := mcpflow.AuditFilter{UserID: c.Query("user"), Tool: c.Query("tool"), Decision: c.Query("decision"), Kind: c.Query("kind")}
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
	before, ok := s.intQuery(c, "before", 0, 1, 1<<62)
	if !ok {
		return
	}
	limit, ok := s.intQuery(c, "limit", 100, 1, 1000)
	if !ok {
		return
	}
	f.Before, f.Limit = before, int(limit)
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

// intQuery reads an optional integer query parameter between min and max
// (def when absent); it answers 400 and false for anything else.
func (s *Server) intQuery(c *gin.Context, name string, def, min, max int64) (int64, bool) {
	if c.Query(name) == "" {
		return def, true
	}
	n, err := queryInt(c, name, def)
	if err != nil || n < min || n > max {
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "%s must be an integer between %d and %d", name, min, max))
		return 0, false
	}
	return n, true
}
