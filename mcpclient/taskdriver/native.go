package taskdriver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/mcpclient/credential"
	"github.com/mcpflow/mcpflow/mcpclient/question"
	"github.com/mcpflow/mcpflow/mcpclient/route"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// Native implements mcpflow.Driver over native MCP Tasks (protocol
// 2025-11-25): Submit is a task-augmented tools/call of the tool named by
// the task's driver data (mcpflow.DriverDataNativeTool) and its remote id
// is the upstream taskId; Status is tasks/get, followed by tasks/result
// once the task is terminal; Cancel is tasks/cancel.
//
// Statuses map one to one (working, input_required, completed, failed,
// cancelled); input_required carries {"message": statusMessage}. The
// server's pollInterval (ms) is the snapshot's poll hint. A completed task
// whose result has isError is failed (mcp-go's servers store such results
// as completed), with the result's text as its error; a failed task's
// error is the JSON-RPC error tasks/result answers with (or the result's
// text). A completed result is its structuredContent when present, else
// its content blocks, with workspace paths translated on stdio routes as
// for ordinary tool results; the snapshot also carries the blocks
// themselves (Snapshot.Content, with Snapshot.ResultStructured), which the
// MCP endpoint answers as they are.
//
// Errors: an upstream task that is gone (a -32602 answer: unknown id, its
// ttl expired, or its session ended on a server that keeps tasks per
// session) makes the task failed (task_not_found); a malformed answer (no taskId, an unknown status, a result that is not a tool
// result) is a *mcpflow.ProtocolError; transport failures and other
// JSON-RPC errors are plain, retryable errors.
//
// Like Ordinary, it pins the task's session while the task runs
// (route.TaskPin).
type Native struct {
	// Run runs op on the session a server's requests for a user's thread
	// go to (Runtime.Run with the task's server configuration); required.
	Run func(ctx context.Context, server, userID, threadID string, op route.Op) error
	// Questions holds the questions of input_required tasks
	// (Runtime.Questions); nil: questions are reported, never answerable.
	Questions *question.Questions
}

// nativeStatuses are the statuses of the protocol.
var nativeStatuses = map[mcp.TaskStatus]mcpflow.Status{
	mcp.TaskStatusWorking:       mcpflow.StatusWorking,
	mcp.TaskStatusInputRequired: mcpflow.StatusInputRequired,
	mcp.TaskStatusCompleted:     mcpflow.StatusCompleted,
	mcp.TaskStatusFailed:        mcpflow.StatusFailed,
	mcp.TaskStatusCancelled:     mcpflow.StatusCancelled,
}

// nativeAnswer is one answer of the server: a result or a JSON-RPC error,
// and the route it came by.
type nativeAnswer struct {
	raw   json.RawMessage
	rpc   *mcp.JSONRPCErrorDetails
	route *route.Route
}

// nativeSend sends one request on a session with the route's _meta.
type nativeSend func(ctx context.Context, s *session.Session, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error)

