package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// TaskClient is the client side of durable tasks: it starts a task
// workflow with its submit update (update-with-start) and returns once the
// remote submit succeeded and the row is persisted, and it sends cancel
// requests.
type TaskClient struct {
	Client    client.Client
	TaskQueue string
	// Config is the frozen mcp_tasks configuration every task runs with
	// (Pinned is set per task from its server's transport).
	Config workflows.TaskConfig
	// Servers are the task servers (task_toolsets or native_tasks) as
	// frozen at start-up.
	Servers map[string]config.Server
	// CurrentServer returns the current configuration of a server that is
	// not frozen (nil: none). Native MCP task tools whose taskSupport is
	// "required" are durable on any server; on a server that is not frozen
	// their tasks run with its configuration at submit time.
	CurrentServer func(ctx context.Context, name string) (*config.Server, error)
	// Secrets seals the request secrets a submit needs (the keys its
	// server's headers_from_context maps), so they reach the worker's submit
	// without entering Temporal history in plain text.
	Secrets *mcpflow.SecretBox
	// IdempotentSubmit holds the servers of
	// mcp_tasks.idempotent_submit_servers.
	IdempotentSubmit map[string]bool
	// MaxRunningPerUser caps a user's durable tasks that have not ended
	// (mcp_tasks.max_running_tasks_per_user): a submit takes one of the
	// user's slots from Slots before anything starts, database-wide, and a
	// submit beyond the cap is ETooMany (429) with nothing submitted. 0: no
	// cap (a slot still records a keyed submit's request); a nil Slots: no
	// cap, and a retry with another request is not detected.
	MaxRunningPerUser int
	Slots             mcpflow.TaskSlots
	// Tasks reads the row of a task a retried submit (same idempotency
	// key) started.
	Tasks  mcpflow.TaskStore
	Logger *slog.Logger
	// Namespace, when set, is where the first approval makes sure the
	// custom search attributes exist (EnsureSearchAttributes), as workers
	// do when they start: an API upgraded before its workers starts
	// approvals, whose workflows carry McpApprovers, before any worker
	// registered it.
	Namespace string

	attrsOnce sync.Once
}

// ensureAttributes registers the missing custom search attributes once
// per process, within 10 s; a failure is logged (the start then fails
// with Temporal's own message).
func (c *TaskClient) ensureAttributes(ctx context.Context) {
	c.attrsOnce.Do(func() {
		if c.Namespace == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		RegisterSearchAttributes(ctx, c.Client, c.Namespace, c.Logger)
	})
}

// SlotTTL is how long a running-task slot is held for a submit whose task
// is not stored yet: three attempts of the remote submit (lease_seconds
// each, callTimeout) and five minutes for the rest. A slot is consumed when
// the task's row is stored and released when the submit fails; only one
// whose replica died before either (or a submit that waited longer, with
// no worker) is held until then.
func SlotTTL(callTimeout time.Duration) time.Duration {
	return 3*callTimeout + 5*time.Minute
}

