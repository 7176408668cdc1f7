package workflows

import (
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
)

// Names of the task workflow and its messages. Operators use them from the
// CLI: `temporal workflow signal --workflow-id mcp-task-… --name cancel`.
const (
	TaskWorkflowName = "TaskWorkflow"
	UpdateSubmit     = "submit"
	SignalCancel     = "cancel"
	// SignalNotify retries a waiting webhook delivery now instead of at the
	// end of its backoff (the API sends it when a thread is deleted, so its
	// pending events dead-letter at once; operators may send it after
	// fixing a receiver).
	SignalNotify = "notify"
	QueryState   = "state"
	// UpdateInput answers the task's question (mcpflow.InputAnswer); the
	// API sends it for POST …/mcp-tasks/{id}/input.
	UpdateInput = "input"
	// SignalReport carries a change the task's poll activity wrote
	// (ShapeReport); only that activity sends it.
	SignalReport = activities.SignalPollReport
)

// Application error types the task workflow and its activities use.
const (
	ErrTypeProtocol      = "McpTaskProtocolError"        // permanent: the task fails
	ErrTypeDuplicate     = "DuplicateRemoteTask"         // the remote handle is already tracked
	ErrTypeSubmit        = "McpTaskSubmitFailed"         // the remote submit failed; nothing to track
	ErrTypeSubmitUnknown = "McpTaskSubmitOutcomeUnknown" // the worker died after sending the submit
	ErrTypePersist       = "McpTaskPersistFailed"        // the row could not be stored; the remote task was cancelled
	ErrTypePollUnchanged = "McpTaskPollUnchanged"        // benign: retry-driven wait between polls
	ErrTypePollError     = "McpTaskPollError"            // transient poll failure, retried with backoff
	ErrTypeCancelPending = "McpTaskCancelNotTerminal"    // remote cancel not terminal yet
	ErrTypeInputGone     = "McpTaskInputGone"            // the question can no longer be answered
	ErrTypeInputStale    = "McpTaskInputStale"           // the answer is for an earlier question
	// The input update's outcomes (besides Gone and Stale above), which
	// worker.TaskClient.AnswerInput tells apart by type.
	ErrTypeInputNotRequired    = "McpTaskInputNotRequired"    // refused: no question open that mcpflow can deliver an answer to
	ErrTypeInputPending        = "McpTaskInputPending"        // refused: another answer is being delivered (send it again)
	ErrTypeInputCancelling     = "McpTaskInputCancelling"     // refused: the task is being cancelled
	ErrTypeInputDeliveryFailed = "McpTaskInputDeliveryFailed" // the server did not take it after retries; the question stays open
	ErrTypeLimit               = "McpTaskLimit"               // a per-user cap refused the submit before it was sent
)

// PersistFailedMessage is what the agent hears when the task's row could
// not be stored after the remote submit.
const PersistFailedMessage = "mcpflow could not store the task after the MCP server started it, so it asked the server to cancel the remote task"

// DeliveryRunFailedMessage is the notification error of a delivery whose
// activity failed (mcpflow's database or worker, not the webhook).
const DeliveryRunFailedMessage = "the delivery did not run to completion (mcpflow's worker or database failed); it is retried"

// TaskConfig freezes the mcp_tasks numbers a task runs with.
type TaskConfig struct {
	Timing mcpflow.PollTiming
	Bounds mcpflow.Bounds
	// CallTimeout bounds one remote call attempt (lease_seconds).
	CallTimeout time.Duration
	// Pinned routes the remote calls to the worker process that owns the
	// session: stdio servers keep task state in their subprocess, native
	// MCP tasks are often bound to their MCP session.
	Pinned bool
	// IdempotentSubmit is set for a server of
	// mcp_tasks.idempotent_submit_servers: a submit whose worker died after
	// sending it is sent again with the same idempotency key.
	IdempotentSubmit bool `json:",omitempty"`
	// Webhook is set when notifications.webhook_url is configured: events
	// are then delivered to it (and appended to the inbox); otherwise the
	// inbox append is the delivery. The URL and secret are not part of the
	// workflow's input.
	Webhook bool
	// Shape is the history shape the task runs with: 0 (absent, the
	// classic shape), ShapeLean, ShapeReport or ShapeApproval. It is fixed when the task
	// starts (and kept across continue-as-new), so that a task started by
	// an older mcpflow replays its recorded commands; the package doc says
	// what each shape's polling loop emits.
	Shape int `json:",omitempty"`
}