// Submit sends the task-augmented tools/call with the request's arguments
// verbatim and, when the request has a local task id, the idempotency key
// in its _meta (mcpflow.SubmitKeyMeta), like Ordinary. It returns
// the upstream taskId as remote id (the activity validates it with
// Submission.Validate) with the task's snapshot (working as a rule) and a
// copy of the request's driver data.
func (d *Native) Submit(ctx context.Context, req mcpflow.SubmitRequest) (mcpflow.Submission, error) {
	tool := req.DriverData[mcpflow.DriverDataNativeTool]
	if strings.TrimSpace(tool) == "" {
		return mcpflow.Submission{}, mcpflow.NewProtocolError("Task driver_data is missing required '%s'", mcpflow.DriverDataNativeTool)
	}
	args := maps.Clone(map[string]any(req.Arguments))
	if args == nil {
		args = map[string]any{}
	}
	if adopt := req.DriverData[mcpflow.DriverDataAdoptTask]; adopt != "" {
		return d.adopt(ctx, req, adopt)
	}
	if req.LocalTaskID != "" {
		ctx = session.WithCallMeta(ctx, map[string]any{mcpflow.SubmitKeyMeta: req.LocalTaskID})
	}
	ctx, pin := route.WithNativePin(ctx, "")
	defer pin.Release()
	ref := mcpflow.TaskReference{ServerName: req.ServerName, UserID: req.UserID, ThreadID: req.ThreadID}
	var modern *modernSubmit
	a, err := d.request(credential.WithSecrets(ctx, req.Secrets), ref, func(ctx context.Context, s *session.Session, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
		if s.Modern() {
			// 2026-07-28: the server decides; a plain call answered with
			// a task (or at once).
			res, err := s.CallTool(ctx, tool, args, meta)
			modern = &modernSubmit{res: res, err: err}
			var ta *session.TaskAnswer
			if errors.As(err, &ta) || err == nil {
				return nil, nil, nil
			}
			return nil, nil, err
		}
		return s.CallToolTask(ctx, tool, args, meta)
	})
	if err != nil {
		return mcpflow.Submission{}, err
	}
	if modern != nil {
		return d.modernSubmission(ctx, req, modern)
	}
	if a.rpc != nil {
		return mcpflow.Submission{}, fmt.Errorf("MCP tool '%s' on server '%s' refused the task-augmented call: %s", tool, req.ServerName, rpcText(a.rpc))
	}
	var created struct {
		Task json.RawMessage `json:"task"`
	}
	if err := json.Unmarshal(a.raw, &created); err != nil || len(created.Task) == 0 || string(created.Task) == "null" {
		return mcpflow.Submission{}, mcpflow.NewProtocolError("MCP tool '%s' on server '%s' answered a task-augmented tools/call without a task (CreateTaskResult)", tool, req.ServerName)
	}
	t, err := parseNativeTask(created.Task, "tools/call", req.ServerName)
	if err != nil {
		return mcpflow.Submission{}, err
	}
	ref.RemoteTaskID = t.id
	snap, err := d.snapshot(ctx, ref, t)
	if err != nil {
		if mcpflow.IsProtocolError(err) {
			return mcpflow.Submission{}, err
		}
		// The task exists: its first poll reads what could not be read now.
		snap = mcpflow.Snapshot{Status: mcpflow.StatusWorking}
	}
	pin.Task(t.id, !snap.Status.IsTerminal())
	return mcpflow.Submission{RemoteTaskID: t.id, Snapshot: snap, DriverData: maps.Clone(req.DriverData)}, nil
}

// modernSubmit is the answer of a 2026-07-28 submit: a task (a
// *TaskAnswer error) or a result at once.
type modernSubmit struct {
	res *mcp.CallToolResult
	err error
}

// modernSubmission turns a 2026-07-28 submit's answer into the task's
// submission: the task the server started, or, when the server answered
// at once, a task that is already over with that result.
func (d *Native) modernSubmission(ctx context.Context, req mcpflow.SubmitRequest, m *modernSubmit) (mcpflow.Submission, error) {
	var ta *session.TaskAnswer
	if errors.As(m.err, &ta) {
		req.DriverData = maps.Clone(req.DriverData)
		req.DriverData[mcpflow.DriverDataAdoptTask] = ta.TaskID
		return d.adopt(ctx, req, ta.TaskID)
	}
	snap, err := completedSnapshot(m.res, req.ServerName)
	if err != nil {
		return mcpflow.Submission{}, err
	}
	return mcpflow.Submission{RemoteTaskID: "immediate:" + req.LocalTaskID, Snapshot: snap, DriverData: maps.Clone(req.DriverData)}, nil
}

// adopt takes over the task remoteID the server started for the call (it
// answered a tools/call with it): no call is sent; the task is read with
// tasks/get, and its session pinned while it runs, as after a submit.
func (d *Native) adopt(ctx context.Context, req mcpflow.SubmitRequest, remoteID string) (mcpflow.Submission, error) {
	ctx, pin := route.WithNativePin(ctx, remoteID)
	defer pin.Release()
	ref := mcpflow.TaskReference{ServerName: req.ServerName, UserID: req.UserID, ThreadID: req.ThreadID, RemoteTaskID: remoteID}
	t, gone, err := d.get(ctx, ref)
	var snap mcpflow.Snapshot
	switch {
	case err != nil && mcpflow.IsProtocolError(err):
		return mcpflow.Submission{}, err
	case err != nil:
		// The task exists (the server just named it): its first poll
		// reads what could not be read now.
		snap = mcpflow.Snapshot{Status: mcpflow.StatusWorking}
	case gone.Status != "":
		snap = gone
	default:
		if snap, err = d.snapshot(ctx, ref, t); err != nil {
			if mcpflow.IsProtocolError(err) {
				return mcpflow.Submission{}, err
			}
			snap = mcpflow.Snapshot{Status: mcpflow.StatusWorking}
		}
	}
	pin.Task(remoteID, !snap.Status.IsTerminal())
	return mcpflow.Submission{RemoteTaskID: remoteID, Snapshot: snap, DriverData: maps.Clone(req.DriverData)}, nil
}