// Submit starts the durable task behind a submit wrapper tool, or behind a
// native MCP task tool (ts.Native: driver mcpflow.DriverNative, driver data
// {native_tool}), and answers with {task_id, task_name, status, message}
// only. Request-scoped secrets reach the workflow only sealed (the keys the
// server maps, see mcpflow.SecretBox), so Temporal history never holds
// their values.
//
// A call with an idempotency key (mcpflow.ToolCall.IdempotencyKey) is
// idempotent: its task id derives from (user, thread, key)
// (mcpflow.KeyedTaskID), so a retry on any replica answers the task the
// first attempt started: the stored task's handle, or, while that submit
// is still running, the same update's outcome (the workflow is used as it
// is and the update id is the task id). A retry asking for another tool or
// other arguments is EConflict. A keyed submit whose caller goes away is
// left to run (its retry finds it), where one without a key is cancelled.
func (c *TaskClient) Submit(ctx context.Context, call mcpflow.ToolCall, tool mcpflow.Tool, ts config.TaskToolset) (*mcpflow.ToolResult, error) {
	srv, ok := c.Servers[tool.Server]
	if !ok && ts.Native && c.CurrentServer != nil {
		cur, err := c.CurrentServer(ctx, tool.Server)
		if mcpflow.ErrorCode(err) == mcpflow.ENotFound {
			return nil, &mcpflow.Error{Code: mcpflow.EUnavailable, Err: err,
				Message: fmt.Sprintf("MCP server '%s' is no longer enabled in the configuration (it changed while this call ran); its durable task cannot start", tool.Server)}
		}
		if err != nil {
			return nil, err
		}
		srv, ok = *cur, true
	}
	if !ok {
		return nil, mcpflow.Errorf(mcpflow.EUnavailable, "MCP task-enabled server configuration changed after mcpflow started (%s); restart mcpflow before using durable task tools", tool.Server)
	}
	driver := mcpflow.DriverOrdinary
	data := map[string]string{mcpflow.DriverDataSubmitTool: ts.SubmitTool, mcpflow.DriverDataStatusTool: ts.StatusTool, mcpflow.DriverDataCancelTool: ts.CancelTool}
	if ts.InputTool != "" {
		data[mcpflow.DriverDataInputTool] = ts.InputTool
	}
	if ts.Native {
		driver = mcpflow.DriverNative
		data = map[string]string{mcpflow.DriverDataNativeTool: ts.SubmitTool}
		if ts.Adopt != "" {
			data[mcpflow.DriverDataAdoptTask] = ts.Adopt
		}
	}
	// Stdio servers keep their tasks in the subprocess of one worker; native
	// MCP tasks are bound to the MCP session that created them on many
	// servers (mcp-go's default, server-everything), and their questions
	// wait in that worker's memory: both run on the worker holding the
	// session.
	return c.start(ctx, call, tool, ts, srv, driver, data, srv.Type == config.TransportStdio || ts.Native)
}

var _ mcpflow.Approvals = (*TaskClient)(nil)

// SubmitApproval implements mcpflow.Approvals: the durable task of a call
// that waits for approval (driver mcpflow.DriverApproval), on the server's
// current configuration, answered like a submit with the task's handle.
// Its workflow carries the approvers in the search attribute McpApprovers.
func (c *TaskClient) SubmitApproval(ctx context.Context, call mcpflow.ToolCall, tool mcpflow.Tool, req mcpflow.ApprovalRequest) (*mcpflow.ToolResult, error) {
	if c.CurrentServer == nil {
		return nil, mcpflow.Errorf(mcpflow.EUnavailable, "calls that need approval cannot start here")
	}
	srv, err := c.CurrentServer(ctx, tool.Server)
	if err != nil {
		return nil, err
	}
	if call.Arguments == nil {
		args, err := call.CallArguments()
		if err != nil {
			return nil, err
		}
		call.Arguments, call.RawArguments = args, nil
	}
	c.ensureAttributes(ctx)
	deadline := time.Now().Add(req.Timeout)
	data := mcpflow.ApprovalDriverData(tool.Name, req, deadline)
	return c.start(ctx, call, tool, config.TaskToolset{Name: tool.Name}, *srv, mcpflow.DriverApproval, data, false)
}

