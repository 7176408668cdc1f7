package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/jsonscan"
)

// Header names of the streamable HTTP transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	headerLastEventID     = "Last-Event-ID"
)

// LatestProtocolVersion is the protocol revision mcpflow speaks first.
const LatestProtocolVersion = mcp.ProtocolVersion20251125

// SupportedProtocolVersions are the revisions initialize accepts, newest
// first. 2026-07-28 clients (which probe server/discover first) fall back
// to initialize with 2025-11-25.
var SupportedProtocolVersions = []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618,
	mcp.ProtocolVersion20250326, mcp.ProtocolVersion20241105}

// Options are the dependencies of the MCP endpoint.
type Options struct {
	Tools    mcpflow.ToolRuntime
	Sessions mcpflow.MCPSessionStore
	Events   mcpflow.EventStore // the thread inbox: notifications and wake-ups
	// Tasks reads task rows; nil means no task runtime in this process
	// (no tasks capability, tasks/* answer -32601).
	Tasks mcpflow.TaskStore
	// CancelTask asks a task's workflow to cancel it (the cancel signal);
	// EUnavailable when no worker runs, EConflict when it already ended.
	CancelTask func(ctx context.Context, t *mcpflow.Task) error
	// AnswerInput delivers an answer to a task's question (the workflow's
	// input update; its outcomes as worker.TaskClient.AnswerInput tells
	// them apart: EConflict caused by mcpflow.ErrInputGone,
	// ErrAnswerPending or ErrTaskCancelling, EUpstream when the server did
	// not take it); nil: questions are not relayed to MCP clients.
	AnswerInput func(ctx context.Context, t *mcpflow.Task, a mcpflow.InputAnswer) error
	// TaskLink returns the Temporal Web UI link of a task's workflow, which
	// its statusMessage then carries; nil: no link.
	TaskLink func(taskID string) string
	// PollInterval is the pollInterval tasks advertise
	// (mcp_tasks.poll_interval_seconds).
	PollInterval time.Duration
	// CancelWait bounds how long tasks/cancel waits for the remote cancel
	// to land before it answers; default 10 s.
	CancelWait time.Duration
	// SessionIdleTTL removes sessions unused this long; default 30 days.
	SessionIdleTTL time.Duration
	// MaxSessionsPerUser caps a user's stored sessions, across replicas
	// (server.max_mcp_sessions_per_user): an initialize beyond it ends the
	// user's least recently used sessions. Default DefaultMaxSessionsPerUser.
	MaxSessionsPerUser int
	// KeepAlive is the interval of SSE comments on open streams; default
	// 15 s.
	KeepAlive time.Duration
	// Version is serverInfo.version; default the module version.
	Version string
	Logger  *slog.Logger
	Now     func() time.Time
}

// Server is the MCP endpoint.
type Server struct {
	opts     Options
	log      *slog.Logger
	now      func() time.Time
	sessions sessionCache
	watch    *watch

	inflight sync.Map // inflightKey → *inflightCall
	relays   relayed  // requests relayed to 2025-11-25 clients during their calls

	mu      sync.Mutex
	streams map[string]*openStream // session id → its open GET stream here
	// subs are the sessions' resource subscriptions taken here: session
	// id → URI → unsubscribe (subscribe.go).
	subs     map[string]map[string]func()
	stopping chan struct{}

	pruneMu   sync.Mutex
	lastPrune time.Time
	bg        sync.WaitGroup

	// infoMeta is the _meta of a 2026-07-28 tool result with none of its
	// own (the server's identity), encoded once.
	infoMeta func() json.RawMessage
}