// completedSnapshot is the snapshot of a tool result: completed with its
// value (resultValue) and its own content blocks (Snapshot.Content, with
// ResultStructured when the value is its structuredContent), or failed
// with its text when isError.
func completedSnapshot(res *mcp.CallToolResult, server string) (mcpflow.Snapshot, error) {
	if res.IsError {
		// A tool error: the task failed, and keeps the error's own blocks
		// for MCP clients (a tool error, not a failed request, to them).
		snap := failedSnapshot(resultText(res.Content))
		if blocks, err := contentBlocks(res); err == nil {
			snap.Content = blocks
		}
		return snap, nil
	}
	v, structured, err := resultValue(res)
	if err != nil {
		return mcpflow.Snapshot{}, mcpflow.NewProtocolError("MCP tool result of server '%s': %v", server, err)
	}
	snap := mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: v}
	if blocks, err := contentBlocks(res); err == nil {
		// Blocks that cannot be encoded are left out: the endpoint then
		// renders the result, as for a task of the ordinary driver.
		snap.Content, snap.ResultStructured = blocks, structured
	}
	return snap, nil
}

// contentBlocks is the JSON array of res's content blocks ([] for none),
// encoded as ConvertResult encodes an ordinary call's blocks.
func contentBlocks(res *mcp.CallToolResult) (json.RawMessage, error) {
	blocks := res.Content
	if blocks == nil {
		blocks = []mcp.Content{}
	}
	b, err := json.Marshal(blocks)
	if err != nil {
		return nil, fmt.Errorf("encode content: %w", err)
	}
	return b, nil
}

// Status sends tasks/get and maps the task; a terminal one is read with
// tasks/result (2025-11-25; in 2026-07-28 tasks/get carries the outcome).
func (d *Native) Status(ctx context.Context, r mcpflow.TaskReference) (snap mcpflow.Snapshot, err error) {
	if strings.HasPrefix(r.RemoteTaskID, "immediate:") {
		return mcpflow.Snapshot{}, mcpflow.NewProtocolError("the task ended when it was submitted; it has nothing to poll")
	}
	ctx, pin := route.WithNativePin(ctx, r.RemoteTaskID)
	defer pin.Release()
	defer func() { pinOutcome(pin, r.RemoteTaskID, snap, err) }()
	t, gone, err := d.get(ctx, r)
	if err != nil || gone.Status != "" {
		return gone, err
	}
	return d.snapshot(ctx, r, t)
}

// Cancel sends tasks/cancel and returns the task's terminal state. A
// -32602 answer (the task is terminal already, or unknown) is followed by
// tasks/get, which reports the actual terminal status (and tasks/result its
// outcome); an unknown task is failed (task_not_found).
func (d *Native) Cancel(ctx context.Context, r mcpflow.TaskReference) (snap mcpflow.Snapshot, err error) {
	ctx, pin := route.WithNativePin(ctx, r.RemoteTaskID)
	defer pin.Release()
	defer func() { pinOutcome(pin, r.RemoteTaskID, snap, err) }()
	modern := false
	a, err := d.request(ctx, r, func(ctx context.Context, s *session.Session, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
		modern = s.Modern()
		return s.CancelTask(ctx, r.RemoteTaskID, meta)
	})
	if err != nil {
		return mcpflow.Snapshot{}, err
	}
	var t nativeTask
	switch {
	case (modern && a.rpc == nil) || (a.rpc != nil && a.rpc.Code == mcp.INVALID_PARAMS):
		// The extension acknowledges a cancel, and -32602 answers one of a
		// task that ended: tasks/get says where the task is (a cancel that
		// has not landed yet is retried).
		var gone mcpflow.Snapshot
		t, gone, err = d.get(ctx, r)
		if err != nil || gone.Status != "" {
			return gone, err
		}
	case a.rpc != nil:
		return mcpflow.Snapshot{}, fmt.Errorf("MCP tasks/cancel on server '%s' failed: %s", r.ServerName, rpcText(a.rpc))
	default:
		if t, err = parseNativeTask(a.raw, "tasks/cancel", r.ServerName); err != nil {
			return mcpflow.Snapshot{}, err
		}
		if err := t.matches(r.RemoteTaskID); err != nil {
			return mcpflow.Snapshot{}, err
		}
	}
	if !t.status.IsTerminal() {
		return mcpflow.Snapshot{}, fmt.Errorf("MCP task on server '%s' is still %s after tasks/cancel", r.ServerName, t.status)
	}
	return d.snapshot(ctx, r, t)
}

