package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
)

// tasksPageSize is the page size of tasks/list.
const tasksPageSize = 50

// taskRecheck bounds how long a waiter trusts the inbox alone: it reads
// the task row at least this often.
const taskRecheck = 2 * time.Second

// mcpStatus maps a task status to the MCP task status: submitted and
// working are both "working".
func mcpStatus(s mcpflow.Status) mcp.TaskStatus {
	switch s {
	case mcpflow.StatusInputRequired:
		return mcp.TaskStatusInputRequired
	case mcpflow.StatusCompleted:
		return mcp.TaskStatusCompleted
	case mcpflow.StatusFailed:
		return mcp.TaskStatusFailed
	case mcpflow.StatusCancelled:
		return mcp.TaskStatusCancelled
	}
	return mcp.TaskStatusWorking
}

func isoTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// statusMessage is the task's statusMessage: the error of a failed or
// cancelled task, the question of one that needs input, a pending cancel
// (with the last remote cancel attempt's error, cancelErr, while it is
// retried), else the server's progress message (progress; nil when none).
func statusMessage(status mcpflow.Status, errText *string, input map[string]any, cancelRequested bool, cancelErr, progress *string) string {
	var msg string
	switch status {
	case mcpflow.StatusFailed, mcpflow.StatusCancelled:
		if errText != nil {
			msg = *errText
		}
	case mcpflow.StatusInputRequired:
		msg = inputQuestion(input)
	default:
		switch {
		case cancelRequested && cancelErr != nil && *cancelErr != "":
			msg = "cancellation requested; the last attempt to cancel the remote task failed and is retried: " + *cancelErr
		case cancelRequested:
			msg = "cancellation requested"
		case progress != nil:
			msg = *progress
		}
	}
	return mcpflow.TruncateChars(msg, mcpflow.MaxAPIErrorChars)
}

// inputQuestion renders what an input_required task asks: its "message"
// (or "question", "prompt") when it has one, else the whole payload.
func inputQuestion(input map[string]any) string {
	for _, k := range []string{"message", "question", "prompt"} {
		if s, ok := input[k].(string); ok && s != "" {
			return s
		}
	}
	if len(input) == 0 {
		return "input required"
	}
	b, _ := mcpflow.CanonicalJSON(input)
	return string(b)
}

// withLink appends the task's Temporal Web UI link (Options.TaskLink) to a
// statusMessage, shortening the message so that the link survives the
// length bound.
func (s *Server) withLink(msg, taskID string) string {
	if s.opts.TaskLink == nil {
		return msg
	}
	link := s.opts.TaskLink(taskID)
	if link == "" {
		return msg
	}
	if msg == "" {
		return "Temporal Web UI: " + link
	}
	suffix := " (Temporal Web UI: " + link + ")"
	return mcpflow.TruncateChars(msg, max(mcpflow.MaxAPIErrorChars-utf8.RuneCountInString(suffix), 0)) + suffix
}

// task is a task row as an MCP Task.
func (s *Server) task(t *mcpflow.Task) mcp.Task {
	poll := s.opts.PollInterval.Milliseconds()
	out := mcp.Task{TaskId: t.ID, Status: mcpStatus(t.Status), CreatedAt: isoTime(t.CreatedAt), LastUpdatedAt: isoTime(t.UpdatedAt),
		StatusMessage: s.withLink(statusMessage(t.Status, t.Error, t.InputRequired, t.CancelPending(), t.LastCancelError, t.StatusMessage), t.ID)}
	if !t.Status.IsTerminal() {
		out.PollInterval = &poll
	}
	return out
}

// ownTask reads a task of the session's user and thread; any other is
// "not found" (-32602), as if it did not exist.
func (c *call) ownTask(ctx context.Context, id string) (*mcpflow.Task, *rpcError) {
	if !mcpflow.ValidTaskID(id) {
		return nil, invalidParams("Task not found: %s", truncate(id, 100))
	}
	t, err := c.s.opts.Tasks.GetTask(ctx, id)
	if err == nil && (t.UserID != c.req.UserID || t.ThreadID != c.req.ThreadID) {
		err = mcpflow.Errorf(mcpflow.ENotFound, "not found")
	}
	if err != nil {
		if mcpflow.ErrorCode(err) == mcpflow.ENotFound {
			return nil, invalidParams("Task not found: %s", id)
		}
		return nil, c.domainError("read task", err)
	}
	return t, nil
}