// New builds the MCP endpoint.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 5 * time.Second
	}
	if opts.CancelWait <= 0 {
		opts.CancelWait = 10 * time.Second
	}
	if opts.SessionIdleTTL <= 0 {
		opts.SessionIdleTTL = DefaultSessionIdleTTL
	}
	if opts.MaxSessionsPerUser <= 0 {
		opts.MaxSessionsPerUser = DefaultMaxSessionsPerUser
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	if opts.Version == "" {
		opts.Version = moduleVersion()
	}
	s := &Server{opts: opts, log: opts.Logger, now: opts.Now, streams: map[string]*openStream{},
		stopping: make(chan struct{})}
	s.watch = newWatch(opts.Events)
	s.infoMeta = sync.OnceValue(func() json.RawMessage {
		b, _ := json.Marshal(map[string]any{metaServerInfo: mcp.Implementation{Name: serverName, Version: opts.Version}})
		return b
	})
	return s
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// Stop ends open GET streams and waiting tasks/result calls so that a
// graceful HTTP shutdown does not wait for them (clients reconnect, to
// another replica if there is one). Safe to call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	select {
	case <-s.stopping:
	default:
		close(s.stopping)
	}
	s.mu.Unlock()
	s.bg.Wait()
}

func (s *Server) tasksEnabled() bool { return s.opts.Tasks != nil && s.opts.CancelTask != nil }

// ServeMCP implements mcpflow.MCPEndpoint.
func (s *Server) ServeMCP(w http.ResponseWriter, r *http.Request, req *mcpflow.MCPRequest) {
	if r.Method != http.MethodPost && slices.Contains(ModernProtocolVersions, r.Header.Get(HeaderProtocolVersion)) {
		// 2026-07-28 has no GET stream and no session to DELETE.
		w.Header().Set("Allow", "POST")
		writeHTTPError(w, http.StatusMethodNotAllowed, nil, mcp.INVALID_REQUEST, "protocol "+ProtocolVersion2026+" takes POST only (subscriptions/listen streams notifications)")
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.post(w, r, req)
	case http.MethodGet:
		s.get(w, r, req)
	case http.MethodDelete:
		s.delete(w, r, req)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeHTTPError(w, http.StatusMethodNotAllowed, nil, mcp.INVALID_REQUEST, "method not allowed: use POST, GET or DELETE")
	}
}

// knownMethods are the methods the access log may name (anything else is
// "(unknown)": method names are client text).
var knownMethods = []string{string(mcp.MethodInitialize), string(mcp.MethodPing), string(mcp.MethodToolsList),
	string(mcp.MethodToolsCall), string(mcp.MethodTasksGet), string(mcp.MethodTasksList), string(mcp.MethodTasksCancel),
	string(mcp.MethodTasksResult), "notifications/initialized", "notifications/cancelled", "server/discover",
	"tasks/update", "subscriptions/listen"}

// post reads a message, validates its envelope and routes it to its
// revision: 2026-07-28 (modern.go) or a 2025-11-25 session (handlers.go).
func (s *Server) post(w http.ResponseWriter, r *http.Request, req *mcpflow.MCPRequest) {
	msg, ok := s.readMessage(w, r, req)
	if !ok {
		return
	}
	if env, modern := msg.envelope(r); modern {
		s.modern(w, r, req, msg, env)
		return
	}
	s.legacy(w, r, req, msg)
}