// question returns the waiting question of an input_required task, and
// keeps a tasks/result request of the task open in this process (a reader)
// on which the server sends it (see Questions).
func (d *Native) question(ctx context.Context, r mcpflow.TaskReference) *question.Held {
	if d.Questions == nil || r.RemoteTaskID == "" {
		return nil
	}
	return d.Questions.Ask(ctx, question.Key{Server: r.ServerName, TaskID: r.RemoteTaskID}, func(rctx context.Context) error {
		rctx, pin := route.WithNativePin(rctx, r.RemoteTaskID) // on the task's own session
		defer pin.Release()
		_, err := d.request(rctx, r, func(ctx context.Context, s *session.Session, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
			return s.AwaitTaskResult(ctx, r.RemoteTaskID, meta)
		})
		return err
	})
}

// Answer implements mcpflow.InputDriver: it sends the answer as the
// response to the server's elicitation/create request of the task, once.
// A question that no longer waits in this process is mcpflow.ErrInputGone.
//
// In 2026-07-28 (the Tasks extension) the question is the task's, not a
// request held in memory: the answer goes with tasks/update to the task's
// current elicitation, from any worker; a task whose question is gone or
// changed is ErrInputGone.
func (d *Native) Answer(ctx context.Context, r mcpflow.TaskReference, answer mcpflow.InputAnswer) error {
	if key := (question.Key{Server: r.ServerName, TaskID: r.RemoteTaskID}); d.Questions.Waiting(key) != nil {
		return d.Questions.Answer(ctx, key, answer)
	}
	var gone bool
	_, err := d.request(ctx, r, func(ctx context.Context, s *session.Session, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
		if !s.Modern() {
			gone = true
			return nil, nil, nil
		}
		raw, rpc, err := s.GetTask(ctx, r.RemoteTaskID, meta)
		if err != nil || rpc != nil {
			gone = rpc != nil
			return nil, nil, err
		}
		t, err := parseNativeTask(raw, "tasks/get", r.ServerName)
		if err != nil || t.status != mcp.TaskStatusInputRequired {
			gone = true
			return nil, nil, nil
		}
		responses := answer.Responses
		if len(responses) > 0 {
			// A client's answers to some of the requests, keyed as the
			// server keyed them: only to requests still open.
			for key := range responses {
				if _, open := t.inputRequests[key]; !open {
					gone = true
					return nil, nil, nil
				}
			}
		} else {
			key, _, ok := t.question()
			if !ok {
				gone = true
				return nil, nil, nil
			}
			result := map[string]any{"action": answer.Action}
			if answer.Content != nil {
				result["content"] = answer.Content
			}
			b, _ := json.Marshal(result)
			responses = map[string]json.RawMessage{key: b}
		}
		_, rpc, err = s.UpdateTask(ctx, r.RemoteTaskID, responses, meta)
		if rpc != nil {
			gone = true
		}
		return nil, nil, err
	})
	if err != nil {
		return err
	}
	if gone {
		return mcpflow.ErrInputGone
	}
	return nil
}

// HoldsQuestion implements mcpflow.InputDriver: a native task's question
// waits in the memory of the process whose reader received it.
func (d *Native) HoldsQuestion(ref mcpflow.TaskReference) bool {
	return d.Questions.Waiting(question.Key{Server: ref.ServerName, TaskID: ref.RemoteTaskID}) != nil
}