// paramTask reads the task the request's params.taskId names (of the
// session's user and thread).
func (c *call) paramTask(ctx context.Context) (*mcpflow.Task, *rpcError) {
	if c.msg.paramsErr != nil {
		return nil, c.msg.paramsErr
	}
	id := c.msg.Params.TaskID
	if id == nil || *id == "" {
		return nil, invalidParams("taskId is required")
	}
	return c.ownTask(ctx, *id)
}

// createTaskResult answers a task-augmented call of a submit wrapper; a
// submit that created no task is a JSON-RPC error with the tool's message.
func (c *call) createTaskResult(ctx context.Context, res *mcpflow.ToolResult) (any, *rpcError) {
	if res.IsError {
		return nil, &rpcError{Code: codeToolFailed, Message: contentText(res.Content, "the task could not be submitted"),
			Data: map[string]any{"content": res.Content, "isError": true}}
	}
	t, msg, rerr := c.submittedTask(ctx, res)
	if rerr != nil {
		return nil, rerr
	}
	out := map[string]any{"task": c.s.task(t)}
	if msg != "" {
		out["_meta"] = map[string]any{metaImmediateResponse: msg}
	}
	return out, nil
}

// submittedTask reads back the task of a submit's handle, and its message.
func (c *call) submittedTask(ctx context.Context, res *mcpflow.ToolResult) (*mcpflow.Task, string, *rpcError) {
	var handle struct {
		TaskID  string `json:"task_id"`
		Message string `json:"message"`
	}
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, &handle)
	}
	if err != nil || handle.TaskID == "" {
		return nil, "", c.domainError("read the submit's handle", fmt.Errorf("submit answered without a task id: %w", err))
	}
	t, rerr := c.ownTask(ctx, handle.TaskID)
	return t, handle.Message, rerr
}

// contentText joins the text blocks of tool content.
func contentText(content []json.RawMessage, fallback string) string {
	var text string
	for _, raw := range content {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &b) == nil && b.Type == "text" && b.Text != "" {
			if text != "" {
				text += "\n"
			}
			text += b.Text
		}
	}
	if text == "" {
		return fallback
	}
	return text
}

func (c *call) getTask(ctx context.Context) (any, *rpcError) {
	t, rerr := c.paramTask(ctx)
	if rerr != nil {
		return nil, rerr
	}
	return c.s.task(t), nil
}

// cursor is the opaque tasks/list cursor: the last task of a page.
type cursor struct {
	CreatedAt time.Time `json:"c"`
	ID        string    `json:"i"`
}