// History shapes (TaskConfig.Shape): the task client starts ordinary tasks
// with ShapeReport, calls waiting for approval with ShapeApproval.
const (
	ShapeLean   = 1
	ShapeReport = 2
	// ShapeApproval is ShapeReport for a call waiting for approval
	// (mcpflow.DriverApproval): the same commands, under a number of its
	// own so that a worker built before the approval driver existed refuses
	// the task (below) instead of handing it to a driver that cannot run it.
	ShapeApproval = 3
	// ShapeNewest is the newest shape this build runs. A task started with
	// a newer one (by a newer mcpflow, during a rolling upgrade) fails its
	// workflow task here instead of running as a shape it is not: Temporal
	// retries the workflow task until a worker that knows the shape takes
	// it.
	ShapeNewest = ShapeApproval
)

// TaskInput starts a task workflow. Arguments are the agent's submit
// arguments; request-scoped secrets are never part of it.
//
// Arguments decode with their numbers as json.Number (mcpflow.Arguments),
// so the submit sends them exactly as the agent wrote them. The JSON is the
// same object as when the field was a map[string]any decoded to float64:
// histories recorded before decode unchanged (testdata/
// task_arguments_before_usenumber.json replays), and the workflow never
// reads an argument, so its commands do not depend on their Go types.
type TaskInput struct {
	TaskID     string            `json:"task_id"`
	UserID     string            `json:"user_id"`
	ThreadID   string            `json:"thread_id"`
	RunID      *string           `json:"run_id,omitempty"`
	ToolCallID *string           `json:"tool_call_id,omitempty"`
	ServerName string            `json:"server_name"`
	TaskName   string            `json:"task_name"`
	DriverName string            `json:"driver_name"`
	DriverData map[string]string `json:"driver_data"`
	Arguments  mcpflow.Arguments `json:"arguments"`
	// SealedSecrets are the request's secrets for headers_from_context,
	// sealed with the mcp_tasks.secrets_key box (ciphertext only: the plain
	// values never enter history).
	SealedSecrets string     `json:"sealed_secrets,omitempty"`
	Config        TaskConfig `json:"config"`
	// State carries a running task across continue-as-new; nil on start.
	State *TaskState `json:"state,omitempty"`
}

// TaskState is what the workflow knows about its task; the query "state"
// returns it.
type TaskState struct {
	Submitted         bool             `json:"submitted"`
	RemoteTaskID      string           `json:"remote_task_id,omitempty"`
	Snapshot          mcpflow.Snapshot `json:"snapshot"`
	Fingerprint       string           `json:"fingerprint,omitempty"`
	ConsecutiveErrors int              `json:"consecutive_errors"`
	LastPollError     *string          `json:"last_poll_error,omitempty"`
	LastPolledAt      *time.Time       `json:"last_polled_at,omitempty"`
	PollCount         int              `json:"poll_count"`
	CancelRequestedAt *time.Time       `json:"cancel_requested_at,omitempty"`
	CancelAttempts    int              `json:"cancel_attempts"`
	LastCancelError   *string          `json:"last_cancel_error,omitempty"`
	PinnedQueue       string           `json:"pinned_queue,omitempty"`
	// InputQueue is the task queue of the worker process that holds the
	// task's question in memory (a native task's pending elicitation);
	// answers are delivered there. "" when the question is not held.
	InputQueue  string     `json:"input_queue,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	Runs        int        `json:"runs"` // continue-as-new count
	// Notification is the event and delivery state (spec §2.5, §2.8).
	Notification mcpflow.Notification `json:"notification"`
	// SearchStatus is the McpTaskStatus search attribute's value (lean
	// shape only: it is upserted when the status differs).
	SearchStatus mcpflow.Status `json:"search_status,omitempty"`
	// NativeCancel records a Temporal cancellation of the task (rather than
	// the cancel signal), so a run that continued as new while cancelling
	// still ends Canceled.
	NativeCancel bool `json:"native_cancel,omitempty"`
}

// SubmitResult answers the submit update: the agent-visible handle.
type SubmitResult struct {
	TaskID   string         `json:"task_id"`
	TaskName string         `json:"task_name"`
	Status   mcpflow.Status `json:"status"`
	Message  string         `json:"message"`
}

// SubmitMessage is the message of a successful submit (spec §2.9).
const SubmitMessage = "Task is running in the background."

// TaskOutcome is the workflow result.
type TaskOutcome struct {
	Status mcpflow.Status `json:"status"`
	Error  *string        `json:"error,omitempty"`
}