// get sends tasks/get: the task, or the failed snapshot of a task that is
// gone (zero otherwise).
func (d *Native) get(ctx context.Context, r mcpflow.TaskReference) (t nativeTask, gone mcpflow.Snapshot, err error) {
	modern := false
	a, err := d.request(ctx, r, func(ctx context.Context, s *session.Session, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
		modern = s.Modern()
		return s.GetTask(ctx, r.RemoteTaskID, meta)
	})
	if err != nil {
		return t, gone, err
	}
	if a.rpc != nil {
		if a.rpc.Code == mcp.INVALID_PARAMS {
			return t, goneSnapshot(ctx, r, a.rpc), nil
		}
		return t, gone, fmt.Errorf("MCP tasks/get on server '%s' failed: %s", r.ServerName, rpcText(a.rpc))
	}
	t, err = parseNativeTask(a.raw, "tasks/get", r.ServerName)
	if err == nil {
		err = t.matches(r.RemoteTaskID)
	}
	t.modern = modern
	return t, gone, err
}

// snapshot maps t; a completed or failed task is read with tasks/result.
func (d *Native) snapshot(ctx context.Context, r mcpflow.TaskReference, t nativeTask) (mcpflow.Snapshot, error) {
	s := mcpflow.Snapshot{Status: nativeStatuses[t.status]}
	switch t.status {
	case mcp.TaskStatusWorking:
		s.PollAfterSeconds = t.pollAfter
		if t.message != "" {
			s.Message = &t.message
		}
	case mcp.TaskStatusInputRequired:
		s.PollAfterSeconds = t.pollAfter
		s.InputRequired = map[string]any{"message": t.message}
		if t.modern {
			// The extension: the question is the task's inputRequests,
			// answered with tasks/update from any worker.
			if _, q, ok := t.question(); ok {
				s.InputRequired = q
				s.InputAnswerable = true
			} else if t.message == "" {
				s.InputRequired = map[string]any{"message": "the server asks for input mcpflow cannot give (sampling or roots)"}
			}
			if all := t.requests(); all != nil {
				// Every request as the server keyed it: an MCP client
				// answers them (some or all) with tasks/update.
				s.InputRequired[mcpflow.InputRequestsKey] = all
			}
			break
		}
		if hq := d.question(ctx, r); hq != nil {
			s.InputRequired = map[string]any{"message": hq.Message}
			if hq.Schema != nil {
				s.InputRequired["requested_schema"] = hq.Schema
			}
			s.InputAnswerable = true
		}
	case mcp.TaskStatusCancelled:
		if t.message != "" {
			s.Error = &t.message
		}
	default:
		var err error
		if t.modern {
			s, err = t.outcome(r.ServerName)
		} else {
			s, err = d.result(ctx, r, t)
		}
		if err != nil {
			return mcpflow.Snapshot{}, err
		}
	}
	out, err := mcpflow.NewSnapshot(s)
	if err != nil {
		return mcpflow.Snapshot{}, mcpflow.NewProtocolError("MCP task of server '%s': %v", r.ServerName, err)
	}
	return out, nil
}