// start starts the durable task of call (driver and its data; pinned to
// the worker holding the session when pinned) with the submit update, and
// answers with its handle.
func (c *TaskClient) start(ctx context.Context, call mcpflow.ToolCall, tool mcpflow.Tool, ts config.TaskToolset, srv config.Server,
	driver string, data map[string]string, pinned bool) (*mcpflow.ToolResult, error) {
	keyed := call.IdempotencyKey != ""
	taskID, hash := mcpflow.NewTaskID(), ""
	if keyed {
		if problem := mcpflow.IdempotencyKeyProblem(call.IdempotencyKey); problem != "" {
			return nil, mcpflow.Errorf(mcpflow.EInvalid, "the idempotency key %s", problem)
		}
		taskID = mcpflow.KeyedTaskID(call.UserID, call.ThreadID, call.IdempotencyKey)
		var err error
		if hash, err = mcpflow.SubmitRequestHash(tool.Server, tool.Name, call.Arguments); err != nil {
			return nil, mcpflow.Errorf(mcpflow.EInvalid, "arguments cannot be encoded as JSON")
		}
	}
	req := mcpflow.SubmitRequest{UserID: call.UserID, ThreadID: call.ThreadID, RunID: call.RunID, ToolCallID: call.ToolCallID,
		ServerName: tool.Server, TaskName: ts.Name, Arguments: call.Arguments, LocalTaskID: taskID, DriverData: data}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	cfg := c.Config
	cfg.Pinned = pinned
	cfg.IdempotentSubmit = c.IdempotentSubmit[srv.Name]
	cfg.Shape = workflows.ShapeReport
	if driver == mcpflow.DriverApproval {
		cfg.Shape = workflows.ShapeApproval // workers without the approval driver refuse it
	}
	sealed, err := c.sealSecrets(taskID, &srv, call.Secrets)
	if err != nil {
		return nil, err
	}
	in := workflows.TaskInput{TaskID: taskID, UserID: req.UserID, ThreadID: req.ThreadID, RunID: req.RunID, ToolCallID: req.ToolCallID,
		ServerName: req.ServerName, TaskName: req.TaskName, DriverName: driver, DriverData: req.DriverData,
		Arguments: req.Arguments, SealedSecrets: sealed, Config: cfg}
	stored, err := c.reserve(ctx, req.UserID, taskID, hash)
	if err != nil {
		return nil, err
	}
	if stored {
		return c.storedHandle(ctx, taskID, ts)
	}
	opts := StartOptions(in, c.TaskQueue)
	if keyed {
		// A retry joins the task its first attempt started, running or
		// not yet stored: the start is a no-op and the update (same id)
		// answers that submit's outcome.
		opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	}
	op := c.Client.NewWithStartWorkflowOperation(opts, workflows.TaskWorkflowName, in)
	h, err := c.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: op,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: workflows.UpdateSubmit, UpdateID: taskID,
			WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	var res workflows.SubmitResult
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		switch {
		case ctx.Err() != nil && keyed:
			// The caller went away; its retry with the key finds the task.
		case ctx.Err() != nil:
			// The caller went away: the task may still be submitted and
			// persisted by its workflow, and nobody would learn its id, so
			// ask the workflow to cancel it (best effort). Its slot stays
			// until its row consumes it or it lapses.
			c.goneCaller(taskID)
		case keyed:
			// An earlier attempt with this key may have stored its task
			// (its workflow went on, or ended since); otherwise its
			// outcome is this one's.
			if t, gerr := c.storedTask(ctx, taskID); gerr == nil {
				return c.handle(t, ts), nil
			}
			c.release(ctx, taskID)
			var started *serviceerror.WorkflowExecutionAlreadyStarted
			if errors.As(err, &started) {
				return c.endedWithoutTask(ctx, taskID)
			}
		default:
			// The submit failed and stored no row.
			c.release(ctx, taskID)
		}
		if c.Logger != nil {
			c.Logger.Warn("task submit failed", "task_id", taskID, "server", tool.Server, "error", err)
		}
		return submitError(err, ctx)
	}
	adopted := ts.Adopt != ""
	if adopted && keyed {
		// A retry joined the submit of an earlier attempt, which adopted
		// the remote task that attempt's call was answered with: this
		// call's remote task is not it.
		if t, gerr := c.storedTask(ctx, taskID); gerr == nil {
			adopted = t.RemoteTaskID == ts.Adopt
		}
	}
	return handleResult(res, adopted), nil
}

// handleResult is the answer of a submit: the task's handle.
func handleResult(res workflows.SubmitResult, adopted bool) *mcpflow.ToolResult {
	b, _ := json.Marshal(res)
	text, _ := json.Marshal(mcp.NewTextContent(string(b)))
	return &mcpflow.ToolResult{Content: []json.RawMessage{text}, StructuredContent: res, Task: res.TaskID, Adopted: adopted}
}

