package mcpflow

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// Approvers are named users or members of named groups (the groups claim,
// a list or one string); the caller of the call never decides it, and
// neither does a caller without a user id (an admin token).
func TestMayDecide(t *testing.T) {
	a := &Approval{UserID: "alice", Approvers: []string{"group:ops", "user:carol"}}
	for _, tc := range []struct {
		c    *Caller
		want bool
	}{
		{&Caller{UserID: "carol"}, true},
		{&Caller{UserID: "dave", Claims: map[string]json.RawMessage{"groups": json.RawMessage(`["dev", "ops"]`)}}, true},
		{&Caller{UserID: "erin", Claims: map[string]json.RawMessage{"groups": json.RawMessage(`"ops"`)}}, true},
		{&Caller{UserID: "frank", Claims: map[string]json.RawMessage{"groups": json.RawMessage(`["dev"]`)}}, false},
		{&Caller{UserID: "gina", Claims: map[string]json.RawMessage{"roles": json.RawMessage(`["ops"]`)}}, false},
		{&Caller{UserID: "bob"}, false},
		{&Caller{UserID: "alice", Claims: map[string]json.RawMessage{"groups": json.RawMessage(`["ops"]`)}}, false},
		{&Caller{Admin: true}, false},
		{nil, false},
	} {
		if got := a.MayDecide(tc.c); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.c, got, tc.want)
		}
	}
}

// memApprovals is an ApprovalStore in memory, for DecideApproval's checks.
type memApprovals map[string]*Approval

func (m memApprovals) CreateApproval(_ context.Context, a *Approval) error {
	m[a.TaskID] = a
	return nil
}
func (m memApprovals) GetApproval(_ context.Context, id string) (*Approval, error) {
	if a, ok := m[id]; ok {
		c := *a
		return &c, nil
	}
	return nil, Errorf(ENotFound, "approval %s not found", id)
}
func (m memApprovals) ListApprovals(context.Context, ApprovalFilter) ([]Approval, error) {
	return nil, nil
}
func (m memApprovals) MoveApproval(_ context.Context, id, from, to string, d *ApprovalDecision) (bool, error) {
	a := m[id]
	if a == nil || a.State != from {
		return false, nil
	}
	a.State, a.Approver = to, d.Approver
	return true, nil
}
func (m memApprovals) FinishApproval(context.Context, string, Snapshot) error { return nil }

// DecideApproval: an unknown or malformed id is "no such approval" (never
// echoed), the caller and non-approvers are refused, a decision after the
// deadline or a second one conflicts, and a decision lands once.
func TestDecideApproval(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	id := "mcp-task-0123456789abcdef0123456789abcdef"
	late := "mcp-task-fedcba9876543210fedcba9876543210"
	st := memApprovals{
		id:   {TaskID: id, UserID: "alice", Approvers: []string{"user:carol"}, State: ApprovalPending, Deadline: now.Add(time.Hour)},
		late: {TaskID: late, UserID: "alice", Approvers: []string{"user:carol"}, State: ApprovalPending, Deadline: now.Add(-time.Second)},
	}
	carol := &Caller{UserID: "carol"}
	for _, tc := range []struct {
		id   string
		c    *Caller
		code string
		msg  string
	}{
		{"<script>", carol, ENotFound, "no such approval"},
		{"mcp-task-00000000000000000000000000000000", carol, ENotFound, "no such approval"},
		{id, &Caller{UserID: "alice"}, EForbidden, "the caller of a call cannot approve or deny it"},
		{id, &Caller{UserID: "bob"}, ENotFound, "no such approval"}, // not who may decide it either
		{late, carol, EConflict, "the approval's deadline (2026-12-05T09:59:59Z) has passed"},
	} {
		_, err := DecideApproval(ctx, st, tc.id, tc.c, true, "", now)
		if ErrorCode(err) != tc.code || ErrorMessage(err) != tc.msg {
			t.Errorf("%s as %s: %v, want %s %q", tc.id, tc.c.UserID, err, tc.code, tc.msg)
		}
	}
	a, err := DecideApproval(ctx, st, id, carol, false, "  no  ", now)
	if err != nil || a.State != ApprovalDenied || a.Approver != "carol" {
		t.Fatalf("%+v %v", a, err)
	}
	if _, err := DecideApproval(ctx, st, id, carol, true, "", now); ErrorCode(err) != EConflict || ErrorMessage(err) != "the approval is denied, not pending" {
		t.Fatalf("second decision: %v", err)
	}
}

// unreadable is memApprovals whose reads fail once a decision moved an
// approval (the database went away between the two statements).
type unreadable struct {
	memApprovals
	moved bool
}

func (u *unreadable) GetApproval(ctx context.Context, id string) (*Approval, error) {
	if u.moved {
		return nil, Errorf(EUnavailable, "the database is unavailable")
	}
	return u.memApprovals.GetApproval(ctx, id)
}

func (u *unreadable) MoveApproval(ctx context.Context, id, from, to string, d *ApprovalDecision) (bool, error) {
	ok, err := u.memApprovals.MoveApproval(ctx, id, from, to, d)
	u.moved = u.moved || ok
	return ok, err
}

// A decision whose approval cannot be read back is answered as what it
// wrote (a deny read as pending would be answered and audited as nothing).
func TestDecideApprovalUnreadable(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	id := "mcp-task-0123456789abcdef0123456789abcdef"
	st := &unreadable{memApprovals: memApprovals{id: {TaskID: id, UserID: "alice", Approvers: []string{"user:carol"}, State: ApprovalPending, Deadline: now.Add(time.Hour)}}}
	a, err := DecideApproval(context.Background(), st, id, &Caller{UserID: "carol"}, false, "no", now)
	if err != nil || a.State != ApprovalDenied || a.Approver != "carol" || a.Reason != "no" || a.DecidedAt == nil {
		t.Fatalf("%+v %v", a, err)
	}
}
