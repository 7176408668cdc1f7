package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
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

// streamEndGrace is how long an ended stream may take to finish on its
// own before its connection's writes are cut.
const streamEndGrace = time.Second

// openStream is a GET stream open in this process.
type openStream struct {
	cancel context.CancelFunc
	rc     *http.ResponseController
	// release frees the user's stream slot the stream holds; a stream that
	// replaces it takes it over (Server.mu guards it).
	release func()
	// notes are notifications for the session that are not in the thread
	// inbox (resource updates, subscribe.go), written as they come.
	notes chan notification

	mu       sync.Mutex
	finished bool // the handler is returning: its connection is no longer ours
}

// end stops the stream: its context ends at once, so it finishes cleanly
// at its next step; a stream still there after streamEndGrace (a write
// blocked on a connection nobody reads) has its writes cut.
func (o *openStream) end() {
	o.cancel()
	time.AfterFunc(streamEndGrace, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if !o.finished {
			_ = o.rc.SetWriteDeadline(time.Now())
		}
	})
}

// claimStream registers a session's new GET stream, replacing (and taking
// the slot of) one it has here already; false when the user has no slot.
func (s *Server) claimStream(sid string, me *openStream, acquire func() (func(), bool)) bool {
	var own func()
	for {
		s.mu.Lock()
		if old := s.streams[sid]; old != nil {
			old.end()
			me.release, old.release = old.release, nil
			s.streams[sid] = me
			s.mu.Unlock()
			if own != nil {
				own()
			}
			return true
		}
		if own != nil {
			me.release = own
			s.streams[sid] = me
			s.mu.Unlock()
			return true
		}
		s.mu.Unlock()
		rel, ok := slot(acquire)
		if !ok {
			return false
		}
		own = rel
	}
}

// dropStream unregisters a stream that ended and frees its slot unless a
// newer stream took it over.
func (s *Server) dropStream(sid string, me *openStream) {
	me.mu.Lock()
	me.finished = true
	me.mu.Unlock()
	s.mu.Lock()
	if s.streams[sid] == me {
		delete(s.streams, sid)
	}
	release := me.release
	me.release = nil
	s.mu.Unlock()
	if release != nil {
		release()
	}
}

// get serves a session's GET stream: notifications/tasks/status from the
// thread inbox, with the inbox seq as SSE id so that Last-Event-ID resumes
// on any replica. One stream per session per replica; 429 beyond the
// user's stream slots.
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
	after, ok := s.streamStart(w, r, sess)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	me := &openStream{cancel: cancel, rc: http.NewResponseController(w), notes: make(chan notification, streamNotes)}
	// A stream outlives write_timeout_seconds. (Lifted before the stream
	// is registered: from then on a newer stream may cut it short.)
	_ = me.rc.SetWriteDeadline(time.Time{})
	if !s.claimStream(sess.ID, me, req.AcquireStream) {
		tooMany(w, nil, "too many GET streams open for this user (server.max_mcp_streams_per_user): end a session's stream (DELETE the session) or retry shortly")
		return
	}
	defer s.dropStream(sess.ID, me)

	out := newSSEWriter(w)
	out.start()
	// A priming event: its id lets the client resume from here.
	if err := out.write([]byte("id: " + strconv.FormatInt(after, 10) + "\ndata: \n\n")); err != nil {
		return
	}
	release := s.watch.hold(sessThread(sess.MCPSession))
	defer release()
	if sr := s.surface(); sr != nil {
		// The servers' list changes reach the stream while it is open.
		if stop, err := sr.WatchLists(ctx, sess.UserID, sess.ThreadID, func(method string) {
			select {
			case me.notes <- notification{JSONRPC: mcp.JSONRPC_VERSION, Method: method}:
			default:
			}
		}); err == nil {
			defer stop()
		}
	}
	s.streamLoop(ctx, out, sess, me, req, after)
}

// streamLoop writes a session's GET stream until it ends: the thread
// inbox's status notifications after the event after, the servers' list
// changes (me.notes), and a keep-alive comment that also ends the stream of
// a session ended through another replica.
func (s *Server) streamLoop(ctx context.Context, out *sseWriter, sess *session, me *openStream, req *mcpflow.MCPRequest, after int64) {
	keep := time.NewTicker(s.opts.KeepAlive)
	defer keep.Stop()
	for {
		changed := s.watch.next(sessThread(sess.MCPSession))
		evs, err := s.opts.Events.ListEvents(ctx, sessThread(sess.MCPSession), after, streamPage)
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
		case n := <-me.notes:
			if err := out.event("", n); err != nil {
				return
			}
		case <-keep.C:
			// The session may have been ended through another replica.
			if _, err := s.session(ctx, sess.ID, req); mcpflow.ErrorCode(err) == mcpflow.ENotFound {
				s.forgetSessions(sess.ID) // its subscriptions end with it
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

// streamStart is the inbox position a GET stream starts after: the
// client's Last-Event-ID, else the inbox's end; false when it answered.
func (s *Server) streamStart(w http.ResponseWriter, r *http.Request, sess *session) (int64, bool) {
	if v := r.Header.Get(headerLastEventID); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeHTTPError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "Last-Event-ID must be an event id this stream sent")
			return 0, false
		}
		return n, true
	}
	n, err := s.opts.Events.LatestEventSeq(r.Context(), sessThread(sess.MCPSession))
	if err != nil {
		s.log.Error("MCP stream: could not read the thread inbox", "request_id", w.Header().Get("X-Request-ID"), "error", err)
		writeHTTPError(w, http.StatusServiceUnavailable, nil, mcp.INTERNAL_ERROR, "the stream could not start; retry shortly")
		return 0, false
	}
	return n, true
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
		StatusMessage: statusMessage(e.Status, ev.Error, ev.InputRequired, false, nil, nil)}
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

// sessThread names the thread of sess: its user's thread of its thread id.
func sessThread(sess *mcpflow.MCPSession) mcpflow.ThreadRef {
	return mcpflow.ThreadRef{UserID: sess.UserID, ThreadID: sess.ThreadID}
}