// storedTask reads a task's row (Tasks).
func (c *TaskClient) storedTask(ctx context.Context, taskID string) (*mcpflow.Task, error) {
	if c.Tasks == nil {
		return nil, mcpflow.Errorf(mcpflow.ENotFound, "MCP task not found")
	}
	return c.Tasks.GetTask(ctx, taskID)
}

// handle is the answer of a retried submit whose task is stored: its
// handle with the row's status (and, once it ended, a message saying so).
func (c *TaskClient) handle(t *mcpflow.Task, ts config.TaskToolset) *mcpflow.ToolResult {
	msg := workflows.SubmitMessage
	if t.Status.IsTerminal() {
		msg = "The task has already ended: " + string(t.Status) + "."
	}
	res := workflows.SubmitResult{TaskID: t.ID, TaskName: t.TaskName, Status: t.Status, Message: msg}
	return handleResult(res, ts.Adopt != "" && t.RemoteTaskID == ts.Adopt)
}

// storedHandle answers a retried submit whose task is stored.
func (c *TaskClient) storedHandle(ctx context.Context, taskID string, ts config.TaskToolset) (*mcpflow.ToolResult, error) {
	t, err := c.storedTask(ctx, taskID)
	if err != nil {
		return nil, &mcpflow.Error{Code: mcpflow.EUnavailable, Message: "cannot read the task this idempotency key started; retry shortly", Err: err}
	}
	return c.handle(t, ts), nil
}

// endedWithoutTask answers a retried submit whose first attempt's
// workflow ended without storing a task: with that submit's own outcome
// (its update's result, read back), or, when that cannot be read, a tool
// error saying the key is spent.
func (c *TaskClient) endedWithoutTask(ctx context.Context, taskID string) (*mcpflow.ToolResult, error) {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h := c.Client.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{WorkflowID: taskID, UpdateID: taskID})
	var res workflows.SubmitResult
	err := h.Get(gctx, &res)
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return submitError(err, ctx)
	}
	return toolError("The submit with this idempotency key already ended without a task; use a new key to submit again"), nil
}

// reserve takes a running-task slot for taskID (with the request's hash
// for a keyed submit), or refuses the submit: ETooMany when the user holds
// all the slots, EConflict when the idempotency key was used for another
// request. It reports stored when the task's row exists already (a retry
// of a stored submit).
func (c *TaskClient) reserve(ctx context.Context, userID, taskID, hash string) (stored bool, err error) {
	if c.Slots == nil {
		return false, nil
	}
	g, err := c.Slots.ReserveTaskSlot(ctx, mcpflow.TaskSlot{TaskID: taskID, UserID: userID,
		Max: c.MaxRunningPerUser, TTL: SlotTTL(c.Config.CallTimeout), RequestHash: hash})
	switch {
	case err != nil:
		return false, &mcpflow.Error{Code: mcpflow.EUnavailable, Message: "cannot count this user's running durable tasks; retry shortly", Err: err}
	case g.OtherRequest:
		return false, mcpflow.Errorf(mcpflow.EConflict, "this idempotency key was already used on this thread for another request (another tool or other arguments); use a new key")
	case !g.Granted:
		return false, mcpflow.Errorf(mcpflow.ETooMany, "this user already has %d running durable tasks, the most one user may (mcp_tasks.max_running_tasks_per_user); wait for one to finish or cancel one", g.Held)
	}
	return g.Stored, nil
}

// release gives back the slot of a submit that failed (best effort: a
// slot that cannot be released lapses).
func (c *TaskClient) release(ctx context.Context, taskID string) {
	if c.Slots == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.Slots.ReleaseTaskSlot(rctx, taskID); err != nil && c.Logger != nil {
		c.Logger.Warn("could not release the running-task slot of a failed submit; it lapses", "task_id", taskID, "error", err)
	}
}

