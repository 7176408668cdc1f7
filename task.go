package mcpflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// TaskIDPrefix starts every local task id; the id is also the Temporal
// workflow id of the task.
const TaskIDPrefix = "mcp-task-"

// NewTaskID returns a fresh local task id: "mcp-task-" and 32 hex digits.
func NewTaskID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	return TaskIDPrefix + hex.EncodeToString(b[:])
}

var taskIDPattern = regexp.MustCompile(`^mcp-task-[0-9a-f]{32}$`)

// ValidTaskID reports whether id has the shape of a local task id.
func ValidTaskID(id string) bool { return taskIDPattern.MatchString(id) }

// Notification statuses of a task (spec §2.4, DESIGN.md).
const (
	NotificationNone       = "none"
	NotificationPending    = "pending"
	NotificationDispatched = "dispatched"
	NotificationRetry      = "retry"
	NotificationDelivered  = "delivered"
	NotificationDeadLetter = "dead_letter"
)

// Task driver names, stored in a task's row (Task.DriverName).
const (
	// DriverOrdinary drives a task through the ordinary
	// submit/status/cancel tool triple of a task toolset.
	DriverOrdinary = "ordinary-tools"
	// DriverNative drives a task through native MCP Tasks (protocol
	// 2025-11-25): a task-augmented tools/call, then tasks/get,
	// tasks/result and tasks/cancel.
	DriverNative = "native-mcp-tasks"
)

// Task is the projection of one durable task: the row the API reads. The
// task's workflow is its writer (with the poll activity it runs, one
// writer at a time; see RowVersion).
type Task struct {
	ID              string // mcp-task-<32 hex>, also the workflow id
	UserID          string
	ThreadID        string
	RunID           *string
	ToolCallID      *string
	ServerName      string
	DriverName      string
	RemoteTaskID    string // never exposed by the API
	TaskName        string
	Status          Status
	Result          any
	ResultPreview   *string
	ResultTruncated bool
	ResultArtifact  map[string]string
	// Content and ResultStructured are Snapshot.Content and
	// Snapshot.ResultStructured: a completed native task's content blocks
	// as the upstream gave them, and whether Result is its
	// structuredContent. The MCP endpoint answers them; the REST API shows
	// Result alone. Content is left out of the task's JSON when it is
	// nil (a JSON null would decode as the bytes "null").
	Content          json.RawMessage `json:",omitempty"`
	ResultStructured bool
	Error            *string
	InputRequired    map[string]any
	InputAnswerable  bool
	// StatusMessage is the server's latest progress message (Snapshot.Message).
	StatusMessage            *string
	DriverData               map[string]string
	NotificationStatus       string
	NotificationError        *string
	NotificationAttemptCount int
	EventFingerprint         *string
	EventVersion             int
	NotifiedVersion          int
	// LastPolledAt is when mcpflow last read the remote status (each
	// poll, changed or not).
	LastPolledAt              *time.Time
	LastPollError             *string
	PollAttemptCount          int
	ConsecutivePollErrorCount int
	NextPollAt                *time.Time
	// CancelRequestedAt is when the task's workflow took a cancel
	// request; CancelSignalledAt when the API sent it one (the workflow
	// takes it once a poll in flight has returned). Read both through
	// CancelPending.
	CancelRequestedAt  *time.Time
	CancelSignalledAt  *time.Time
	CancelAttemptCount int
	LastCancelError    *string
	CompletedAt        *time.Time
	CreatedAt          time.Time
	UpdatedAt          time.Time
	// QuestionSeq numbers the task's questions (0: it never asked one).
	// The store sets it: it grows by one on every write that puts the task
	// into input_required or changes its question (InputRequired), and no
	// other write changes it, so an answer can name the question it
	// answers. Writers leave it as they read it.
	QuestionSeq int
	// RowVersion counts the writes of the task's row (the store sets it).
	// UpdateTask with a non-zero RowVersion writes only if the row still
	// has that version: a writer that read the row cannot overwrite a
	// newer write (EConflict).
	RowVersion int
}

// UnmarshalJSON decodes a task (as it crosses Temporal's JSON payloads to
// the row-writing activity) with the numbers of its result and question
// kept exactly (json.Number).
func (t *Task) UnmarshalJSON(b []byte) error {
	type plain Task // no UnmarshalJSON: no recursion
	var p plain
	if err := DecodeExact(b, &p); err != nil {
		return err
	}
	*t = Task(p)
	return nil
}

