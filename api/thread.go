package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/mcpflow/mcpflow"
)

type threadBody struct {
	ThreadID  string    `json:"thread_id"`
	CreatedAt time.Time `json:"created_at"`
}

func threadJSON(t *mcpflow.Thread) threadBody {
	return threadBody{ThreadID: t.ID, CreatedAt: t.CreatedAt.UTC()}
}

func (s *Server) createThread(c *gin.Context) {
	p, _ := principal(c)
	var req struct {
		ThreadID *string `json:"thread_id"`
	}
	body, ok := s.readBody(c)
	if !ok {
		return
	}
	if len(bytes.TrimSpace(body)) > 0 && json.Unmarshal(body, &req) != nil {
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "request body must be a JSON object like {\"thread_id\": \"...\"}"))
		return
	}
	id := uuid.NewString()
	if req.ThreadID != nil {
		id = *req.ThreadID
	}
	if err := checkThreadID(id, p.UserID); err != nil {
		s.renderError(c, err)
		return
	}
	t, created, err := s.opts.Threads.CreateThread(c.Request.Context(), &mcpflow.Thread{ID: id, UserID: p.UserID, CreatedAt: s.now().UTC()})
	if err != nil {
		s.renderError(c, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	c.JSON(code, threadJSON(t))
}

// checkThreadID checks a thread id a user may create: a valid id, and not
// another user's default thread ("default@<user>").
func checkThreadID(id, userID string) error {
	if err := mcpflow.ValidateID("thread_id", id); err != nil {
		return err
	}
	if mcpflow.ReservedThreadID(id, userID) {
		return mcpflow.Errorf(mcpflow.EInvalid, "thread ids starting with 'default@' are reserved: each user's default thread is default@<user id>")
	}
	return nil
}

// ownedThread loads the calling user's thread of the route: one the user
// does not have is 404 (thread ids are per user, so another user's thread
// of that id is never seen), a deleted one 410.
func (s *Server) ownedThread(c *gin.Context) (*mcpflow.Thread, bool) {
	p, _ := principal(c)
	id := c.Param("thread_id")
	if err := mcpflow.ValidateID("thread_id", id); err != nil {
		s.renderError(c, err)
		return nil, false
	}
	t, err := s.opts.Threads.GetThread(c.Request.Context(), p.UserID, id)
	if err == nil && t.Deleted() {
		err = mcpflow.Errorf(mcpflow.EGone, "thread was deleted")
	}
	if err != nil {
		if mcpflow.ErrorCode(err) == mcpflow.ENotFound {
			err = mcpflow.Errorf(mcpflow.ENotFound, "thread not found")
		}
		s.renderError(c, err)
		return nil, false
	}
	return t, true
}

func (s *Server) getThread(c *gin.Context) {
	t, ok := s.ownedThread(c)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, threadJSON(t))
}

// deleteThread tombstones the thread after its running durable tasks were
// asked to cancel (once gone, nothing under it can reach them): 503 and
// the thread kept when that cannot be done now. A task started between
// the two is asked after the tombstone, as the tombstone stops new ones.
func (s *Server) deleteThread(c *gin.Context) {
	t, ok := s.ownedThread(c)
	if !ok {
		return
	}
	if err := s.cancelThreadTasks(c, t); err != nil {
		s.renderError(c, err)
		return
	}
	s.threads.forget(t.Ref())
	if err := s.opts.Threads.DeleteThread(c.Request.Context(), t.UserID, t.ID, s.now().UTC()); err != nil {
		s.renderError(c, err)
		return
	}
	if err := s.cancelThreadTasks(c, t); err != nil {
		s.log.Warn("could not cancel a task started as its thread was deleted", "thread_id", t.ID, "error", err)
	}
	if s.opts.ThreadDeleted != nil {
		s.opts.ThreadDeleted(c.Request.Context(), t)
	}
	c.Status(http.StatusNoContent)
}

// cancelThreadTasks asks each of the thread's running durable tasks to
// cancel (one that finished meanwhile counts as done); nothing without the
// task routes or runtime.
func (s *Server) cancelThreadTasks(c *gin.Context, t *mcpflow.Thread) error {
	if s.opts.Tasks == nil || s.opts.CancelTask == nil {
		return nil
	}
	f := mcpflow.TaskFilter{UserID: t.UserID, ThreadID: t.ID, Limit: 100, ActiveOnly: true}
	for {
		tasks, err := s.opts.Tasks.ListTasks(c.Request.Context(), f)
		if err != nil {
			return err
		}
		for _, task := range tasks {
			if err := s.opts.CancelTask(restOrigin(c), task); err != nil && mcpflow.ErrorCode(err) != mcpflow.EConflict {
				return err
			}
		}
		if len(tasks) < f.Limit {
			return nil
		}
		last := tasks[len(tasks)-1]
		f.After = &mcpflow.TaskCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
}
