package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/mcpflow/mcpflow"
)

// approvalRow is one row of mcp_approvals (migration 00013).
type approvalRow struct {
	TaskID    string     `gorm:"column:task_id;primaryKey"`
	UserID    string     `gorm:"column:user_id"`
	ThreadID  string     `gorm:"column:thread_id"`
	Server    string     `gorm:"column:server"`
	Tool      string     `gorm:"column:tool"`
	Rule      string     `gorm:"column:rule"`
	Approvers string     `gorm:"column:approvers"` // Approval.Approvers, comma-separated
	State     string     `gorm:"column:state"`
	Deadline  time.Time  `gorm:"column:deadline"`
	Arguments string     `gorm:"column:arguments"`
	Approver  string     `gorm:"column:approver"`
	Reason    string     `gorm:"column:reason"`
	DecidedAt *time.Time `gorm:"column:decided_at"`
	Outcome   string     `gorm:"column:outcome"`
	CreatedAt time.Time  `gorm:"column:created_at;autoCreateTime:false"`
}

// TableName implements gorm's Tabler.
func (approvalRow) TableName() string { return "mcp_approvals" }

var _ mcpflow.ApprovalStore = (*DB)(nil)

// CreateApproval implements mcpflow.ApprovalStore: the row as a is, in
// state pending unless a names one; an approval of the task that exists
// already is left as it is (a retried submit).
func (db *DB) CreateApproval(ctx context.Context, a *mcpflow.Approval) error {
	if a.TaskID == "" || a.UserID == "" || len(a.Approvers) == 0 {
		return invalid("an approval needs a task, a caller and approvers")
	}
	args := string(a.Arguments)
	if args == "" {
		args = "{}"
	}
	state := a.State
	if state == "" {
		state = mcpflow.ApprovalPending
	}
	row := approvalRow{TaskID: a.TaskID, UserID: a.UserID, ThreadID: a.ThreadID, Server: a.Server, Tool: a.Tool,
		Rule: auditText(a.Rule, 255), Approvers: strings.Join(a.Approvers, ","), State: state, Deadline: dbTime(a.Deadline), Arguments: args,
		CreatedAt: dbTime(a.CreatedAt)}
	if a.CreatedAt.IsZero() {
		row.CreatedAt = dbTime(db.now())
	}
	if err := db.gorm.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return fmt.Errorf("create approval %s: %w", a.TaskID, asUnavailable(err))
	}
	return nil
}

// GetApproval implements mcpflow.ApprovalStore (ENotFound when absent).
func (db *DB) GetApproval(ctx context.Context, taskID string) (*mcpflow.Approval, error) {
	var row approvalRow
	err := db.gorm.WithContext(ctx).Where("task_id = ?", taskID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, mcpflow.Errorf(mcpflow.ENotFound, "approval %s not found", taskID)
	}
	if err != nil {
		return nil, fmt.Errorf("get approval %s: %w", taskID, asUnavailable(err))
	}
	a := row.approval()
	return &a, nil
}

// ListApprovals implements mcpflow.ApprovalStore: oldest first.
func (db *DB) ListApprovals(ctx context.Context, f mcpflow.ApprovalFilter) ([]mcpflow.Approval, error) {
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = 100
	case limit > 1000:
		limit = 1000
	}
	q := db.gorm.WithContext(ctx).Order("created_at, task_id").Limit(limit)
	if f.State != "" {
		q = q.Where("state = ?", f.State)
	}
	if n := len(f.Approvers); n > 0 && n <= maxApproverNames {
		// approvers is comma-separated: a name matches between commas.
		// The ORs go in groups of 50, so that a caller of many groups
		// stays within SQLite's expression depth (1,000).
		var groups, or []string
		var args []any
		for i, name := range f.Approvers {
			or = append(or, `(',' || approvers || ',') LIKE ? ESCAPE '\'`)
			args = append(args, "%,"+likeEscaper.Replace(name)+",%")
			if len(or) == 50 || i == n-1 {
				groups, or = append(groups, "("+strings.Join(or, " OR ")+")"), or[:0]
			}
		}
		q = q.Where("("+strings.Join(groups, " OR ")+")", args...)
	}
	var rows []approvalRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list approvals: %w", asUnavailable(err))
	}
	out := make([]mcpflow.Approval, len(rows))
	for i := range rows {
		out[i] = rows[i].approval()
	}
	return out, nil
}

// maxApproverNames bounds the names ListApprovals matches in SQL: a
// filter of more keeps every approval of the state (the filter may keep
// more than it names; MayDecide decides).
const maxApproverNames = 1000

// likeEscaper escapes a LIKE pattern's wildcards (ESCAPE '\').
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// MoveApproval implements mcpflow.ApprovalStore: one UPDATE that matches
// the state from, so of two concurrent moves only one happens.
func (db *DB) MoveApproval(ctx context.Context, taskID, from, to string, decided *mcpflow.ApprovalDecision) (bool, error) {
	set := map[string]any{"state": to}
	if decided != nil {
		set["approver"] = auditText(decided.Approver, 255)
		set["reason"] = auditText(decided.Reason, 1000)
		set["decided_at"] = dbTime(decided.At)
	}
	res := db.gorm.WithContext(ctx).Model(&approvalRow{}).Where("task_id = ? AND state = ?", taskID, from).Updates(set)
	if res.Error != nil {
		return false, fmt.Errorf("move approval %s from %s to %s: %w", taskID, from, to, asUnavailable(res.Error))
	}
	return res.RowsAffected == 1, nil
}

// FinishApproval implements mcpflow.ApprovalStore.
func (db *DB) FinishApproval(ctx context.Context, taskID string, outcome mcpflow.Snapshot) error {
	b, err := json.Marshal(outcome)
	if err != nil {
		return fmt.Errorf("finish approval %s: %w", taskID, err)
	}
	res := db.gorm.WithContext(ctx).Model(&approvalRow{}).Where("task_id = ? AND state = ?", taskID, mcpflow.ApprovalCalling).
		Updates(map[string]any{"state": mcpflow.ApprovalDone, "outcome": string(b)})
	if res.Error != nil {
		return fmt.Errorf("finish approval %s: %w", taskID, asUnavailable(res.Error))
	}
	if res.RowsAffected != 1 {
		return mcpflow.Errorf(mcpflow.EConflict, "approval %s is not being called", taskID)
	}
	return nil
}

func (r *approvalRow) approval() mcpflow.Approval {
	a := mcpflow.Approval{TaskID: r.TaskID, UserID: r.UserID, ThreadID: r.ThreadID, Server: r.Server, Tool: r.Tool, Rule: r.Rule,
		Approvers: strings.Split(r.Approvers, ","), State: r.State, Deadline: r.Deadline.UTC(), Arguments: json.RawMessage(r.Arguments), Approver: r.Approver,
		Reason: r.Reason, CreatedAt: r.CreatedAt.UTC()}
	if r.DecidedAt != nil {
		t := r.DecidedAt.UTC()
		a.DecidedAt = &t
	}
	if r.Outcome != "" {
		var s mcpflow.Snapshot
		if json.Unmarshal([]byte(r.Outcome), &s) == nil {
			a.Outcome = &s
		}
	}
	return a
}