// readMessage reads and decodes the request's one JSON-RPC message, and
// answers one it cannot take (415, 413, 400).
func (s *Server) readMessage(w http.ResponseWriter, r *http.Request, req *mcpflow.MCPRequest) (*message, bool) {
	if !isJSON(r.Header.Get("Content-Type")) {
		writeHTTPError(w, http.StatusUnsupportedMediaType, nil, mcp.INVALID_REQUEST, "Content-Type must be application/json")
		return nil, false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeHTTPError(w, http.StatusRequestEntityTooLarge, nil, mcp.INVALID_REQUEST, "request body is too large (server.max_body_bytes)")
			return nil, false
		}
		writeHTTPError(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, "request body could not be read")
		return nil, false
	}
	body = jsonscan.TrimWS(body) // JSON's whitespace only: a body with another space around it is not JSON
	if len(body) > 0 && body[0] == '[' {
		writeHTTPError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "JSON-RPC batches are not supported: send one message per request")
		return nil, false
	}
	msg, ok := decodeMessage(body)
	if !ok {
		writeHTTPError(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, "request body is not a JSON-RPC message")
		return nil, false
	}
	if msg.JSONRPC != mcp.JSONRPC_VERSION {
		writeHTTPError(w, http.StatusBadRequest, msg.ID, mcp.INVALID_REQUEST, `"jsonrpc" must be "2.0"`)
		return nil, false
	}
	if slices.Contains(knownMethods, msg.Method) {
		req.Method = msg.Method
	} else if msg.Method != "" {
		req.Method = "(unknown)"
	}
	if len(msg.ID) > 0 && !scalarID(msg.ID) {
		// "id": null is neither a request (whose id is a string or a
		// number) nor a notification (which has no id): a client that
		// sent it must learn, not see it dropped with 202; an object, an
		// array or a boolean is no id either.
		writeHTTPError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, `"id" must be a string or a number (a notification has no "id" at all)`)
		return nil, false
	}
	return msg, true
}

