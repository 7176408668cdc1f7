package taskdriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow"
)

// approvalPoll is how often a pending approval is read again: how soon an
// approver's decision takes effect.
const approvalPoll = 2.0

// Approval drives approval tasks (mcpflow.DriverApproval): the task is the
// approval row (Store), which approvers decide through the API. The task
// workflow polls it like any remote task: pending is working; approved is
// called here, once (approved → calling → done, each a compare and set);
// denied, expired and cancelled fail or cancel the task. A call whose
// worker died while the tool ran is not repeated: the task fails, saying
// its outcome is unknown.
type Approval struct {
	Store mcpflow.ApprovalStore
	// Call calls the tool as the caller (the worker's runtime).
	Call func(ctx context.Context, call mcpflow.ToolCall) (*mcpflow.ToolResult, error)
	Now  func() time.Time
	// Audit, when set, records each approved call that ran, with its
	// outcome (surface "approval").
	Audit func(ctx context.Context, r mcpflow.AuditRecord)
	// Logger hears an outcome the approval could not keep; nil discards.
	Logger *slog.Logger
}

var _ mcpflow.Driver = (*Approval)(nil)

func (d *Approval) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Submit implements mcpflow.Driver: it stores the pending approval.
func (d *Approval) Submit(ctx context.Context, req mcpflow.SubmitRequest) (mcpflow.Submission, error) {
	deadline, err := time.Parse(time.RFC3339Nano, req.DriverData[mcpflow.DriverDataApprovalDeadline])
	if err != nil || req.DriverData[mcpflow.DriverDataApprovalApprovers] == "" {
		return mcpflow.Submission{}, mcpflow.NewProtocolError("approval task %s has no deadline or approvers", req.LocalTaskID)
	}
	args, err := json.Marshal(req.Arguments)
	if err != nil || req.Arguments == nil {
		args = []byte("{}")
	}
	if err := mcpflow.BeforeSend(ctx); err != nil {
		return mcpflow.Submission{}, err
	}
	a := &mcpflow.Approval{TaskID: req.LocalTaskID, UserID: req.UserID, ThreadID: req.ThreadID, Server: req.ServerName,
		Tool: req.DriverData[mcpflow.DriverDataApprovalTool], Rule: req.DriverData[mcpflow.DriverDataApprovalRule],
		Approvers: strings.Split(req.DriverData[mcpflow.DriverDataApprovalApprovers], ","), Deadline: deadline, Arguments: args,
		State: mcpflow.ApprovalPending, CreatedAt: d.now()}
	if err := d.Store.CreateApproval(ctx, a); err != nil {
		return mcpflow.Submission{}, err
	}
	return mcpflow.Submission{RemoteTaskID: req.LocalTaskID, Snapshot: waiting(a)}, nil
}

// waiting is the snapshot of a pending approval.
func waiting(a *mcpflow.Approval) mcpflow.Snapshot {
	msg := fmt.Sprintf("waiting for approval by %s until %s (policy rule %q)",
		strings.Join(a.Approvers, " or "), a.Deadline.UTC().Format(time.RFC3339), a.Rule)
	poll := approvalPoll
	return mcpflow.Snapshot{Status: mcpflow.StatusWorking, Message: &msg, PollAfterSeconds: &poll}
}

// Status implements mcpflow.Driver.
func (d *Approval) Status(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	for {
		a, err := d.Store.GetApproval(ctx, ref.LocalTaskID)
		if err != nil {
			return mcpflow.Snapshot{}, err
		}
		switch a.State {
		case mcpflow.ApprovalPending:
			if d.now().Before(a.Deadline) {
				return waiting(a), nil
			}
			if _, err := d.Store.MoveApproval(ctx, a.TaskID, mcpflow.ApprovalPending, mcpflow.ApprovalExpired, nil); err != nil {
				return mcpflow.Snapshot{}, err
			}
		case mcpflow.ApprovalApproved:
			moved, err := d.Store.MoveApproval(ctx, a.TaskID, mcpflow.ApprovalApproved, mcpflow.ApprovalCalling, nil)
			if err != nil {
				return mcpflow.Snapshot{}, err
			}
			if moved {
				return d.call(ctx, a)
			}
		case mcpflow.ApprovalCalling:
			// A worker stopped while the tool ran (this poll would have
			// finished it otherwise): whether the call took effect is not
			// known, and it is not repeated.
			msg := "the approved call's outcome is unknown: the mcpflow worker stopped while the tool ran, and it was not called again"
			snap := mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: &msg}
			if err := d.Store.FinishApproval(ctx, a.TaskID, snap); err != nil && mcpflow.ErrorCode(err) != mcpflow.EConflict {
				return mcpflow.Snapshot{}, err
			}
		default:
			return ended(a), nil
		}
	}
}