// result reads the outcome of a completed or failed task with
// tasks/result.
func (d *Native) result(ctx context.Context, r mcpflow.TaskReference, t nativeTask) (mcpflow.Snapshot, error) {
	a, err := d.request(ctx, r, func(ctx context.Context, s *session.Session, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
		return s.TaskResult(ctx, r.RemoteTaskID, meta)
	})
	if err != nil {
		return mcpflow.Snapshot{}, err
	}
	if a.rpc != nil {
		if a.rpc.Code == mcp.INVALID_PARAMS {
			return goneSnapshot(ctx, r, a.rpc), nil
		}
		// tasks/result answers what the request itself would have: this
		// error is the task's outcome.
		return failedSnapshot(a.rpc.Message, t.message), nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(a.raw, &res); err != nil {
		return mcpflow.Snapshot{}, mcpflow.NewProtocolError("MCP tasks/result answer of server '%s' is not a tool result: %v", r.ServerName, err)
	}
	a.route.Translate(&res, t.createdAt)
	if t.status == mcp.TaskStatusFailed || res.IsError {
		return failedSnapshot(resultText(res.Content), t.message), nil
	}
	return completedSnapshot(&res, r.ServerName)
}

// request runs send on the session of r (a task's own shared session
// while it lives, see route.TaskPin). A JSON-RPC error the server answered with
// is part of the answer and never retires the session, unless it says the
// server does not know the session (Session.taskRequest).
func (d *Native) request(ctx context.Context, r mcpflow.TaskReference, send nativeSend) (nativeAnswer, error) {
	if d == nil || d.Run == nil {
		return nativeAnswer{}, errors.New("native MCP task driver has no session runner")
	}
	var a nativeAnswer
	err := d.Run(ctx, r.ServerName, r.UserID, r.ThreadID, func(ctx context.Context, s *session.Session, rt *route.Route) error {
		raw, rpc, err := send(ctx, s, rt.Meta())
		a = nativeAnswer{raw: raw, rpc: rpc, route: rt}
		return err
	})
	return a, err
}

// goneSnapshot is the failed snapshot of an upstream task the server no
// longer knows (task_not_found). When the request could not reach the
// session the task was started on (it ended, or another mcpflow process
// started the task), the server keeps its tasks per session: the message
// says so, and the runtime notes it for the server.
func goneSnapshot(ctx context.Context, r mcpflow.TaskReference, rpc *mcp.JSONRPCErrorDetails) mcpflow.Snapshot {
	msg := fmt.Sprintf("Remote MCP task was not found on MCP server '%s' (%s): its ttl expired or the server no longer knows it", r.ServerName, drvErrorCodeTaskNotFound)
	if tp := route.PinFrom(ctx); tp != nil && tp.Moved() {
		tp.Forgotten()
		msg = fmt.Sprintf("Remote MCP task was not found on MCP server '%s' (%s): the MCP session it was started in ended (the server restarted, the connection was lost or the mcpflow worker restarted), and this server keeps its tasks per session, so the task cannot be re-attached", r.ServerName, drvErrorCodeTaskNotFound)
	}
	if detail := strings.TrimSpace(rpc.Message); detail != "" {
		msg += ": " + mcpflow.TruncateChars(detail, drvErrorDetailChars)
	}
	return mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: &msg}
}

// failedSnapshot is a failed snapshot with the first non-blank text.
func failedSnapshot(texts ...string) mcpflow.Snapshot {
	msg := "Remote MCP task failed" // when it says nothing else
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" {
			msg = t
			break
		}
	}
	return mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: &msg}
}

// resultText joins the text blocks of content.
func resultText(content []mcp.Content) string { return strings.Join(textsOf(content), "\n") }

// textsOf returns the texts of content's text blocks.
func textsOf(content []mcp.Content) []string {
	var texts []string
	for _, c := range content {
		switch tc := c.(type) {
		case mcp.TextContent:
			texts = append(texts, tc.Text)
		case *mcp.TextContent:
			if tc != nil {
				texts = append(texts, tc.Text)
			}
		}
	}
	return texts
}

// resultValue is a completed task's result: its structuredContent when
// present (structured true), else its content blocks; numbers stay exact
// (json.Number).
func resultValue(res *mcp.CallToolResult) (v any, structured bool, err error) {
	raw := bytes.TrimSpace(res.RawStructuredContent)
	structured = len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
	if !structured {
		if raw, err = contentBlocks(res); err != nil {
			return nil, false, err
		}
	}
	if err := mcpflow.DecodeExact(raw, &v); err != nil {
		return nil, false, fmt.Errorf("structuredContent is not valid JSON: %w", err)
	}
	return v, structured, nil
}

// rpcText renders a JSON-RPC error the server answered with.
func rpcText(e *mcp.JSONRPCErrorDetails) string {
	msg := strings.TrimSpace(e.Message)
	if msg == "" {
		msg = "(no message)"
	}
	return fmt.Sprintf("%s (JSON-RPC error %d)", mcpflow.TruncateChars(msg, drvErrorDetailChars), e.Code)
}

// nativeTask is a Task object of the protocol as the driver reads it.
type nativeTask struct {
	id, method, server string
	status             mcp.TaskStatus
	message            string
	createdAt          time.Time // zero when absent or unreadable
	pollAfter          *float64  // pollInterval (pollIntervalMs) in seconds
	// The Tasks extension of 2026-07-28 (modern): tasks/get carries the
	// questions and the outcome.
	modern        bool
	inputRequests map[string]json.RawMessage
	result        json.RawMessage          // completed
	failure       *mcp.JSONRPCErrorDetails // failed
}