// ApplySnapshot copies the fields of a normalized snapshot onto t, and sets
// CompletedAt when the status is terminal.
func (t *Task) ApplySnapshot(s Snapshot, at time.Time) {
	t.Status = s.Status
	t.Result = s.Result
	t.ResultPreview = s.ResultPreview
	t.ResultTruncated = s.ResultTruncated
	t.ResultArtifact = s.ResultArtifact
	t.Content = s.Content
	t.ResultStructured = s.ResultStructured
	t.Error = s.Error
	t.InputRequired = s.InputRequired
	t.InputAnswerable = s.InputAnswerable
	t.StatusMessage = s.Message
	if s.Status.IsTerminal() && t.CompletedAt == nil {
		c := at
		t.CompletedAt = &c
	}
}

// Snapshot returns the snapshot fields of t (without a poll hint).
func (t *Task) Snapshot() Snapshot {
	return Snapshot{Status: t.Status, Result: t.Result, ResultPreview: t.ResultPreview, ResultTruncated: t.ResultTruncated,
		ResultArtifact: t.ResultArtifact, Content: t.Content, ResultStructured: t.ResultStructured, Error: t.Error,
		InputRequired: t.InputRequired, InputAnswerable: t.InputAnswerable, Message: t.StatusMessage}
}

// SubmitRequest asks a driver to start a remote task (spec §2.1).
type SubmitRequest struct {
	UserID      string            `json:"user_id"`
	ThreadID    string            `json:"thread_id"`
	RunID       *string           `json:"run_id,omitempty"`
	ToolCallID  *string           `json:"tool_call_id,omitempty"`
	ServerName  string            `json:"server_name"`
	TaskName    string            `json:"task_name"`
	Arguments   Arguments         `json:"arguments"` // numbers as json.Number: exact through Temporal
	DriverData  map[string]string `json:"driver_data"`
	LocalTaskID string            `json:"local_task_id,omitempty"`
	// Secrets are the request's secrets for headers_from_context. They are
	// never encoded (json:"-"): activities receive them sealed and open them
	// in memory.
	Secrets map[string]string `json:"-"`
}

// Validate checks the names of the request; messages name the field.
func (r SubmitRequest) Validate() error {
	if err := checkName("server_name", r.ServerName, MaxServerNameChars); err != nil {
		return err
	}
	if err := checkName("task_name", r.TaskName, MaxTaskNameChars); err != nil {
		return err
	}
	if err := ValidateID("user_id", r.UserID); err != nil {
		return err
	}
	if err := ValidateID("thread_id", r.ThreadID); err != nil {
		return err
	}
	if r.LocalTaskID != "" && !ValidTaskID(r.LocalTaskID) {
		return Errorf(EInvalid, "local_task_id must look like %s<32 hex digits>", TaskIDPrefix)
	}
	return nil
}

func checkName(field, v string, max int) error {
	if strings.TrimSpace(v) == "" {
		return Errorf(EInvalid, "%s must not be empty", field)
	}
	if utf8.RuneCountInString(v) > max {
		return Errorf(EInvalid, "%s must not exceed %d characters", field, max)
	}
	return nil
}

// Submission is what a driver returns after a successful remote submit.
type Submission struct {
	RemoteTaskID string            `json:"remote_task_id"`
	Snapshot     Snapshot          `json:"snapshot"`
	DriverData   map[string]string `json:"driver_data,omitempty"`
}

// Validate checks the remote handle: non-blank and at most 255 characters.
// Both violations are protocol errors (the remote side broke the contract).
func (s Submission) Validate() error {
	if strings.TrimSpace(s.RemoteTaskID) == "" {
		return NewProtocolError("remote_task_id must not be empty")
	}
	if utf8.RuneCountInString(s.RemoteTaskID) > MaxRemoteTaskIDChars {
		return NewProtocolError("MCP task remote_task_id must not exceed %d characters", MaxRemoteTaskIDChars)
	}
	return nil
}

// TaskReference identifies a remote task for status and cancel calls.
type TaskReference struct {
	LocalTaskID  string            `json:"local_task_id"`
	UserID       string            `json:"user_id"`
	ThreadID     string            `json:"thread_id"`
	ServerName   string            `json:"server_name"`
	RemoteTaskID string            `json:"remote_task_id"`
	DriverData   map[string]string `json:"driver_data"`
}

// ValidateID checks a user or thread id. Ids name directories under the
// workspace root, so they are 1 to 64 characters of letters, digits and
// "._@-", never start with a dot, and can never be "..", contain a slash or
// a NUL byte.
func ValidateID(field, id string) error {
	if !validID(id) {
		return Errorf(EInvalid, "%s must be 1 to 64 characters of letters, digits, '.', '_', '@' or '-', starting with a letter, digit, '_' or '@'", field)
	}
	return nil
}