func encodeCursor(t *mcpflow.Task) string {
	b, _ := json.Marshal(cursor{CreatedAt: t.CreatedAt, ID: t.ID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*mcpflow.TaskCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	var c cursor
	if json.Unmarshal(b, &c) != nil || !mcpflow.ValidTaskID(c.ID) || c.CreatedAt.IsZero() {
		return nil, false
	}
	return &mcpflow.TaskCursor{CreatedAt: c.CreatedAt, ID: c.ID}, true
}

func (c *call) listTasks(ctx context.Context) (any, *rpcError) {
	if c.msg.paramsErr != nil {
		return nil, c.msg.paramsErr
	}
	f := mcpflow.TaskFilter{UserID: c.req.UserID, ThreadID: c.req.ThreadID, Limit: tasksPageSize + 1}
	if cur := c.msg.Params.Cursor; cur != nil && *cur != "" {
		after, ok := decodeCursor(*cur)
		if !ok {
			return nil, invalidParams("invalid cursor")
		}
		f.After = after
	}
	tasks, err := c.s.opts.Tasks.ListTasks(ctx, f)
	if err != nil {
		return nil, c.domainError("list tasks", err)
	}
	out := struct {
		Tasks      []mcp.Task `json:"tasks"`
		NextCursor string     `json:"nextCursor,omitempty"`
	}{Tasks: make([]mcp.Task, 0, len(tasks))}
	if len(tasks) > tasksPageSize {
		tasks = tasks[:tasksPageSize]
		out.NextCursor = encodeCursor(tasks[len(tasks)-1])
	}
	for _, t := range tasks {
		out.Tasks = append(out.Tasks, c.s.task(t))
	}
	return out, nil
}

// cancelTask signals the cancel, waits up to CancelWait (in a wait slot,
// else not at all) for it to land, and answers the task's real state (see
// the package doc); an ended task is -32602.
func (c *call) cancelTask(ctx context.Context) (any, *rpcError) {
	t, rerr := c.paramTask(ctx)
	if rerr != nil {
		return nil, rerr
	}
	id := t.ID
	terminal := func(t *mcpflow.Task) *rpcError {
		return invalidParams("Cannot cancel task: it is already in terminal status '%s'", mcpStatus(t.Status))
	}
	if t.Status.IsTerminal() {
		return nil, terminal(t)
	}
	if err := c.s.opts.CancelTask(c.origin(ctx), t); err != nil {
		if mcpflow.ErrorCode(err) == mcpflow.EConflict {
			if fresh, rerr := c.ownTask(ctx, id); rerr == nil && fresh.Status.IsTerminal() {
				return nil, terminal(fresh)
			}
		}
		return nil, c.domainError("cancel task", err)
	}
	if release, ok := slot(c.req.AcquireWait); ok {
		wctx, cancel := context.WithTimeout(ctx, c.s.opts.CancelWait)
		t, rerr = c.waitTerminal(wctx, id, t, nil)
		cancel()
		release()
		if rerr != nil {
			return nil, rerr
		}
	}
	if !t.Status.IsTerminal() {
		// The task as it is now (the wait may have ended mid-read, or not
		// run at all).
		if t, rerr = c.ownTask(ctx, id); rerr != nil {
			return nil, rerr
		}
	}
	if !t.Status.IsTerminal() && !t.CancelPending() {
		now := c.s.now()
		t.CancelSignalledAt = &now
	}
	return c.s.task(t), nil
}

// waitTerminal reads the task until it is terminal or ctx ends, woken by
// the inbox (a terminal status always appends an event) and at least
// every taskRecheck; it returns the last read.
func (c *call) waitTerminal(ctx context.Context, id string, t *mcpflow.Task, ask func(*mcpflow.Task)) (*mcpflow.Task, *rpcError) {
	thread := mcpflow.ThreadRef{UserID: c.req.UserID, ThreadID: c.req.ThreadID}
	release := c.s.watch.hold(thread)
	defer release()
	tick := time.NewTicker(taskRecheck)
	defer tick.Stop()
	for !t.Status.IsTerminal() {
		changed := c.s.watch.next(thread)
		fresh, rerr := c.ownTask(ctx, id)
		if ctx.Err() != nil {
			return t, nil
		}
		if rerr != nil {
			return nil, rerr
		}
		if t = fresh; t.Status.IsTerminal() {
			break
		}
		if ask != nil && t.Answerable() {
			ask(t)
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return t, nil
		case <-c.s.stopping:
			return t, nil
		}
	}
	return t, nil
}

// taskResult answers tasks/result once the task is terminal, as the call
// would have. An SSE answer keeps alive while it waits and asks a client
// that can elicit the task's question as an elicitation/create.
func (c *call) taskResult(ctx context.Context) (any, *rpcError) {
	t, rerr := c.paramTask(ctx)
	if rerr != nil || t.Status.IsTerminal() {
		if rerr != nil {
			return nil, rerr
		}
		return c.s.taskResultOf(t), nil
	}
	c.answered = true
	c.waitAndAnswer(ctx, t)
	return nil, nil
}

// waitAndAnswer answers tasks/result of a task that is not terminal yet
// once it is (see taskResult).
func (c *call) waitAndAnswer(ctx context.Context, t *mcpflow.Task) {
	// The wait holds one of the user's wait slots, so one user cannot hold
	// unbounded connections (and the reads behind them) open.
	release, ok := slot(c.req.AcquireWait)
	if !ok {
		tooMany(c.w, c.msg.ID, "too many waiting requests open for this user (tasks/result and tasks/cancel waits and event long polls count together: server.max_waits_per_user); retry shortly, or poll tasks/get")
		return
	}
	defer release()
	// The wait may outlast server.write_timeout_seconds: lift it for this
	// response.
	_ = http.NewResponseController(c.w).SetWriteDeadline(time.Time{})
	var out *lockedSSE
	if acceptsSSE(c.r) {
		out = &lockedSSE{w: newSSEWriter(c.w)}
		out.w.start()
	}
	t, rerr := c.waitResult(ctx, t, out)
	// Freed before the answer is written: a client that got its answer may
	// wait again at once.
	release()
	var answer response
	switch {
	case ctx.Err() != nil:
		// notifications/cancelled, or the client went away (then nobody
		// reads this).
		answer = newResponse(c.msg.ID, nil, &rpcError{Code: codeRequestCancelled, Message: "request cancelled"})
	case rerr != nil:
		answer = newResponse(c.msg.ID, nil, rerr)
	case !t.Status.IsTerminal():
		answer = newResponse(c.msg.ID, nil, internalError("mcpflow stopped before the task finished; call tasks/result again"))
	default:
		answer = newResponse(c.msg.ID, c.s.taskResultOf(t), nil)
	}
	if out != nil {
		out.event("", answer)
		return
	}
	writeJSON(c.w, http.StatusOK, answer)
}

// lockedSSE serializes the writes of a waiting tasks/result stream
// (keep-alives, elicitations, the answer).
type lockedSSE struct {
	mu sync.Mutex
	w  *sseWriter
}

func (l *lockedSSE) comment() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.comment()
}

func (l *lockedSSE) event(id string, v any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.w.event(id, v)
}

// waitResult is waitTerminal without a deadline; on an SSE stream it sends
// keep-alives and asks each answerable question of the task once.
func (c *call) waitResult(ctx context.Context, t *mcpflow.Task, out *lockedSSE) (*mcpflow.Task, *rpcError) {
	if out == nil {
		return c.waitTerminal(ctx, t.ID, t, nil)
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(c.s.opts.KeepAlive)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				out.comment()
			}
		}
	}()
	var ask func(*mcpflow.Task)
	if c.s.opts.AnswerInput != nil && c.caps().elicits {
		asked := ""
		ask = func(t *mcpflow.Task) {
			id := elicitationID(t)
			if id == asked {
				return
			}
			asked = id
			out.event("", elicitationRequest(id, t))
		}
	}
	t, rerr := c.waitTerminal(ctx, t.ID, t, ask)
	close(stop)
	<-stopped
	return t, rerr
}