// question returns the task's question (2026-07-28): the first, by key,
// of its inputRequests that is a form elicitation, as mcpflow's question
// {"message", "requested_schema"}.
func (t nativeTask) question() (string, map[string]any, bool) {
	for _, key := range slices.Sorted(maps.Keys(t.inputRequests)) {
		var req struct {
			Method string `json:"method"`
			Params struct {
				Mode            string         `json:"mode"`
				Message         string         `json:"message"`
				RequestedSchema map[string]any `json:"requestedSchema"`
			} `json:"params"`
		}
		if mcpflow.DecodeExact(t.inputRequests[key], &req) != nil || req.Method != string(mcp.MethodElicitationCreate) || (req.Params.Mode != "" && req.Params.Mode != "form") {
			continue
		}
		q := map[string]any{"message": req.Params.Message}
		if req.Params.RequestedSchema != nil {
			q["requested_schema"] = req.Params.RequestedSchema
		}
		return key, q, true
	}
	return "", nil, false
}

// requests returns the task's inputRequests as JSON values (numbers kept
// exactly), or nil when it has none.
func (t nativeTask) requests() map[string]any {
	if len(t.inputRequests) == 0 {
		return nil
	}
	out := make(map[string]any, len(t.inputRequests))
	for k, raw := range t.inputRequests {
		var v any
		if mcpflow.DecodeExact(raw, &v) == nil {
			out[k] = v
		}
	}
	return out
}

// outcome is the snapshot of a 2026-07-28 task that ended: its inlined
// result (completed; isError makes it failed) or error (failed).
func (t nativeTask) outcome(server string) (mcpflow.Snapshot, error) {
	if t.status == mcp.TaskStatusFailed {
		if t.failure != nil {
			return failedSnapshot(t.failure.Message, t.message), nil
		}
		return failedSnapshot(t.message), nil
	}
	if len(t.result) == 0 {
		return mcpflow.Snapshot{}, mcpflow.NewProtocolError("MCP task of server '%s' completed without its result", server)
	}
	raw := t.result
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		return mcpflow.Snapshot{}, mcpflow.NewProtocolError("MCP task result of server '%s' is not a tool result: %v", server, err)
	}
	return completedSnapshot(res, server)
}

// parseNativeTask reads a Task object from method's answer. taskId and
// status are required (a known status); statusMessage, createdAt and
// pollInterval are read when well-formed and ignored otherwise.
func parseNativeTask(raw json.RawMessage, method, server string) (nativeTask, error) {
	t := nativeTask{method: method, server: server}
	malformed := func(format string, args ...any) error {
		return mcpflow.NewProtocolError("Malformed MCP task from %s on server '%s': %s", method, server, fmt.Sprintf(format, args...))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return t, malformed("the task is not a JSON object")
	}
	str := func(key string) (string, bool) {
		var s string
		v, ok := fields[key]
		if !ok || json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	}
	id, ok := str("taskId")
	if !ok || id == "" {
		return t, malformed("taskId must be a non-empty string")
	}
	t.id = id
	status, _ := str("status")
	if _, known := nativeStatuses[mcp.TaskStatus(status)]; !known {
		return t, malformed("unknown status %s", strconv.Quote(mcpflow.TruncateChars(status, 50)))
	}
	t.status = mcp.TaskStatus(status)
	t.message, _ = str("statusMessage")
	if at, ok := str("createdAt"); ok {
		if ts, err := time.Parse(time.RFC3339Nano, at); err == nil {
			t.createdAt = ts
		}
	}
	for _, key := range []string{"pollInterval", "pollIntervalMs"} {
		var ms json.Number
		if v, ok := fields[key]; ok && json.Unmarshal(v, &ms) == nil {
			if f, err := ms.Float64(); err == nil && mcpflow.ValidatePollAfter(f/1000) == nil {
				secs := f / 1000
				t.pollAfter = &secs
			}
		}
	}
	if raw, ok := fields["inputRequests"]; ok {
		_ = json.Unmarshal(raw, &t.inputRequests)
	}
	if raw, ok := fields["result"]; ok && string(raw) != "null" {
		t.result = raw
	}
	if raw, ok := fields["error"]; ok && string(raw) != "null" {
		var e mcp.JSONRPCErrorDetails
		if json.Unmarshal(raw, &e) == nil {
			t.failure = &e
		}
	}
	return t, nil
}

// matches checks the task's id against the persisted remote id.
func (t nativeTask) matches(want string) error {
	if t.id != want {
		return mcpflow.NewProtocolError("MCP task from %s on server '%s' does not match the persisted remote task: expected '%s', got '%s'", t.method, t.server, want, t.id)
	}
	return nil
}