// sealSecrets seals the secrets srv's headers_from_context maps, and only
// those ("" when it maps none or the request has none of them).
func (c *TaskClient) sealSecrets(taskID string, srv *config.Server, secrets map[string]string) (string, error) {
	hc := srv.HeadersFromContext
	if hc == nil || !hc.Enabled || srv.Type == config.TransportStdio || len(secrets) == 0 {
		return "", nil
	}
	needed := map[string]string{}
	for _, key := range hc.Headers {
		if v, ok := secrets[key]; ok {
			needed[key] = v
		}
	}
	if len(needed) == 0 {
		return "", nil
	}
	if c.Secrets == nil {
		return "", mcpflow.Errorf(mcpflow.EUnavailable, "MCP server '%s' needs request-scoped secrets for its durable tasks, but mcp_tasks.secrets_key is not set", srv.Name)
	}
	sealed, err := c.Secrets.Seal(taskID, needed)
	if err != nil {
		return "", fmt.Errorf("seal request secrets: %w", err)
	}
	return sealed, nil
}

func (c *TaskClient) goneCaller(taskID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.signal(ctx, taskID, workflows.SignalCancel, "the submitting caller went away", "could not cancel a task whose submitter went away")
}

// signal sends a signal to a task's workflow, logging a failure other than
// a workflow that ended already as msg.
func (c *TaskClient) signal(ctx context.Context, taskID, name string, arg any, msg string) {
	err := c.Client.SignalWorkflow(ctx, taskID, "", name, arg)
	var nf *serviceerror.NotFound
	if err != nil && c.Logger != nil && !errors.As(err, &nf) {
		c.Logger.Warn(msg, "task_id", taskID, "error", err)
	}
}

// submitError maps a failed submit to what the agent sees: a refused or
// failed remote submit, a broken answer, a row that could not be stored and
// a submit whose worker died after sending it (outcome unknown) are tool
// errors (200, is_error) with their messages; a duplicate remote handle is
// 409; any other failure inside mcpflow is a tool error with a fixed text
// (its details are logged, not shown); a missing worker or Temporal is 503.
func submitError(err error, ctx context.Context) (*mcpflow.ToolResult, error) {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		switch ae.Type() {
		case workflows.ErrTypeDuplicate:
			// Another task tracks that remote task: nothing to undo.
			return nil, &mcpflow.Error{Code: mcpflow.EConflict, Message: ae.Message(), Err: &mcpflow.DuplicateRemoteTaskError{}}
		case workflows.ErrTypeLimit:
			return nil, mcpflow.Errorf(mcpflow.ETooMany, "%s", ae.Message())
		case workflows.ErrTypeSubmit, workflows.ErrTypeProtocol, workflows.ErrTypePersist, workflows.ErrTypeSubmitUnknown:
			return toolError(ae.Message()), nil
		}
		return toolError("mcpflow could not run this submit (an internal error; the worker's log has the details)"), nil
	}
	if ctx.Err() != nil {
		return nil, &mcpflow.Error{Code: mcpflow.ETimeout, Message: "the task submission did not finish before the request ended", Err: err}
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		// The submit's worker died or hung on every attempt it was given.
		return toolError("The mcpflow worker running this submit stopped or timed out before the MCP server's answer came back: the remote task may have started, but it is not tracked"), nil
	}
	return nil, &mcpflow.Error{Code: mcpflow.EUnavailable, Message: "the durable task runtime is unavailable", Err: err}
}

func toolError(msg string) *mcpflow.ToolResult {
	b, _ := json.Marshal(mcp.NewTextContent(msg))
	return &mcpflow.ToolResult{Content: []json.RawMessage{b}, IsError: true}
}

