package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow"
)

// TaskItem is a task list item (spec §2.10): the JSON the API writes, and
// the one mcpflow's own client (cmd/mcpflow) reads. Every field is present;
// absent values are null.
type TaskItem struct {
	TaskID           string         `json:"task_id"`
	TaskName         string         `json:"task_name"`
	Status           mcpflow.Status `json:"status"`
	CreatedAt        time.Time      `json:"created_at"`
	UpdatedAt        time.Time      `json:"updated_at"`
	Error            *string        `json:"error"`
	TrackingDegraded bool           `json:"tracking_degraded"`
	CancelRequested  bool           `json:"cancel_requested"`
}

// TaskDetail is a task's detail: the list item's fields and more. It
// never carries the remote id, the driver data or the server name.
type TaskDetail struct {
	TaskItem
	LastPolledAt *time.Time `json:"last_polled_at"`
	// StatusMessage is the server's latest progress message, if it gives one.
	StatusMessage            *string           `json:"status_message"`
	LastPollError            *string           `json:"last_poll_error"`
	LastCancelError          *string           `json:"last_cancel_error"`
	CancelAttemptCount       int               `json:"cancel_attempt_count"`
	NotificationStatus       string            `json:"notification_status"`
	NotificationError        *string           `json:"notification_error"`
	NotificationAttemptCount int               `json:"notification_attempt_count"`
	Result                   any               `json:"result"`
	ResultPreview            *string           `json:"result_preview"`
	ResultTruncated          bool              `json:"result_truncated"`
	ResultArtifact           map[string]string `json:"result_artifact"`
	InputRequired            map[string]any    `json:"input_required"`
	// InputAnswerable says POST …/input can answer input_required.
	InputAnswerable bool `json:"input_answerable"`
	// QuestionID numbers the current question while the task is
	// input_required (mcpflow.Task.QuestionSeq), null otherwise: an answer
	// names it (question_id) so that it never lands on a newer question.
	QuestionID *int `json:"question_id"`
	// TemporalUIURL links the task's workflow in the Temporal Web UI
	// (temporal.web_ui_url); absent when none is configured.
	TemporalUIURL string `json:"temporal_ui_url,omitempty"`
}

func cut(s *string) *string {
	if s == nil {
		return nil
	}
	v := mcpflow.TruncateChars(*s, mcpflow.MaxAPIErrorChars)
	return &v
}

func (s *Server) item(t *mcpflow.Task) TaskItem {
	return TaskItem{
		TaskID: t.ID, TaskName: t.TaskName, Status: t.Status,
		CreatedAt: t.CreatedAt.UTC(), UpdatedAt: t.UpdatedAt.UTC(), Error: cut(t.Error),
		TrackingDegraded: s.opts.DegradedAfterErrors > 0 && t.ConsecutivePollErrorCount >= s.opts.DegradedAfterErrors,
		CancelRequested:  t.CancelPending(),
	}
}

func (s *Server) detail(t *mcpflow.Task) TaskDetail {
	d := TaskDetail{
		TaskItem: s.item(t), LastPolledAt: t.LastPolledAt, StatusMessage: t.StatusMessage, LastPollError: cut(t.LastPollError),
		LastCancelError: cut(t.LastCancelError), CancelAttemptCount: t.CancelAttemptCount,
		NotificationStatus: t.NotificationStatus, NotificationError: cut(t.NotificationError),
		NotificationAttemptCount: t.NotificationAttemptCount, Result: t.Result, ResultPreview: t.ResultPreview,
		ResultTruncated: t.ResultTruncated, ResultArtifact: t.ResultArtifact, InputRequired: t.InputRequired,
		InputAnswerable: t.Answerable(),
	}
	if t.Status == mcpflow.StatusInputRequired && t.QuestionSeq > 0 {
		q := t.QuestionSeq
		d.QuestionID = &q
	}
	if s.opts.TaskLink != nil {
		d.TemporalUIURL = s.opts.TaskLink(t.ID)
	}
	if d.NotificationStatus == "" {
		d.NotificationStatus = mcpflow.NotificationNone
	}
	return d
}

func (s *Server) listTasks(c *gin.Context) {
	t, ok := s.ownedThread(c)
	if !ok {
		return
	}
	limit := 50
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "limit must be an integer from 1 to 100"))
			return
		}
		limit = n
	}
	active := false
	if v := c.Query("active_only"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "active_only must be true or false"))
			return
		}
		active = b
	}
	tasks, err := s.opts.Tasks.ListTasks(c.Request.Context(), mcpflow.TaskFilter{UserID: t.UserID, ThreadID: t.ID, Limit: limit, ActiveOnly: active})
	if err != nil {
		s.renderError(c, err)
		return
	}
	items := make([]TaskItem, 0, len(tasks))
	for _, task := range tasks {
		items = append(items, s.item(task))
	}
	c.JSON(http.StatusOK, gin.H{"tasks": items})
}