// isJSON reports whether a Content-Type is application/json (with or
// without parameters).
func isJSON(ct string) bool {
	if ct == "application/json" {
		return true // the common case, without parsing
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// requireSession checks the request's Mcp-Protocol-Version (400 for one
// mcpflow does not speak, named before anything else: a client of another
// revision learns that, not that it lacks a session) and its
// Mcp-Session-Id (400 without one, 404 for an unknown or foreign one).
func (s *Server) requireSession(w http.ResponseWriter, r *http.Request, req *mcpflow.MCPRequest, id json.RawMessage) (*session, bool) {
	if v := r.Header.Get(HeaderProtocolVersion); v != "" && !slices.Contains(SupportedProtocolVersions, v) {
		writeHTTPError(w, http.StatusBadRequest, id, mcp.INVALID_REQUEST, "unsupported Mcp-Protocol-Version "+truncate(v, 40)+"; supported: "+strings.Join(allProtocolVersions, ", ")+
			" ("+ProtocolVersion2026+" without a session: params._meta[\""+metaProtocol+"\"]; the others after initialize)")
		return nil, false
	}
	sid := r.Header.Get(HeaderSessionID)
	if sid == "" {
		writeHTTPError(w, http.StatusBadRequest, id, mcp.INVALID_REQUEST, "Mcp-Session-Id header is required: send initialize first")
		return nil, false
	}
	sess, err := s.session(r.Context(), sid, req)
	if err != nil {
		if mcpflow.ErrorCode(err) == mcpflow.ENotFound {
			writeHTTPError(w, http.StatusNotFound, id, codeSessionNotFound, "MCP session not found: initialize a new session")
			return nil, false
		}
		s.log.Error("could not read an MCP session", "request_id", w.Header().Get("X-Request-ID"), "error", err)
		writeHTTPError(w, http.StatusServiceUnavailable, id, mcp.INTERNAL_ERROR, "MCP sessions cannot be read right now; retry shortly")
		return nil, false
	}
	return sess, true
}

// delete ends a session (DELETE with Mcp-Session-Id): 204, then every
// request with it answers 404.
func (s *Server) delete(w http.ResponseWriter, r *http.Request, req *mcpflow.MCPRequest) {
	sess, ok := s.requireSession(w, r, req, nil)
	if !ok {
		return
	}
	if err := s.opts.Sessions.DeleteMCPSession(r.Context(), sess.ID); err != nil && mcpflow.ErrorCode(err) != mcpflow.ENotFound {
		s.log.Error("could not delete an MCP session", "request_id", w.Header().Get("X-Request-ID"), "error", err)
		writeHTTPError(w, http.StatusServiceUnavailable, nil, mcp.INTERNAL_ERROR, "the session could not be ended; retry shortly")
		return
	}
	s.forgetSessions(sess.ID)
	w.WriteHeader(http.StatusNoContent)
}

// forgetSessions drops ended sessions from this replica's cache and ends
// their open GET streams here.
func (s *Server) forgetSessions(ids ...string) {
	s.mu.Lock()
	var unsubscribe []func()
	for _, id := range ids {
		s.sessions.forget(id)
		if st, ok := s.streams[id]; ok {
			st.end()
		}
		for _, u := range s.subs[id] {
			unsubscribe = append(unsubscribe, u)
		}
		delete(s.subs, id)
	}
	s.mu.Unlock()
	for _, u := range unsubscribe {
		go u()
	}
}

// slot takes a per-user slot with acquire (nil: no limit) and returns an
// idempotent release.
func slot(acquire func() (func(), bool)) (release func(), ok bool) {
	if acquire == nil {
		return func() {}, true
	}
	rel, ok := acquire()
	if !ok {
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(rel) }, true
}

// tooMany answers a request over one of the user's limits: 429 with
// Retry-After and a JSON-RPC error naming the limit.
func tooMany(w http.ResponseWriter, id json.RawMessage, msg string) {
	w.Header().Set("Retry-After", "1")
	writeHTTPError(w, http.StatusTooManyRequests, id, codeTooMany, msg)
}

// inflightKey names a request of a session for notifications/cancelled.
func inflightKey(session string, id json.RawMessage) string {
	return session + "\x00" + string(bytes.TrimSpace(id))
}

// track makes a long request cancellable by notifications/cancelled (in
// this process; a client that goes away cancels it anyway).
func (s *Server) track(ctx context.Context, session string, id json.RawMessage) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	key, c := inflightKey(session, id), &inflightCall{cancel: cancel}
	s.inflight.Store(key, c)
	return ctx, func() {
		s.inflight.CompareAndDelete(key, c)
		cancel()
	}
}

type inflightCall struct{ cancel context.CancelFunc }

func (s *Server) cancelInflight(session string, requestID json.RawMessage) {
	if !hasID(requestID) {
		return
	}
	if v, ok := s.inflight.Load(inflightKey(session, requestID)); ok {
		v.(*inflightCall).cancel()
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return mcpflow.TruncateChars(s, n)
}

// call is one JSON-RPC request being answered.
type call struct {
	s   *Server
	w   http.ResponseWriter
	r   *http.Request
	req *mcpflow.MCPRequest // its user and thread own the tasks the call sees
	msg *message
	// capsRaw are the client's capabilities: the session's (2025-11-25),
	// or the request's own _meta (2026-07-28); capsInfo what mcpflow reads
	// of them (the session's, or decoded at the first use by caps).
	capsRaw  json.RawMessage
	capsInfo *clientCaps
	// modern is set for a 2026-07-28 request (stateless; see modern.go).
	modern bool
	// session is the 2025-11-25 session's id ("" in 2026-07-28), and
	// logLevel the level of log messages it asked for.
	session  string
	logLevel string
	// surface and clientInfo say where the call came from, for the audit
	// log: "mcp " and the revision, the client's clientInfo (the
	// session's, or the request's _meta).
	surface    string
	clientInfo json.RawMessage
	answered   bool // the handler wrote the HTTP answer itself

	// The answer turns into an SSE stream when the call relays a message
	// to the client before it answers (relay.go).
	streamMu sync.Mutex
	stream   *sseWriter
	over     bool
}

func (c *call) requestID() string { return c.w.Header().Get("X-Request-ID") }

// origin marks ctx with where the call came from (for the audit log).
func (c *call) origin(ctx context.Context) context.Context {
	return mcpflow.WithCallOrigin(ctx, mcpflow.CallOrigin{Surface: c.surface, ClientInfo: c.clientInfo, RequestID: c.requestID()})
}

// caps is what mcpflow reads of the client's capabilities.
func (c *call) caps() *clientCaps {
	if c.capsInfo == nil {
		c.capsInfo = newClientCaps(c.capsRaw, false, false)
	}
	return c.capsInfo
}
