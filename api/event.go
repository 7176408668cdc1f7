package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow"
)

// Long-poll bounds of the thread inbox.
const (
	// MaxEventWait is the longest wait= a client may ask for.
	MaxEventWait = 60 * time.Second
	// eventRecheck is how often a long poll re-reads the inbox for events
	// that other processes appended (this process's appends wake it at once).
	eventRecheck = 500 * time.Millisecond
)

type eventsBody struct {
	Events []map[string]any `json:"events"`
	Next   int64            `json:"next"`
}

// listEvents serves the thread inbox: events with seq > after in order; with
// wait, it holds the request until one arrives or wait seconds pass.
func (s *Server) listEvents(c *gin.Context) {
	t, ok := s.ownedThread(c)
	if !ok {
		return
	}
	after, err := queryInt(c, "after", 0)
	if err != nil || after < 0 {
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "after must be a non-negative integer: the seq of the last event you have"))
		return
	}
	limit, err := queryInt(c, "limit", 100)
	if err != nil || limit < 1 || limit > 1000 {
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "limit must be an integer from 1 to 1000"))
		return
	}
	wait := time.Duration(0)
	if v := c.Query("wait"); v != "" {
		sec, err := strconv.ParseFloat(v, 64)
		if err != nil || !(sec >= 0 && sec <= MaxEventWait.Seconds()) {
			s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "wait must be a number of seconds from 0 to %d", int(MaxEventWait.Seconds())))
			return
		}
		wait = time.Duration(sec * float64(time.Second))
	}
	ctx := c.Request.Context()
	if wait == 0 {
		evs, err := s.opts.Events.ListEvents(ctx, t.Ref(), after, int(limit))
		if err != nil {
			s.renderError(c, err)
			return
		}
		s.renderEvents(c, evs, after)
		return
	}
	// A long poll holds one of the user's wait slots while it runs, so one
	// user cannot hold unbounded connections (and the database reads
	// behind them) open. The MCP endpoint's tasks/result and tasks/cancel
	// waits take from the same slots.
	if !s.waits.acquire(t.UserID) {
		c.Header("Retry-After", "1")
		s.renderError(c, mcpflow.Errorf(mcpflow.ETooMany, "too many waits open for this user (at most %d event long polls (wait=) and MCP tasks/result or tasks/cancel waits together: server.max_waits_per_user); retry shortly", s.waits.max))
		return
	}
	evs, err := func() ([]*mcpflow.ThreadEvent, error) {
		// Freed before the answer is written: a client that got its
		// answer may poll again at once.
		defer s.waits.release(t.UserID)
		return s.waitEvents(ctx, t.Ref(), after, int(limit), wait)
	}()
	if err != nil {
		s.renderError(c, err)
		return
	}
	s.renderEvents(c, evs, after)
}

// waitEvents reads the events after after, waiting up to wait for the
// first one; it answers none when the wait runs out or ctx ends (the
// client left or the server is stopping).
func (s *Server) waitEvents(ctx context.Context, thread mcpflow.ThreadRef, after int64, limit int, wait time.Duration) ([]*mcpflow.ThreadEvent, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(eventRecheck)
	defer tick.Stop()
	// Appends of this process to this thread wake the wait at once (those
	// to other threads do not); other processes' appends are read on the
	// recheck. Subscribed before the first read: no append is missed.
	woken := make(chan struct{}, 1)
	unsubscribe := s.opts.Events.SubscribeAppends(func(appended mcpflow.ThreadRef, _ int64) {
		if appended == thread {
			select {
			case woken <- struct{}{}:
			default:
			}
		}
	})
	defer unsubscribe()
	last := false
	for {
		evs, err := s.opts.Events.ListEvents(ctx, thread, after, limit)
		if err != nil || len(evs) > 0 || last {
			return evs, err
		}
		select {
		case <-woken:
		case <-tick.C:
		case <-deadline.C:
			last = true // one last read, then answer
		case <-ctx.Done():
			return nil, nil
		}
	}
}

func (s *Server) renderEvents(c *gin.Context, evs []*mcpflow.ThreadEvent, after int64) {
	out := eventsBody{Events: make([]map[string]any, 0, len(evs)), Next: after}
	for _, e := range evs {
		v, err := mcpflow.ThreadEventView(e)
		if err != nil {
			s.renderError(c, err)
			return
		}
		out.Events = append(out.Events, v)
		out.Next = e.Seq
	}
	c.JSON(http.StatusOK, out)
}

func queryInt(c *gin.Context, key string, def int64) (int64, error) {
	v := c.Query(key)
	if v == "" {
		return def, nil
	}
	return strconv.ParseInt(v, 10, 64)
}