// ended is the snapshot of an approval that ended.
func ended(a *mcpflow.Approval) mcpflow.Snapshot {
	var msg string
	switch a.State {
	case mcpflow.ApprovalDone:
		if a.Outcome != nil {
			return *a.Outcome
		}
		msg = "the approved call ended without an outcome"
	case mcpflow.ApprovalDenied:
		msg = fmt.Sprintf("denied by %s", a.Approver)
		if a.Reason != "" {
			msg += ": " + a.Reason
		}
	case mcpflow.ApprovalExpired:
		msg = fmt.Sprintf("not approved before its deadline (%s)", a.Deadline.UTC().Format(time.RFC3339))
	case mcpflow.ApprovalCancelled:
		msg = "cancelled while waiting for approval"
		return mcpflow.Snapshot{Status: mcpflow.StatusCancelled, Message: &msg}
	default:
		msg = fmt.Sprintf("the approval is in an unknown state %q", a.State)
	}
	return mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: &msg}
}

// call calls the approved tool with the approved arguments, once, and
// keeps the outcome.
func (d *Approval) call(ctx context.Context, a *mcpflow.Approval) (mcpflow.Snapshot, error) {
	start := d.now()
	res, err := d.Call(ctx, mcpflow.ToolCall{UserID: a.UserID, ThreadID: a.ThreadID, Tool: a.Tool, RawArguments: a.Arguments})
	var snap mcpflow.Snapshot
	outcome := mcpflow.OutcomeOK
	switch {
	case err != nil:
		msg := fmt.Sprintf("the approved call failed: %s", mcpflow.ErrorMessage(err))
		snap, outcome = mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: &msg}, mcpflow.OutcomeUpstreamError
	case res.IsError:
		snap, outcome = resultSnapshot(res), mcpflow.OutcomeToolError
	default:
		snap = resultSnapshot(res)
	}
	latency := d.now().Sub(start)
	// The call happened: the approval keeps its outcome first, on a
	// context a cancel of the poll does not end (a row left calling would
	// refuse every cancel). Its outcome is the task's even when the
	// approval cannot keep it (the poll writes it to the task's row; only a
	// poll repeated after that write failed too reports it as unknown).
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ferr := d.Store.FinishApproval(fctx, a.TaskID, snap)
	if d.Audit != nil {
		d.Audit(fctx, mcpflow.AuditRecord{Time: start, Kind: mcpflow.AuditCall, UserID: a.UserID, Surface: "approval", ThreadID: a.ThreadID,
			Server: a.Server, Tool: a.Tool, Decision: "approve", Rule: a.Rule, Outcome: outcome, TaskID: a.TaskID,
			LatencyMS: float64(latency.Microseconds()) / 1000, Detail: "approved by " + a.Approver})
	}
	if ferr != nil && d.Logger != nil {
		d.Logger.Warn("the approval did not keep the outcome of its call; the task's row has it", "task_id", a.TaskID, "error", ferr)
	}
	return snap, nil
}

// resultSnapshot is the snapshot of a tool's result: completed with its
// structured content (or its content blocks) and its own blocks, or failed
// with its text when it is a tool error.
func resultSnapshot(res *mcpflow.ToolResult) mcpflow.Snapshot {
	blocks := res.Content
	if blocks == nil {
		blocks = []json.RawMessage{}
	}
	raw, _ := json.Marshal(blocks)
	if res.IsError {
		var texts []string
		for _, b := range blocks {
			var tb struct{ Type, Text string }
			if json.Unmarshal(b, &tb) == nil && tb.Type == "text" {
				texts = append(texts, tb.Text)
			}
		}
		snap := failedSnapshot(strings.Join(texts, "\n"))
		snap.Content = raw
		return snap
	}
	snap := mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Content: raw, Result: res.StructuredContent, ResultStructured: res.StructuredContent != nil}
	if res.StructuredContent == nil {
		var v any
		_ = json.Unmarshal(raw, &v)
		snap.Result = v
	}
	return snap
}

// Cancel implements mcpflow.Driver: a pending or approved call is
// cancelled; one being called finishes first (a transient error until
// then); an ended one reports how it ended.
func (d *Approval) Cancel(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	for _, from := range []string{mcpflow.ApprovalPending, mcpflow.ApprovalApproved} {
		if _, err := d.Store.MoveApproval(ctx, ref.LocalTaskID, from, mcpflow.ApprovalCancelled, nil); err != nil {
			return mcpflow.Snapshot{}, err
		}
	}
	a, err := d.Store.GetApproval(ctx, ref.LocalTaskID)
	if err != nil {
		return mcpflow.Snapshot{}, err
	}
	if a.State == mcpflow.ApprovalCalling {
		return mcpflow.Snapshot{}, errors.New("the approved call is running; it ends before the task can")
	}
	return ended(a), nil
}
