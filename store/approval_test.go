package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
)

// An approval is created once, decided once (of concurrent decisions only
// one lands), listed by state and group, and keeps its call's outcome.
func TestApprovals(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		deadline := time.Date(2026, 12, 5, 12, 0, 0, 123456789, time.UTC)
		a := &mcpflow.Approval{TaskID: "mcp-task-a1", UserID: "alice", ThreadID: "t1", Server: "db", Tool: "db_drop",
			Rule: "ops-approve", Approvers: []string{"group:ops", "user:carol"}, Deadline: deadline, Arguments: json.RawMessage(`{"table":"users"}`)}
		if err := db.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
		again := *a
		again.Approvers = []string{"group:other"}
		if err := db.CreateApproval(ctx, &again); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateApproval(ctx, &mcpflow.Approval{TaskID: "mcp-task-a2", UserID: "bob", Approvers: []string{"group:sec"}, Deadline: deadline}); err != nil {
			t.Fatal(err)
		}
		got, err := db.GetApproval(ctx, "mcp-task-a1")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got.Approvers, " ") != "group:ops user:carol" || got.State != mcpflow.ApprovalPending || !got.Deadline.Equal(deadline.Truncate(time.Microsecond)) ||
			string(got.Arguments) != `{"table":"users"}` || got.CreatedAt.IsZero() {
			t.Fatalf("%+v", got)
		}
		if _, err := db.GetApproval(ctx, "mcp-task-none"); mcpflow.ErrorCode(err) != mcpflow.ENotFound {
			t.Fatalf("missing approval: %v", err)
		}
		list, err := db.ListApprovals(ctx, mcpflow.ApprovalFilter{State: mcpflow.ApprovalPending, Limit: 1})
		if err != nil || len(list) != 1 || list[0].TaskID != "mcp-task-a1" {
			t.Fatalf("oldest pending: %+v %v", list, err)
		}
		if list, _ := db.ListApprovals(ctx, mcpflow.ApprovalFilter{State: mcpflow.ApprovalDenied}); len(list) != 0 {
			t.Fatalf("denied: %+v", list)
		}
		if list, _ := db.ListApprovals(ctx, mcpflow.ApprovalFilter{}); len(list) != 2 {
			t.Fatalf("all: %+v", list)
		}

		var moved atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				to := mcpflow.ApprovalApproved
				if i%2 == 1 {
					to = mcpflow.ApprovalDenied
				}
				ok, err := db.MoveApproval(ctx, "mcp-task-a1", mcpflow.ApprovalPending, to,
					&mcpflow.ApprovalDecision{Approver: "carol", Reason: "ok", At: deadline.Add(-time.Hour)})
				if err != nil {
					t.Error(err)
				}
				if ok {
					moved.Add(1)
				}
			}()
		}
		wg.Wait()
		if moved.Load() != 1 {
			t.Fatalf("%d decisions landed, want 1", moved.Load())
		}
		got, _ = db.GetApproval(ctx, "mcp-task-a1")
		if got.Approver != "carol" || got.DecidedAt == nil || got.Reason != "ok" {
			t.Fatalf("%+v", got)
		}
		if got.State == mcpflow.ApprovalDenied {
			return
		}
		if err := db.FinishApproval(ctx, "mcp-task-a1", mcpflow.Snapshot{Status: mcpflow.StatusCompleted}); mcpflow.ErrorCode(err) != mcpflow.EConflict {
			t.Fatalf("finish before calling: %v", err)
		}
		if ok, err := db.MoveApproval(ctx, "mcp-task-a1", mcpflow.ApprovalApproved, mcpflow.ApprovalCalling, nil); !ok || err != nil {
			t.Fatalf("claim: %v %v", ok, err)
		}
		if ok, _ := db.MoveApproval(ctx, "mcp-task-a1", mcpflow.ApprovalApproved, mcpflow.ApprovalCalling, nil); ok {
			t.Fatal("claimed twice")
		}
		msg := "done"
		if err := db.FinishApproval(ctx, "mcp-task-a1", mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Message: &msg, Result: "r"}); err != nil {
			t.Fatal(err)
		}
		got, _ = db.GetApproval(ctx, "mcp-task-a1")
		if got.State != mcpflow.ApprovalDone || got.Outcome == nil || got.Outcome.Status != mcpflow.StatusCompleted || got.Outcome.Result != "r" {
			t.Fatalf("%+v", got)
		}
	})
}

