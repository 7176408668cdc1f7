package taskdriver

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/store"
)

// approvalRig is an approval driver on a SQLite store whose tool call
// counts its calls and answers with res or err.
type approvalRig struct {
	d     *Approval
	db    *store.DB
	calls atomic.Int32
	got   mcpflow.ToolCall
	res   *mcpflow.ToolResult
	err   error
	now   time.Time
}

func newApprovalRig(t *testing.T) *approvalRig {
	t.Helper()
	db, err := store.Open(t.Context(), store.BackendSQLite, filepath.Join(t.TempDir(), "a.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	r := &approvalRig{db: db, now: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)}
	text, _ := json.Marshal(map[string]string{"type": "text", "text": "dropped"})
	r.res = &mcpflow.ToolResult{Content: []json.RawMessage{text}}
	r.d = &Approval{Store: db, Now: func() time.Time { return r.now },
		Call: func(_ context.Context, c mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
			r.calls.Add(1)
			r.got = c
			return r.res, r.err
		}}
	return r
}

// submit starts an approval task and returns its reference.
func (r *approvalRig) submit(t *testing.T, id string) mcpflow.TaskReference {
	t.Helper()
	data := mcpflow.ApprovalDriverData("db_drop", mcpflow.ApprovalRequest{Rule: "drops", Approvers: []string{"group:ops", "user:carol"}}, r.now.Add(time.Hour))
	sub, err := r.d.Submit(t.Context(), mcpflow.SubmitRequest{LocalTaskID: id, UserID: "alice", ThreadID: "t1", ServerName: "db",
		TaskName: "db_drop", Arguments: map[string]any{"table": "users"}, DriverData: data})
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusWorking, sub.Snapshot.Status)
	want := `waiting for approval by group:ops or user:carol until ` + r.now.Add(time.Hour).Format(time.RFC3339) + ` (policy rule "drops")`
	require.Equal(t, want, *sub.Snapshot.Message)
	return mcpflow.TaskReference{LocalTaskID: id, UserID: "alice", ThreadID: "t1", ServerName: "db", RemoteTaskID: sub.RemoteTaskID, DriverData: data}
}

func (r *approvalRig) decide(t *testing.T, id, to string) {
	t.Helper()
	ok, err := r.db.MoveApproval(t.Context(), id, mcpflow.ApprovalPending, to, &mcpflow.ApprovalDecision{Approver: "carol", Reason: "reviewed", At: r.now})
	require.NoError(t, err)
	require.True(t, ok)
}

// Approved: the tool is called once, with the approved arguments, and the
// outcome is kept; pending polls call nothing.
func TestApprovalApproved(t *testing.T) {
	r := newApprovalRig(t)
	ctx := t.Context()
	ref := r.submit(t, "mcp-task-ap1")
	snap, err := r.d.Status(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusWorking, snap.Status)
	require.Zero(t, r.calls.Load())

	r.decide(t, "mcp-task-ap1", mcpflow.ApprovalApproved)
	for range 3 {
		snap, err = r.d.Status(ctx, ref)
		require.NoError(t, err)
		require.Equal(t, mcpflow.StatusCompleted, snap.Status)
		require.JSONEq(t, `[{"type":"text","text":"dropped"}]`, string(snap.Content))
	}
	require.EqualValues(t, 1, r.calls.Load(), "the approved tool runs once")
	require.Equal(t, "db_drop", r.got.Tool)
	require.Equal(t, "alice", r.got.UserID)
	require.JSONEq(t, `{"table":"users"}`, string(r.got.RawArguments))
	snap, err = r.d.Cancel(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, snap.Status, "a cancel after the call reports how it ended")
}

// Denied, expired and cancelled approvals end the task without a call; a
// tool error fails it with the tool's text and blocks.
func TestApprovalEnds(t *testing.T) {
	r := newApprovalRig(t)
	ctx := t.Context()

	r.decide(t, r.submit(t, "mcp-task-d").LocalTaskID, mcpflow.ApprovalDenied)
	snap, err := r.d.Status(ctx, mcpflow.TaskReference{LocalTaskID: "mcp-task-d"})
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusFailed, snap.Status)
	require.Equal(t, "denied by carol: reviewed", *snap.Error)

	exp := r.submit(t, "mcp-task-e")
	r.now = r.now.Add(2 * time.Hour)
	snap, err = r.d.Status(ctx, exp)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusFailed, snap.Status)
	require.Equal(t, "not approved before its deadline (2026-12-05T11:00:00Z)", *snap.Error)
	ok, err := r.db.MoveApproval(ctx, "mcp-task-e", mcpflow.ApprovalPending, mcpflow.ApprovalApproved, nil)
	require.NoError(t, err)
	require.False(t, ok, "an expired approval cannot be approved")

	can := r.submit(t, "mcp-task-c")
	snap, err = r.d.Cancel(ctx, can)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCancelled, snap.Status)
	snap, err = r.d.Status(ctx, can)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCancelled, snap.Status)

	text, _ := json.Marshal(map[string]string{"type": "text", "text": "table is locked"})
	r.res = &mcpflow.ToolResult{Content: []json.RawMessage{text}, IsError: true}
	r.decide(t, r.submit(t, "mcp-task-te").LocalTaskID, mcpflow.ApprovalApproved)
	snap, err = r.d.Status(ctx, mcpflow.TaskReference{LocalTaskID: "mcp-task-te"})
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusFailed, snap.Status)
	require.Equal(t, "table is locked", *snap.Error)
	require.Contains(t, string(snap.Content), "table is locked")

	r.err = &mcpflow.Error{Code: mcpflow.EUpstream, Message: "server 'db' is unreachable"}
	r.decide(t, r.submit(t, "mcp-task-ue").LocalTaskID, mcpflow.ApprovalApproved)
	snap, err = r.d.Status(ctx, mcpflow.TaskReference{LocalTaskID: "mcp-task-ue"})
	require.NoError(t, err)
	require.Equal(t, "the approved call failed: server 'db' is unreachable", *snap.Error)
	require.EqualValues(t, 2, r.calls.Load())
}