// validID is ^[A-Za-z0-9_@][A-Za-z0-9._@-]{0,63}$ without a regexp
// engine: every request checks its thread id.
func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 || id[0] == '.' || id[0] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '.', c == '_', c == '@', c == '-':
		default:
			return false
		}
	}
	return true
}

// TaskFilter narrows ListTasks.
type TaskFilter struct {
	UserID     string // required
	ThreadID   string
	Limit      int  // 1..100, default 50
	ActiveOnly bool // only pollable statuses
	// After continues a listing: only tasks that come after this one in
	// the listing's order (newest first).
	After *TaskCursor
}

// TaskCursor is a position in a task listing (newest first): the creation
// time and id of the last task of the previous page.
type TaskCursor struct {
	CreatedAt time.Time
	ID        string
}

// TaskStore persists task projections. Implementations translate storage
// errors into domain errors: ENotFound for a missing or foreign task,
// EConflict from CreateTask for an id that already exists, and
// *DuplicateRemoteTaskError for a second row with the same
// (user, server, remote task id).
type TaskStore interface {
	CreateTask(ctx context.Context, t *Task) error
	GetTask(ctx context.Context, id string) (*Task, error)
	ListTasks(ctx context.Context, f TaskFilter) ([]*Task, error)
	// UpdateTask writes the whole row; with t.RowVersion set, only when the
	// row still has that version (EConflict otherwise).
	UpdateTask(ctx context.Context, t *Task) error
}

// Driver talks to the remote side of durable tasks (spec §2.2). Errors
// that are *ProtocolError are permanent (the task fails); any other error
// is transient and retried with backoff, forever.
type Driver interface {
	// Submit starts the remote task with the request's arguments. It must
	// call BeforeSend(ctx) right before the request leaves the process and
	// send nothing when that fails: the Submit activity records there that
	// the submit may have reached the server.
	Submit(ctx context.Context, req SubmitRequest) (Submission, error)
	// Status reads the remote task's state.
	Status(ctx context.Context, ref TaskReference) (Snapshot, error)
	// Cancel cancels the remote task and returns its terminal state (cancel
	// is idempotent and reports the actual terminal status).
	Cancel(ctx context.Context, ref TaskReference) (Snapshot, error)
}

// Driver data keys of the ordinary driver: the raw tool names of a toolset.
// DriverDataInputTool is present only when the toolset names an input_tool;
// the driver then delivers answers to an input_required task's question.
const (
	DriverDataSubmitTool = "submit_tool"
	DriverDataStatusTool = "status_tool"
	DriverDataCancelTool = "cancel_tool"
	DriverDataInputTool  = "input_tool"
)

// DriverDataNativeTool is the driver data key of a native MCP task: the
// raw name of the tool its task-augmented tools/call ran. Its presence
// selects the native driver (DriverNative) for the task.
const DriverDataNativeTool = "native_tool"

// DriverDataAdoptTask is the driver data key of a native task mcpflow did
// not start itself: the upstream answered an ordinary tools/call with a task
// (2026-07-28, resultType "task"), whose remote id this is. The driver's
// submit then adopts that task instead of calling the tool again.
const DriverDataAdoptTask = "adopt_task"

// PollRecorder is a TaskStore that records a poll that changed nothing
// (last_polled_at only, never backwards) without writing the row.
type PollRecorder interface {
	TouchPolled(ctx context.Context, id string, at time.Time) (bool, error)
}

// Answerable reports whether the task's question can be answered through
// mcpflow now: it is input_required with an answerable question, and no
// cancel was requested (a task being cancelled takes no answer).
func (t *Task) Answerable() bool {
	return t.Status == StatusInputRequired && t.InputAnswerable && !t.CancelPending()
}

// CancelPending reports whether a cancel was requested: the workflow
// took it, or the API sent it to a task that has not ended (a task that
// ended before its workflow took the request was not cancelled).
func (t *Task) CancelPending() bool {
	return t.CancelRequestedAt != nil || (t.CancelSignalledAt != nil && !t.Status.IsTerminal())
}

// CancelRecorder is a TaskStore that records when a cancel request was
// sent to a task's workflow (CancelSignalledAt only, kept once set; no
// other column, and never by UpdateTask), so that the task reads as
// cancel-requested while its workflow still waits for a poll in flight.
type CancelRecorder interface {
	RecordCancelSignal(ctx context.Context, id string, at time.Time) (bool, error)
}

// TaskEventWriter is a TaskStore that can append a task's event to the
// thread inbox (EventStore.AppendEvent) and write its row (UpdateTask) in
// one transaction: both, or neither. A write fenced by its RowVersion
// that is refused (EConflict) then leaves no event behind.
type TaskEventWriter interface {
	UpdateTaskWithEvent(ctx context.Context, t *Task, e *ThreadEvent) (int64, error)
}