// ListApprovals by approvers: an approval is kept when one of the names
// given is one of its approvers, whole (not a prefix, nor a LIKE
// wildcard); ApprovalsFor finds a caller's approvals behind more than
// 1,000 older ones of others.
func TestApprovalsByApprover(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		deadline := time.Now().Add(time.Hour)
		at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		create := func(id, user string, approvers ...string) {
			t.Helper()
			at = at.Add(time.Second)
			if err := db.CreateApproval(ctx, &mcpflow.Approval{TaskID: id, UserID: user, Approvers: approvers, Deadline: deadline, CreatedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		create("mcp-task-ops", "alice", "group:ops", "user:carol")
		create("mcp-task-opsx", "alice", "group:opsx")
		create("mcp-task-pct", "alice", "group:o%s")
		create("mcp-task-dan", "alice", "user:dan")
		ids := func(f mcpflow.ApprovalFilter) string {
			t.Helper()
			list, err := db.ListApprovals(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, a := range list {
				out = append(out, strings.TrimPrefix(a.TaskID, "mcp-task-"))
			}
			return strings.Join(out, " ")
		}
		for _, tc := range []struct {
			names []string
			want  string
		}{
			{[]string{"group:ops"}, "ops"},
			{[]string{"user:carol"}, "ops"},
			{[]string{"group:o_s"}, ""},
			{[]string{"group:o%s"}, "pct"},
			{[]string{"group:op"}, ""},
			{[]string{"user:dan", "group:opsx"}, "opsx dan"},
			{nil, "ops opsx pct dan"},
		} {
			if got := ids(mcpflow.ApprovalFilter{State: mcpflow.ApprovalPending, Approvers: tc.names}); got != tc.want {
				t.Errorf("%v: %q, want %q", tc.names, got, tc.want)
			}
		}

		for i := range 1001 {
			create(fmt.Sprintf("mcp-task-other%04d", i), "bob", "group:sec")
		}
		create("mcp-task-late", "alice", "user:erin")
		mine, err := mcpflow.ApprovalsFor(ctx, db, &mcpflow.Caller{UserID: "erin"}, mcpflow.ApprovalPending)
		if err != nil || len(mine) != 1 || mine[0].TaskID != "mcp-task-late" {
			t.Fatalf("erin's approval behind 1,001 others: %+v %v", mine, err)
		}
		groups, _ := json.Marshal([]string{"ops"})
		mine, err = mcpflow.ApprovalsFor(ctx, db, &mcpflow.Caller{UserID: "frank", Claims: map[string]json.RawMessage{"groups": groups}}, mcpflow.ApprovalPending)
		if err != nil || len(mine) != 1 || mine[0].TaskID != "mcp-task-ops" {
			t.Fatalf("frank of ops: %+v %v", mine, err)
		}
		// A token naming 999 groups (matched in SQL within SQLite's
		// expression depth) or 2,000 (past the bound: MayDecide alone),
		// ops the last: still listed.
		for _, n := range []int{999, 2000} {
			many := make([]string, n)
			for i := range many {
				many[i] = fmt.Sprintf("g%d", i)
			}
			many[n-1] = "ops"
			groups, _ = json.Marshal(many)
			mine, err = mcpflow.ApprovalsFor(ctx, db, &mcpflow.Caller{UserID: "gina", Claims: map[string]json.RawMessage{"groups": groups}}, mcpflow.ApprovalPending)
			if err != nil || len(mine) != 1 || mine[0].TaskID != "mcp-task-ops" {
				t.Fatalf("gina of %d groups: %+v %v", n, mine, err)
			}
		}
	})
}