// A worker that died while the tool ran leaves the approval calling: the
// next poll does not call again, and the task fails saying so; a cancel
// meanwhile waits (a transient error).
func TestApprovalCallInterrupted(t *testing.T) {
	r := newApprovalRig(t)
	ctx := t.Context()
	ref := r.submit(t, "mcp-task-i")
	r.decide(t, "mcp-task-i", mcpflow.ApprovalApproved)
	ok, err := r.db.MoveApproval(ctx, "mcp-task-i", mcpflow.ApprovalApproved, mcpflow.ApprovalCalling, nil)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = r.d.Cancel(ctx, ref)
	require.ErrorContains(t, err, "the approved call is running")
	require.False(t, mcpflow.IsProtocolError(err))
	snap, err := r.d.Status(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusFailed, snap.Status)
	require.True(t, strings.HasPrefix(*snap.Error, "the approved call's outcome is unknown"))
	require.Zero(t, r.calls.Load())
	_, err = r.d.Submit(ctx, mcpflow.SubmitRequest{LocalTaskID: "mcp-task-x", DriverData: map[string]string{}})
	require.True(t, mcpflow.IsProtocolError(err), "%v", err)
	require.False(t, errors.Is(err, context.Canceled))
}

// finishFails is a store that cannot keep a call's outcome.
type finishFails struct{ *store.DB }

func (finishFails) FinishApproval(context.Context, string, mcpflow.Snapshot) error {
	return errors.New("database is locked")
}

// A call that ran is the task's outcome even when the approval row cannot
// keep it: the poll answers it (and writes it to the task's row).
func TestApprovalOutcomeNotKept(t *testing.T) {
	r := newApprovalRig(t)
	r.d.Store = finishFails{r.db}
	ref := r.submit(t, "mcp-task-nk")
	r.decide(t, "mcp-task-nk", mcpflow.ApprovalApproved)
	snap, err := r.d.Status(t.Context(), ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, snap.Status)
	require.EqualValues(t, 1, r.calls.Load())
}