// ownedTask loads the route's task for the calling user: another user's
// task or one of another thread is 404.
func (s *Server) ownedTask(c *gin.Context) (*mcpflow.Task, bool) {
	th, ok := s.ownedThread(c)
	if !ok {
		return nil, false
	}
	task, err := s.opts.Tasks.GetTask(c.Request.Context(), c.Param("task_id"))
	if err == nil && (task.UserID != th.UserID || task.ThreadID != th.ID) {
		err = mcpflow.Errorf(mcpflow.ENotFound, "MCP task not found")
	}
	if err != nil {
		if mcpflow.ErrorCode(err) == mcpflow.ENotFound {
			err = mcpflow.Errorf(mcpflow.ENotFound, "MCP task not found")
		}
		s.renderError(c, err)
		return nil, false
	}
	return task, true
}

func (s *Server) getTask(c *gin.Context) {
	task, ok := s.ownedTask(c)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, s.detail(task))
}

func (s *Server) cancelTask(c *gin.Context) {
	task, ok := s.ownedTask(c)
	if !ok {
		return
	}
	if task.Status.IsTerminal() {
		c.JSON(http.StatusConflict, s.detail(task))
		return
	}
	if s.opts.CancelTask == nil {
		s.renderError(c, mcpflow.Errorf(mcpflow.EUnavailable, "MCP task service not available"))
		return
	}
	if err := s.opts.CancelTask(restOrigin(c), task); err != nil {
		if mcpflow.ErrorCode(err) == mcpflow.EConflict {
			if fresh, gerr := s.opts.Tasks.GetTask(c.Request.Context(), task.ID); gerr == nil {
				c.JSON(http.StatusConflict, s.detail(fresh))
				return
			}
		}
		s.renderError(c, err)
		return
	}
	if task.CancelSignalledAt == nil {
		now := time.Now().UTC()
		task.CancelSignalledAt = &now
	}
	d := s.detail(task)
	d.CancelRequested = true
	c.JSON(http.StatusAccepted, d)
}

// answerRetryAfter is the Retry-After (seconds) of an answer refused while
// another answer to the same question is being delivered.
const answerRetryAfter = "1"

// answerInput answers a task's question: 202 with the detail once the
// answer reached the MCP server; 400 for a bad action or content that does
// not match the requested schema; 409 with the detail when the task does
// not take an answer now (working, finished, or its question cannot be
// answered through mcpflow); 409 with an error naming the current question
// when question_id names another one (checked here, and again by the
// worker right before the answer goes upstream); 409 with an error and
// Retry-After while another answer to the question is being delivered;
// 409 with an error while the task is being cancelled; 502 when the MCP
// server did not take the answer (the question stays open).
func (s *Server) answerInput(c *gin.Context) {
	body, ok := s.readBody(c)
	if !ok {
		return
	}
	task, ok := s.ownedTask(c)
	if !ok {
		return
	}
	var ans mcpflow.InputAnswer
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&ans); err != nil || ans.QuestionID < 0 {
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, `request body must be {"action": "accept"|"decline"|"cancel", "content"?: {...}, "question_id"?: <the detail's question_id>}`))
		return
	}
	if err := mcpflow.StaleAnswer(task, ans.QuestionID); err != nil {
		s.renderError(c, err) // 409 naming the current question
		return
	}
	if task.Status != mcpflow.StatusInputRequired || !task.InputAnswerable {
		c.JSON(http.StatusConflict, s.detail(task))
		return
	}
	if err := ans.Validate(task.InputRequired); err != nil {
		s.renderError(c, err)
		return
	}
	if s.opts.AnswerInput == nil {
		s.renderError(c, mcpflow.Errorf(mcpflow.EUnavailable, "MCP task service not available"))
		return
	}
	if err := s.opts.AnswerInput(restOrigin(c), task, ans); err != nil {
		switch {
		case errors.Is(err, mcpflow.ErrAnswerPending):
			// Another answer is on its way: this one may come again.
			c.Header("Retry-After", answerRetryAfter)
			s.renderError(c, err)
			return
		case errors.Is(err, mcpflow.ErrTaskCancelling):
			s.renderError(c, err)
			return
		}
		if mcpflow.ErrorCode(err) == mcpflow.EConflict {
			if fresh, gerr := s.opts.Tasks.GetTask(c.Request.Context(), task.ID); gerr == nil {
				if serr := mcpflow.StaleAnswer(fresh, ans.QuestionID); serr != nil {
					s.renderError(c, serr) // a newer question came meanwhile
					return
				}
				c.JSON(http.StatusConflict, s.detail(fresh))
				return
			}
		}
		s.renderError(c, err)
		return
	}
	fresh, err := s.opts.Tasks.GetTask(c.Request.Context(), task.ID)
	if err != nil {
		fresh = task
	}
	c.JSON(http.StatusAccepted, s.detail(fresh))
}

// restOrigin is the request's context marked as a REST call, with its
// request id (for the audit log).
func restOrigin(c *gin.Context) context.Context {
	return mcpflow.WithCallOrigin(c.Request.Context(), mcpflow.CallOrigin{Surface: "rest", RequestID: requestID(c)})
}