// CancelTask asks a task's workflow to cancel it and records that it did
// in the task's row (mcpflow.CancelRecorder: the workflow records the
// request itself only once a poll in flight has returned). It answers
// EUnavailable when no worker polls the task queue (a cancel is never
// acknowledged without a worker to perform it).
func (c *TaskClient) CancelTask(ctx context.Context, t *mcpflow.Task) error {
	ok, err := c.WorkersAvailable(ctx)
	if err != nil {
		return &mcpflow.Error{Code: mcpflow.EUnavailable, Message: "cannot reach Temporal to cancel the task", Err: err}
	}
	if !ok {
		return mcpflow.Errorf(mcpflow.EUnavailable, "no mcpflow worker is running to perform the cancellation; try again when one is")
	}
	if err := c.Client.SignalWorkflow(ctx, t.ID, "", workflows.SignalCancel, "cancel requested through the API"); err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return mcpflow.Errorf(mcpflow.EConflict, "the task already finished")
		}
		return &mcpflow.Error{Code: mcpflow.EUnavailable, Message: "cannot reach Temporal to cancel the task", Err: err}
	}
	if rec, ok := c.Tasks.(mcpflow.CancelRecorder); ok {
		// The signal is sent: a caller gone now does not stop its record.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := rec.RecordCancelSignal(rctx, t.ID, time.Now()); err != nil && c.Logger != nil {
			c.Logger.Warn("could not record a cancel signal; the task reads as cancel-requested once its workflow takes it", "task_id", t.ID, "error", err)
		}
	}
	return nil
}

// WakeNotifications asks the workflows of tasks whose notifications are
// not settled to retry their delivery now (the notify signal). Tasks that
// already ended are skipped; other failures are logged.
func (c *TaskClient) WakeNotifications(ctx context.Context, tasks []*mcpflow.Task) {
	for _, t := range tasks {
		switch t.NotificationStatus {
		case mcpflow.NotificationPending, mcpflow.NotificationDispatched, mcpflow.NotificationRetry:
		default:
			continue
		}
		c.signal(ctx, t.ID, workflows.SignalNotify, nil, "could not wake a task's notification delivery")
	}
}

// WorkersAvailable reports whether some worker polled the task queue's
// workflow tasks recently (livePoller).
func (c *TaskClient) WorkersAvailable(ctx context.Context) (bool, error) {
	resp, err := c.Client.DescribeTaskQueue(ctx, c.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return false, err
	}
	return livePoller(resp.GetPollers(), time.Now()), nil
}

// pollerGoneAfter is how long after its last poll a worker counts as
// gone. Temporal lists a poller for five minutes after its last poll, a
// worker stopped since included; a running worker polls again at least
// every long-poll timeout (a minute by default), so twice that is safe.
const pollerGoneAfter = 2 * time.Minute

// livePoller reports whether one of pollers polled within
// pollerGoneAfter of now (one without a time counts: nothing says it is
// gone).
func livePoller(pollers []*taskqueuepb.PollerInfo, now time.Time) bool {
	for _, p := range pollers {
		at := p.GetLastAccessTime()
		if at == nil || now.Sub(at.AsTime()) < pollerGoneAfter {
			return true
		}
	}
	return false
}

// StartOptions are the options a task's workflow starts with: its id is
// the task id (a second start fails), on taskQueue, with the search
// attributes, memo and summary the Web UI and `temporal workflow list` show.
func StartOptions(in workflows.TaskInput, taskQueue string) client.StartWorkflowOptions {
	attrs := []temporal.SearchAttributeUpdate{
		workflows.SearchAttrTaskStatus.ValueSet(string(mcpflow.StatusSubmitted)),
		workflows.SearchAttrServer.ValueSet(in.ServerName),
		workflows.SearchAttrTaskName.ValueSet(in.TaskName),
		workflows.SearchAttrUserID.ValueSet(in.UserID),
		workflows.SearchAttrThreadID.ValueSet(in.ThreadID),
	}
	if approvers := in.DriverData[mcpflow.DriverDataApprovalApprovers]; approvers != "" {
		attrs = append(attrs, workflows.SearchAttrApprovers.ValueSet(approvers)) // a call waiting for approval
	}
	return client.StartWorkflowOptions{
		ID:                       in.TaskID,
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
		Memo:                     map[string]any{"task_name": in.TaskName, "server": in.ServerName},
		StaticSummary:            fmt.Sprintf("MCP task %s on %s", in.TaskName, in.ServerName),
	}
}
