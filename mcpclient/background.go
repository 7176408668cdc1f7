package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// Built-in tools that manage a thread's durable tasks (spec §2.9). They are
// listed only while the task runtime is installed.
const (
	ToolListBackgroundTasks  = "list_background_tasks"
	ToolCancelBackgroundTask = "cancel_background_task"
	builtinServer            = "mcpflow"
)

// BackgroundTasks is what the built-in task tools need from the task
// runtime: the thread's tasks and a way to request a cancel.
type BackgroundTasks interface {
	ListTasks(ctx context.Context, f mcpflow.TaskFilter) ([]*mcpflow.Task, error)
	CancelTask(ctx context.Context, t *mcpflow.Task) error
}

// SetBackgroundTasks installs (or, with nil, removes) the task store and
// canceller behind the built-in task tools.
func (r *Runtime) SetBackgroundTasks(bt BackgroundTasks) {
	r.mu.Lock()
	r.background = bt
	r.mu.Unlock()
}

func (r *Runtime) backgroundTasks() BackgroundTasks {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.submitter == nil {
		return nil
	}
	return r.background
}

func builtinTools() []mcpflow.Tool {
	return []mcpflow.Tool{
		{Name: ToolListBackgroundTasks, OriginalName: ToolListBackgroundTasks, Server: builtinServer,
			Description: "List the durable background tasks of this conversation with their status.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"active_only":{"type":"boolean","default":false,"description":"Only tasks that are still running or waiting for input."}}}`)},
		{Name: ToolCancelBackgroundTask, OriginalName: ToolCancelBackgroundTask, Server: builtinServer,
			Description: "Cancel one active durable background task of this conversation, by task ID or task name.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"The task ID or the task name."}}}`)},
	}
}

type bgTask struct {
	TaskID          string         `json:"task_id"`
	TaskName        string         `json:"task_name"`
	Status          mcpflow.Status `json:"status"`
	CreatedAt       time.Time      `json:"created_at"`
	UpdatedAt       time.Time      `json:"updated_at"`
	Error           *string        `json:"error"`
	CancelRequested bool           `json:"cancel_requested"`
}

func bgRecord(t *mcpflow.Task) bgTask {
	var e *string
	if t.Error != nil {
		s := Neutralize(*t.Error)
		e = &s
	}
	return bgTask{TaskID: t.ID, TaskName: Neutralize(t.TaskName), Status: t.Status, CreatedAt: t.CreatedAt.UTC(),
		UpdatedAt: t.UpdatedAt.UTC(), Error: e, CancelRequested: t.CancelPending()}
}

var neutralizer = strings.NewReplacer("--- END USER INPUT ---", "[END USER INPUT]", "--- BEGIN USER INPUT ---", "[BEGIN USER INPUT]", "<", "&lt;", ">", "&gt;")

// Neutralize makes text from a remote server safe to show inside prompt
// structure: tags cannot be opened or closed and the untrusted-input
// markers cannot be forged.
func Neutralize(s string) string { return neutralizer.Replace(s) }

// callBuiltin runs a built-in task tool; ok is false for other names.
func (r *Runtime) callBuiltin(ctx context.Context, call mcpflow.ToolCall) (*mcpflow.ToolResult, bool, error) {
	if store, record := r.approvalStore(); call.Tool == ToolReviewApprovals && r.reviews(ctx) {
		res, err := reviewApprovals(ctx, store, record, call)
		return res, true, err
	}
	if !isBuiltin(call.Tool) {
		return nil, false, nil
	}
	bt := r.backgroundTasks()
	if bt == nil {
		return nil, false, nil
	}
	var out any
	var err error
	if call.Tool == ToolListBackgroundTasks {
		out, err = listBackground(ctx, bt, call)
	} else {
		out = cancelBackground(ctx, bt, call)
	}
	if err != nil {
		return nil, true, err
	}
	b, _ := json.Marshal(out)
	text, _ := json.Marshal(mcp.NewTextContent(string(b)))
	var sc any
	_ = json.Unmarshal(b, &sc)
	return &mcpflow.ToolResult{Content: []json.RawMessage{text}, StructuredContent: sc}, true, nil
}

func listBackground(ctx context.Context, bt BackgroundTasks, call mcpflow.ToolCall) (any, error) {
	active, _ := call.Arguments["active_only"].(bool)
	limit := 20
	// Arguments decode numbers as json.Number (mcpflow.DecodeArguments);
	// a float64 still comes from callers that build the map themselves.
	switch v := call.Arguments["limit"].(type) {
	case json.Number:
		if f, err := v.Float64(); err == nil {
			limit = min(max(int(f), 1), 50)
		}
	case float64:
		limit = min(max(int(v), 1), 50)
	}
	tasks, err := bt.ListTasks(ctx, mcpflow.TaskFilter{UserID: call.UserID, ThreadID: call.ThreadID, Limit: limit, ActiveOnly: active})
	if err != nil {
		return nil, err
	}
	recs := make([]bgTask, 0, len(tasks))
	for _, t := range tasks {
		recs = append(recs, bgRecord(t))
	}
	return map[string]any{"tasks": recs}, nil
}

const cancelMessage = "Cancellation requested. mcpflow will keep retrying safely if the remote server is temporarily unavailable."

// cancelBackground matches among the thread's active tasks by exact id or
// by case-folded, trimmed name (spec §2.9); without a task (omitted or
// null), the thread's only active task.
func cancelBackground(ctx context.Context, bt BackgroundTasks, call mcpflow.ToolCall) any {
	fail := func(msg string) any { return map[string]any{"cancelled": false, "message": msg} }
	want, ok := call.Arguments["task"].(string)
	if !ok && call.Arguments["task"] != nil {
		// Not an omitted task: a value that names no task cancels none.
		return fail("task must be a string: the task ID or the task name")
	}
	want = strings.TrimSpace(want)
	tasks, err := bt.ListTasks(ctx, mcpflow.TaskFilter{UserID: call.UserID, ThreadID: call.ThreadID, Limit: 50, ActiveOnly: true})
	if err != nil {
		return fail("Background tasks are unavailable right now: " + mcpflow.ErrorMessage(err))
	}
	var matches []*mcpflow.Task
	for _, t := range tasks {
		if t.ID == want || (want != "" && strings.EqualFold(strings.TrimSpace(t.TaskName), want)) {
			matches = append(matches, t)
		}
	}
	if want == "" && len(tasks) == 1 {
		matches = tasks
	}
	switch {
	case len(matches) == 0:
		return fail("No active background task matches this request")
	case len(matches) > 1:
		var names []string
		for i, t := range matches {
			if i == 5 {
				break
			}
			names = append(names, Neutralize(t.TaskName)+" ("+t.ID+")")
		}
		return fail("More than one active background task matches; specify one by its name or, for tasks of the same name, its ID: " + strings.Join(names, ", "))
	}
	t := matches[0]
	if err := bt.CancelTask(ctx, t); err != nil {
		if mcpflow.ErrorCode(err) == mcpflow.ENotFound {
			return fail("The selected background task no longer exists")
		}
		return fail(fmt.Sprintf("Cancellation could not be requested: %s", mcpflow.ErrorMessage(err)))
	}
	rec := bgRecord(t)
	rec.CancelRequested = true
	return map[string]any{"cancelled": t.Status == mcpflow.StatusCancelled, "task": rec, "message": cancelMessage}
}

// isBuiltin reports whether tool is one of the built-in task tools.
func isBuiltin(tool string) bool {
	return tool == ToolListBackgroundTasks || tool == ToolCancelBackgroundTask || tool == ToolReviewApprovals
}