// taskResultOf is a terminal task's CallToolResult: the upstream's kept
// content blocks (and structuredContent when it had one), else the result
// as structuredContent plus its JSON as text; an error as text with isError.
func (s *Server) taskResultOf(t *mcpflow.Task) callToolResult {
	meta := map[string]any{metaRelatedTask: map[string]string{"taskId": t.ID}}
	switch t.Status {
	case mcpflow.StatusCompleted:
		out := callToolResult{Meta: meta}
		if blocks, ok := upstreamBlocks(t.Content); ok {
			out.Content = blocks
			if t.ResultStructured {
				out.StructuredContent = structuredOf(t)
			}
			return out
		}
		switch {
		case t.Result != nil:
			out.StructuredContent = structuredOf(t)
			b, err := mcpflow.StrictJSON(t.Result)
			if err != nil {
				b = []byte("(the result could not be encoded)")
			}
			out.Content = []json.RawMessage{textContent(string(b))}
		case t.ResultPreview != nil || t.ResultArtifact != nil:
			out.StructuredContent = structuredOf(t)
			text := "The result was too large to keep; see result_artifact."
			if t.ResultPreview != nil {
				text = *t.ResultPreview
			}
			out.Content = []json.RawMessage{textContent(text)}
		default:
			out.Content = []json.RawMessage{textContent("Task completed.")}
		}
		return out
	case mcpflow.StatusFailed:
		if blocks, ok := upstreamBlocks(t.Content); ok {
			// The tool's error result, as the upstream gave it.
			return callToolResult{Content: blocks, IsError: true, Meta: meta}
		}
		return callToolResult{Content: []json.RawMessage{textContent(orText(t.Error, "Task failed."))}, IsError: true, Meta: meta}
	default:
		return callToolResult{Content: []json.RawMessage{textContent(orText(t.Error, "Task was cancelled."))}, IsError: true, Meta: meta}
	}
}

// structuredOf is a completed task's result as structuredContent, which
// is always an object: an object result as it is, any other result as
// {"result": value}; a result too large to keep as {"result_preview",
// "result_truncated", "result_artifact"}; nil when there is none.
func structuredOf(t *mcpflow.Task) any {
	switch {
	case t.Result != nil:
		if _, ok := t.Result.(map[string]any); ok {
			return t.Result
		}
		return map[string]any{"result": t.Result}
	case t.ResultPreview != nil || t.ResultArtifact != nil:
		return map[string]any{"result_preview": t.ResultPreview, "result_truncated": t.ResultTruncated,
			"result_artifact": t.ResultArtifact}
	}
	return nil
}

// upstreamBlocks splits a task's content blocks (a JSON array) into the
// blocks, each as the upstream gave it; false when the task has none (a
// task of the ordinary driver, a row from before blocks were kept, blocks
// dropped for their size) or they are not an array of objects.
func upstreamBlocks(content json.RawMessage) ([]json.RawMessage, bool) {
	if len(content) == 0 {
		return nil, false
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(content, &blocks); err != nil || blocks == nil {
		return nil, false
	}
	for _, b := range blocks {
		if len(b) == 0 || b[0] != '{' {
			return nil, false
		}
	}
	return blocks, true
}

func orText(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}
