package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
)

// streamPage is how many inbox events a stream reads at a time.
const streamPage = 100

func acceptsSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			if mt = strings.TrimSpace(mt); mt == "text/event-stream" || mt == "*/*" || mt == "text/*" {
				return true
			}
		}
	}
	return false
}

// sseWriter writes a text/event-stream answer.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

func (o *sseWriter) start() {
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	o.w.WriteHeader(http.StatusOK)
	_ = o.rc.Flush()
}

func (o *sseWriter) write(b []byte) error {
	if _, err := o.w.Write(b); err != nil {
		return err
	}
	return o.rc.Flush()
}

// comment keeps the connection alive through proxies.
func (o *sseWriter) comment() { _ = o.write([]byte(": keep-alive\n\n")) }

// event writes one JSON-RPC message, with an event id when id is not "".
func (o *sseWriter) event(id string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if id != "" {
		buf.WriteString("id: " + id + "\n")
	}
	buf.WriteString("event: message\ndata: ")
	buf.Write(b)
	buf.WriteString("\n\n")
	return o.write(buf.Bytes())
}

// get serves the GET stream of a session: notifications/tasks/status for
// the thread's tasks, from the thread inbox. Each event's SSE id is its
// inbox seq, so a client that reconnects with Last-Event-ID (to any
// replica) gets what it missed; a new stream starts at the inbox's end.
// One stream per session per replica (409 for a second).
func (s *Server) get(w http.ResponseWriter, r *http.Request, req *mcpflow.MCPRequest) {
	if !acceptsSSE(r) {
		writeHTTPError(w, http.StatusNotAcceptable, nil, mcp.INVALID_REQUEST, "the GET stream needs Accept: text/event-stream")
		return
	}
	sess, ok := s.requireSession(w, r, req, nil)
	if !ok {
		return
	}
	req.Method = "stream"
	var after int64
	if v := r.Header.Get(headerLastEventID); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeHTTPError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "Last-Event-ID must be an event id this stream sent")
			return
		}
		after = n
	} else {
		n, err := s.opts.Events.LatestEventSeq(r.Context(), sess.ThreadID)
		if err != nil {
			s.log.Error("MCP stream: could not read the thread inbox", "request_id", w.Header().Get("X-Request-ID"), "error", err)
			writeHTTPError(w, http.StatusServiceUnavailable, nil, mcp.INTERNAL_ERROR, "the stream could not start; retry shortly")
			return
		}
		after = n
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	s.mu.Lock()
	if _, busy := s.streams[sess.ID]; busy {
		s.mu.Unlock()
		writeHTTPError(w, http.StatusConflict, nil, mcp.INVALID_REQUEST, "this session already has an open stream")
		return
	}
	s.streams[sess.ID] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.streams, sess.ID)
		s.mu.Unlock()
	}()

	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{}) // a stream outlives write_timeout_seconds
	out := newSSEWriter(w)
	out.start()
	// A priming event: its id lets the client resume from here.
	if err := out.write([]byte("id: " + strconv.FormatInt(after, 10) + "\ndata: \n\n")); err != nil {
		return
	}
	release := s.watch.hold()
	defer release()
	keep := time.NewTicker(s.opts.KeepAlive)
	defer keep.Stop()
	for {
		changed := s.watch.next()
		evs, err := s.opts.Events.ListEvents(ctx, sess.ThreadID, after, streamPage)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("MCP stream: could not read the thread inbox", "error", err)
			}
			evs = nil
		}
		for _, e := range evs {
			after = e.Seq
			n, ok := s.statusNotification(ctx, e)
			if !ok {
				continue
			}
			if err := out.event(strconv.FormatInt(e.Seq, 10), n); err != nil {
				return
			}
		}
		if len(evs) == streamPage {
			continue
		}
		select {
		case <-changed:
		case <-keep.C:
			// The session may have been ended through another replica.
			if _, err := s.session(ctx, sess.ID, req); mcpflow.ErrorCode(err) == mcpflow.ENotFound {
				return
			}
			out.comment()
		case <-ctx.Done():
			return
		case <-s.stopping:
			return
		}
	}
}

// statusNotification turns an inbox event into notifications/tasks/status
// with the task as the event shows it.
func (s *Server) statusNotification(ctx context.Context, e *mcpflow.ThreadEvent) (notification, bool) {
	if s.opts.Tasks == nil {
		return notification{}, false
	}
	t, err := s.opts.Tasks.GetTask(ctx, e.TaskID)
	if err != nil {
		if mcpflow.ErrorCode(err) != mcpflow.ENotFound && ctx.Err() == nil {
			s.log.Warn("MCP stream: could not read a task", "task_id", e.TaskID, "error", err)
		}
		return notification{}, false
	}
	var ev mcpflow.Event
	if err := json.Unmarshal(e.Payload, &ev); err != nil {
		s.log.Warn("MCP stream: could not decode an event", "task_id", e.TaskID, "event_version", e.EventVersion, "error", err)
		return notification{}, false
	}
	task := mcp.Task{TaskId: t.ID, Status: mcpStatus(e.Status), CreatedAt: isoTime(t.CreatedAt), LastUpdatedAt: isoTime(e.CreatedAt),
		StatusMessage: statusMessage(e.Status, ev.Error, ev.InputRequired, false, nil)}
	if !e.Status.IsTerminal() {
		poll := s.opts.PollInterval.Milliseconds()
		task.PollInterval = &poll
		if ev.TrackingDegraded && ev.LastPollError != nil && e.Status != mcpflow.StatusInputRequired {
			task.StatusMessage = mcpflow.TruncateChars("tracking degraded: "+*ev.LastPollError, mcpflow.MaxAPIErrorChars)
		}
	}
	task.StatusMessage = s.withLink(task.StatusMessage, t.ID)
	return notification{JSONRPC: mcp.JSONRPC_VERSION, Method: string(mcp.MethodNotificationTasksStatus), Params: task}, true
}
