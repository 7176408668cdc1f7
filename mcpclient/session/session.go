package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/mcpflow/mcpflow/mcpclient/credential"
	"github.com/mcpflow/mcpflow/mcpclient/question"
	"github.com/mcpflow/mcpflow/mcpclient/stdiopipe"
	"github.com/mcpflow/mcpflow/mcpclient/streamhttp"
)

// sessLegacyVersion is the revision of sessions that do not speak 2026-07-28.
const sessLegacyVersion = mcp.ProtocolVersion20251125

// sessDiscoverTimeout bounds the server/discover probe: a server that
// ignores unknown methods is taken for a 2025-11-25 one after this long.
const sessDiscoverTimeout = 2 * time.Second

// ExtTasks is the MCP Tasks extension of 2026-07-28 (SEP-2663).
const ExtTasks = "io.modelcontextprotocol/tasks"

// Shutdown and transport bounds.
const (
	sessStdinGrace = 2 * time.Second // after closing stdin, before SIGTERM
	sessTermGrace  = 2 * time.Second // after SIGTERM, before SIGKILL
	sessKillWait   = 5 * time.Second // after SIGKILL
	sessGroupWait  = time.Second     // for the rest of the process group
	// sessUnbounded replaces mcp-go's SSE timeouts: session_init_timeout,
	// tool_call_timeout and the caller's context bound instead.
	sessUnbounded  = 100 * 365 * 24 * time.Hour
	sessStderrLine = 4096 // one logged line of a stdio server's stderr
)

// sessInheritedEnv are the only variables of mcpflow's own environment a
// stdio server inherits.
var sessInheritedEnv = []string{"PATH", "HOME", "LANG"}

// sessHTTPClient is shared by every HTTP session: more idle connections per
// host than Go's 2 (which churns sockets); no Timeout, which would cut
// streams; plain-HTTP requests sent on the caller's goroutine
// (streamhttp.Direct), the rest by net/http's Transport.
var sessHTTPClient = &http.Client{Transport: func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	return streamhttp.NewDirect(t)
}()}

// sessSSEClient is sessHTTPClient for mcp-go's legacy SSE transport,
// which shows an error answer's body whole: it reads it cut and without
// the request's credentials.
var sessSSEClient = &http.Client{Transport: streamhttp.RedactErrorBodies(sessHTTPClient.Transport)}

// CloseIdleConnections closes the shared HTTP client's idle connections.
func CloseIdleConnections() { sessHTTPClient.CloseIdleConnections() }

// errSessDisconnected marks errors caused by a lost transport.
var errSessDisconnected = errors.New("MCP transport disconnected")

// DialOptions tune one connection.
type DialOptions struct {
	Dir string            // stdio working directory when the server has no cwd
	Env map[string]string // stdio environment defaults; the server's env wins
	// Headers returns per-request HTTP headers; they replace static ones
	// of the same name, whatever its case.
	Headers func(ctx context.Context) map[string]string
	Logger  *slog.Logger // connection logs and stdio stderr (debug); nil discards
	// Questions makes stdio and streamable HTTP sessions declare elicitation
	// and take the questions servers ask about native tasks.
	Questions *question.Questions
	Protocol  string // pinned revision; "" negotiates
	// Lists, when set, hears the server's notifications/prompts/list_changed
	// and resources/list_changed (their method) for the session's life.
	Lists func(method string)
}

// Session is one initialized MCP client session to one server. It is safe
// for concurrent use.
type Session struct {
	server      string
	client      *client.Client
	log         *slog.Logger
	callTimeout time.Duration // 0: none
	proc        *sessProc     // stdio only
	cancel      context.CancelFunc
	version     string                 // the negotiated revision
	caps        mcp.ServerCapabilities // the server's capabilities
	info        mcp.Implementation     // mcpflow's clientInfo
	clientCaps  map[string]any         // mcpflow's capabilities in a 2026 request's _meta
	roots       bool                   // roots declared at initialize (forward_roots)
	envOnce     sync.Once
	envMeta     []byte // the _meta of a 2026 request with clientCaps (sessionMeta)
	envTail     []byte // its clientInfo and protocolVersion members (relayMeta)
	toolsMu     sync.Mutex
	tools       map[string]mcp.Tool // the last listing's tools with x-mcp-header bindings, for Mcp-Param-* headers
	progress    sync.Map            // progress token → func(params map[string]any)
	asks        relaySet            // calls in flight that can ask their caller
	logs        relaySet            // calls in flight whose caller hears log messages
	subs        resourceSubs        // callers subscribed to resources (surface.go)
	onLists     func(method string) // DialOptions.Lists

	done      chan struct{}
	lostOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
}

// Dial connects to srv and initializes the session within its
// session_init_timeout. The session keeps ctx's values, not its
// cancellation. A stdio server runs with PATH, HOME and LANG, then o.Env,
// then its env, in srv.Cwd or o.Dir, in a process group Close kills.
// Errors: EInvalid (ConnectionProblem), ETimeout (session_init_timeout),
// EUpstream otherwise, wrapping ctx.Err() when ctx ended; nothing is left
// running after an error.
func Dial(ctx context.Context, srv *config.Server, o DialOptions) (*Session, error) {
	if srv == nil {
		return nil, mcpflow.Errorf(mcpflow.EInvalid, "no MCP server to connect to")
	}
	if err := srv.ConnectionProblem(); err != nil {
		return nil, &mcpflow.Error{Code: mcpflow.EInvalid, Message: err.Error()}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("server", srv.Name, "transport", srv.Type)
	s := &Session{server: srv.Name, log: log, done: make(chan struct{}), onLists: o.Lists,
		subs: resourceSubs{req: semaphore.NewWeighted(1)}}
	if d, ok := srv.ToolCallTimeoutDuration(); ok && d > 0 {
		s.callTimeout = d
	}
	var sessCtx context.Context
	// The session outlives the call that dialed it, and its caller's relay.
	sessCtx, s.cancel = context.WithCancel(context.WithValue(context.WithoutCancel(ctx), relayKey{}, (*mcpflow.CallRelay)(nil)))

	initCtx := ctx
	initTimeout, bounded := srv.SessionInitTimeoutDuration()
	if bounded {
		var cancel context.CancelFunc
		initCtx, cancel = context.WithTimeout(ctx, initTimeout)
		defer cancel()
	}

	err := s.connect(sessCtx, initCtx, srv, o)
	if err == nil && s.legacyTasks() {
		// Without the extension a 2026 task's outcome cannot be read.
		log.Info("MCP server offers 2026-07-28 but its tasks only work in 2025-11-25; using 2025-11-25", "server", srv.Name)
		s.abort()
		o.Protocol = sessLegacyVersion
		return Dial(ctx, srv, o)
	}
	if err == nil {
		log.Debug("MCP session initialized", "pid", s.PID(), "protocol", s.version)
		return s, nil
	}
	s.abort()
	if errors.Is(initCtx.Err(), context.DeadlineExceeded) {
		callerDeadline, callerBound := ctx.Deadline()
		initDeadline, _ := initCtx.Deadline()
		if bounded && (!callerBound || !callerDeadline.Before(initDeadline)) {
			log.Warn("MCP session initialization timed out", "timeout", initTimeout)
			return nil, &mcpflow.Error{Code: mcpflow.ETimeout, Err: err, Message: fmt.Sprintf(
				"MCP session initialization for server '%s' timed out after %.1fs", srv.Name, initTimeout.Seconds())}
		}
		return nil, &mcpflow.Error{Code: mcpflow.ETimeout, Err: err, Message: fmt.Sprintf(
			"MCP session initialization for server '%s' timed out", srv.Name)}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("connect to MCP server '%s': %w", srv.Name, ctx.Err())
	}
	var de *mcpflow.Error
	if errors.As(err, &de) {
		return nil, err
	}
	log.Warn("MCP session initialization failed", "err", err)
	return nil, &mcpflow.Error{Code: mcpflow.EUpstream, Err: err,
		Message: fmt.Sprintf("MCP server '%s' connection failed", srv.Name)}
}

func (s *Session) connect(sessCtx, initCtx context.Context, srv *config.Server, o DialOptions) error {
	protocol, opts := s.clientOptions(srv, o)
	post, err := s.newClient(sessCtx, srv, o, opts)
	if err != nil {
		return err
	}
	s.client.OnNotification(s.onNotification)
	if err := s.start(sessCtx, initCtx, o.Questions, post); err != nil {
		return err
	}
	return s.initialize(initCtx, protocol)
}

// clientOptions returns the revision to ask for and mcp-go's options.
func (s *Session) clientOptions(srv *config.Server, o DialOptions) (string, []client.ClientOption) {
	protocol := o.Protocol
	if srv.Type == config.TransportSSE {
		protocol = sessLegacyVersion // the legacy transport has no 2026-07-28
	}
	opts := []client.ClientOption{client.WithDiscoverTimeout(sessDiscoverTimeout)}
	if protocol != "" {
		opts = append(opts, client.WithProtocolVersion(protocol))
	}
	s.clientCaps = map[string]any{"extensions": map[string]any{ExtTasks: map[string]any{}}}
	if o.Questions != nil && srv.Type != config.TransportSSE {
		s.clientCaps["elicitation"] = map[string]any{"form": map[string]any{}}
		opts = append(opts, client.WithElicitationHandler(sessNoElicit{}), client.WithSamplingHandler(sessNoElicit{}))
		// A caller's roots (forward_roots: HTTP servers only, since a
		// stdio server runs here, where they would name this host's files)
		// are asked during the caller's call.
		s.roots = srv.Type == config.TransportHTTP && srv.ForwardRoots
	}
	return protocol, opts
}

// newClient builds the transport and client; on streamable HTTP it returns
// how answers to server requests are posted.
func (s *Session) newClient(sessCtx context.Context, srv *config.Server, o DialOptions, opts []client.ClientOption) (func(context.Context, *transport.JSONRPCResponse) error, error) {
	headers := sessHeaderFunc(srv.Headers, o.Headers)
	switch srv.Type {
	case config.TransportStdio:
		proc, tr, err := sessStartProcess(sessCtx, srv, o, s.log, s.markLost)
		if err != nil {
			return nil, &mcpflow.Error{Code: mcpflow.EUpstream, Err: err,
				Message: fmt.Sprintf("MCP server '%s' could not start its stdio process", srv.Name)}
		}
		s.proc = proc
		s.client = client.NewClient(tr, opts...)
		return nil, nil
	case config.TransportSSE:
		return nil, s.newSSEClient(srv, headers, opts)
	case config.TransportHTTP:
		tr, err := streamhttp.New(srv.URL, streamhttp.Options{
			HTTPClient: sessHTTPClient, Headers: headers, Logger: sessTransportLogger(s.log)})
		if err != nil {
			return nil, err
		}
		s.client = client.NewClient(tr, opts...)
		return httpResponder(srv.URL, tr, headers), nil
	default:
		return nil, fmt.Errorf("unsupported transport type '%s'", srv.Type)
	}
}

// newSSEClient builds a legacy SSE client; a lost stream ends the session.
func (s *Session) newSSEClient(srv *config.Server, headers func(context.Context) map[string]string, opts []client.ClientOption) error {
	tr, err := transport.NewSSE(srv.URL,
		transport.WithHTTPClient(sessSSEClient),
		transport.WithHeaderFunc(headers),
		transport.WithEndpointTimeout(sessUnbounded),
		transport.WithResponseTimeout(sessUnbounded),
		transport.WithSSELogger(sessTransportLogger(s.log)),
	)
	if err != nil {
		return err
	}
	s.client = client.NewClient(tr, opts...)
	s.client.OnConnectionLost(func(err error) {
		s.log.Info("MCP SSE stream lost", "err", err)
		_ = tr.Close() // fails waiting and later calls before Done fires
		s.markLost()
	})
	return nil
}

// start starts the transport under sessCtx (the SSE stream lives as long as
// it) with initCtx bounding the wait, then installs serverRequests.
func (s *Session) start(sessCtx, initCtx context.Context, q *question.Questions, post func(context.Context, *transport.JSONRPCResponse) error) error {
	started := make(chan error, 1)
	go func() { started <- s.client.Start(sessCtx) }()
	select {
	case err := <-started:
		if err != nil {
			return err
		}
		s.serverRequests(s.client.GetTransport(), q, post)
		return nil
	case <-initCtx.Done():
		s.abort()
		<-started
		return initCtx.Err()
	}
}

func (s *Session) initialize(initCtx context.Context, protocol string) error {
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = protocol
	s.info = mcp.Implementation{Name: "mcpflow", Version: sessClientVersion()}
	req.Params.ClientInfo = s.info
	req.Params.Capabilities.Extensions = map[string]any{ExtTasks: map[string]any{}}
	if s.roots {
		req.Params.Capabilities.Roots = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}
	}
	res, err := s.client.Initialize(initCtx, req)
	if err != nil {
		return err
	}
	s.version, s.caps = s.client.ProtocolVersion(), res.Capabilities
	if s.version == "" {
		s.version = res.ProtocolVersion
	}
	return nil
}

// onNotification hands a server's notifications on: a stdio server's log
// messages to its calls that hear them, list changes to DialOptions.Lists,
// resource updates to their subscribers, and notifications/progress to
// the call of its token.
func (s *Session) onNotification(n mcp.JSONRPCNotification) {
	if n.Method == string(mcp.MethodNotificationMessage) && s.proc != nil {
		// A stdio server's log message: its session is one user's thread,
		// so the calls in flight on it hear it.
		for _, r := range s.logs.all() {
			s.relayLog(r, n)
		}
		return
	}
	if n.Method == string(mcp.MethodNotificationPromptsListChanged) || n.Method == string(mcp.MethodNotificationResourcesListChanged) {
		s.listChanged(n.Method)
		return
	}
	if n.Method == mcp.MethodNotificationSubscriptionsAcknowledged {
		s.acknowledged(n)
		return
	}
	if n.Method == string(mcp.MethodNotificationResourceUpdated) {
		if uri, ok := n.Params.AdditionalFields["uri"].(string); ok {
			s.resourceUpdated(uri)
		}
		return
	}
	if n.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	token := fmt.Sprint(n.Params.AdditionalFields["progressToken"])
	fn, ok := s.progress.Load(token)
	if !ok {
		return
	}
	params := map[string]any{}
	for k, v := range n.Params.AdditionalFields {
		if k != "progressToken" {
			params[k] = v
		}
	}
	fn.(func(map[string]any))(params)
}

// hearLogs sends the server's log messages during a call to its relay: a
// stdio server's as they come (onNotification), an HTTP server's from the
// call's own stream (ctx's request notifications).
func (s *Session) hearLogs(ctx context.Context, r *mcpflow.CallRelay) context.Context {
	s.logs.hold(r)
	return streamhttp.WithRequestNotifications(ctx, func(n mcp.JSONRPCNotification) bool {
		if n.Method != string(mcp.MethodNotificationMessage) {
			return false
		}
		s.relayLog(r, n)
		return true
	})
}

// relayLog hands a log message to r with the server named in logger
// ("<server>", or "<server>/<its logger>").
func (s *Session) relayLog(r *mcpflow.CallRelay, n mcp.JSONRPCNotification) {
	params := maps.Clone(n.Params.AdditionalFields)
	if params == nil {
		params = map[string]any{}
	}
	logger := s.server
	if l, ok := params["logger"].(string); ok && l != "" {
		logger += "/" + l
	}
	params["logger"] = logger
	r.Log(params)
}

// Protocol returns the revision the session speaks.
func (s *Session) Protocol() string { return s.version }

// Modern reports whether the session speaks 2026-07-28.
func (s *Session) Modern() bool { return mcp.IsModernProtocol(s.version) }

// legacyTasks reports a 2026-07-28 session with a server that advertises
// the 2025-11-25 tasks capability but not the Tasks extension.
func (s *Session) legacyTasks() bool {
	if !s.Modern() || s.caps.Tasks == nil {
		return false
	}
	_, ext := s.caps.Extensions[ExtTasks]
	return !ext
}

// Server returns the name of the server the session is connected to.
func (s *Session) Server() string { return s.server }

// PID returns the stdio server's process id, 0 for other transports.
func (s *Session) PID() int {
	if s.proc == nil {
		return 0
	}
	return s.proc.pid
}

// Done is closed when the transport is lost or the session closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// ListTools lists all the server's tools, every page, bounded by ctx only;
// none for a server that declares no tools and refuses tools/list.
// Schemas stay as written (RawInputSchema, RawOutputSchema); in 2026-07-28
// a tool with invalid x-mcp-header annotations is dropped with a warning.
func (s *Session) ListTools(ctx context.Context) ([]mcp.Tool, error) {
	var tools []mcp.Tool
	cursor := ""
	for page := 0; ; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, rpc, err := s.rawRequest(ctx, mcp.MethodToolsList, "", params)
		if err == nil && rpc != nil {
			err = rpc.AsError()
		}
		if err != nil {
			err = s.classify(ctx, ctx, s.listingRequest(), err)
			if s.caps.Tools == nil && page == 0 && mcpflow.ErrorCode(err) == mcpflow.ENotFound {
				return nil, nil // a server of prompts or resources only: no tools, and reached
			}
			return nil, err
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, &mcpflow.Error{Code: mcpflow.EUpstream, Err: err, Message: s.listingRequest().what() + " answered something that is not a tool listing"}
		}
		for _, rt := range res.Tools {
			t, err := rawTool(rt)
			if err != nil {
				s.log.Warn("dropping an MCP tool that cannot be read", "err", err)
				continue
			}
			if s.Modern() {
				if err := mcp.ValidateParamHeaderAnnotations(&t); err != nil {
					s.log.Warn("dropping an MCP tool with invalid x-mcp-header annotations", "tool", t.Name, "err", err)
					continue
				}
			}
			tools = append(tools, t)
		}
		if res.NextCursor == "" || page >= sessMaxListPages {
			break
		}
		cursor = res.NextCursor
	}
	if s.Modern() {
		// Only tools with x-mcp-header bindings need Mcp-Param-* headers.
		bound := map[string]mcp.Tool{}
		for _, t := range tools {
			if len(mcp.ExtractParamHeaderBindings(&t)) > 0 {
				bound[t.Name] = t
			}
		}
		s.toolsMu.Lock()
		s.tools = bound
		s.toolsMu.Unlock()
	}
	return tools, nil
}

const sessMaxListPages = 100

// rawTool reads a tool with its schemas kept as written.
func rawTool(raw json.RawMessage) (mcp.Tool, error) {
	var t mcp.Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, err
	}
	var schemas struct {
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &schemas); err != nil {
		return t, err
	}
	if len(schemas.InputSchema) > 0 && string(schemas.InputSchema) != "null" {
		t.InputSchema, t.RawInputSchema = mcp.ToolInputSchema{}, schemas.InputSchema
	}
	if len(schemas.OutputSchema) > 0 && string(schemas.OutputSchema) != "null" {
		t.OutputSchema, t.RawOutputSchema = mcp.ToolOutputSchema{}, schemas.OutputSchema
	}
	return t, nil
}

type callMetaKey struct{}

// WithCallMeta returns a copy of ctx whose tool calls carry meta in their
// _meta (merged under the call's own; the call's keys win).
func WithCallMeta(ctx context.Context, meta map[string]any) context.Context {
	return context.WithValue(ctx, callMetaKey{}, meta)
}

// CallTool calls tool name with args and meta (over ctx's WithCallMeta),
// bounded by ctx and tool_call_timeout (ETimeout); never retried; a
// failing mcpflow.WithBeforeSend sends nothing. A tool failure is an
// IsError result. Errors: EInvalid (invalid params), ENotFound (unknown
// tool or method), EUpstream (IsDisconnect for a lost transport).
// A "task" answer is a *TaskAnswer; "input_required" goes to the relay
// (*InputRequiredAnswer with PassInput, else Ask and send again); -32021,
// and with PassInput any JSON-RPC error, is an *mcpflow.RPCError; an
// unknown resultType is EUpstream, never an empty success.
func (s *Session) CallTool(ctx context.Context, name string, args any, meta map[string]any) (*mcp.CallToolResult, error) {
	raw, err := s.CallToolRaw(ctx, name, args, meta)
	if err != nil {
		return nil, err
	}
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		return nil, s.Unreadable(name, err)
	}
	return res, nil
}

// Unreadable is the error of a result that is not a CallToolResult.
func (s *Session) Unreadable(name string, err error) error {
	return &mcpflow.Error{Code: mcpflow.EUpstream, Err: err, Message: fmt.Sprintf("%s answered a result mcpflow cannot read: %v", s.toolRequest(name).what(), err)}
}

// CallToolRaw is CallTool returning the result as the server wrote it.
func (s *Session) CallToolRaw(ctx context.Context, name string, args any, meta map[string]any) (json.RawMessage, error) {
	callCtx := ctx
	if s.callTimeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, s.callTimeout)
		defer cancel()
	}
	params := callParams(ctx, name, args, meta)
	if err := mcpflow.BeforeSend(ctx); err != nil {
		return nil, err
	}
	req := s.toolRequest(name)
	relay := relayFrom(ctx)
	var round mcp.MultiRoundTripParams
	if relay != nil {
		if relay.Progress != nil {
			token := "mcpflow-progress-" + strconv.FormatUint(sessTaskSeq.Add(1), 10)
			s.progress.Store(token, relay.Progress)
			defer s.progress.Delete(token)
			if params.Meta == nil {
				params.Meta = &mcp.Meta{}
			}
			params.Meta.ProgressToken = token
		}
		if s.Modern() && (len(relay.InputResponses) > 0 || relay.RequestState != "") { // a retry
			round.RequestState = relay.RequestState
			var answers map[string]json.RawMessage
			if err := json.Unmarshal(relay.InputResponses, &answers); len(relay.InputResponses) > 0 && err != nil {
				return nil, &mcpflow.Error{Code: mcpflow.EInvalid, Message: "inputResponses must be an object"}
			}
			round.InputResponses = inputResponses(answers)
		}
	}
	if relay != nil && relay.Ask != nil {
		s.asks.hold(relay)
		defer s.asks.drop(relay)
	}
	if relay != nil && relay.Log != nil {
		callCtx = s.hearLogs(callCtx, relay)
		defer s.logs.drop(relay)
		if s.Modern() && relay.LogLevel != "" {
			if params.Meta == nil {
				params.Meta = &mcp.Meta{}
			}
			if params.Meta.AdditionalFields == nil {
				params.Meta.AdditionalFields = map[string]any{}
			}
			params.Meta.AdditionalFields[mcp.MetaKeyLogLevel] = relay.LogLevel
		}
	}
	for rounds := 0; ; rounds++ {
		params.MultiRoundTripParams = round
		raw, rpc, err := s.rawRequest(callCtx, mcp.MethodToolsCall, name, params)
		if err != nil {
			return nil, s.classify(ctx, callCtx, req, err)
		}
		if rpc != nil {
			if relay != nil && (relay.PassInput || rpc.Code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY) {
				// The caller's to hear, as the server said it.
				return nil, &mcpflow.RPCError{Code: rpc.Code, Message: rpc.Message, Data: NonEmptyJSON(rpc.Data)}
			}
			return nil, s.classify(ctx, callCtx, req, rpc.AsError())
		}
		input, err := s.toolAnswer(name, raw)
		if err != nil || input == nil {
			return raw, err
		}
		if relay != nil && relay.PassInput {
			return nil, &InputRequiredAnswer{Raw: raw}
		}
		if rounds >= sessMaxInputRounds {
			return nil, &mcpflow.Error{Code: mcpflow.EUpstream,
				Message: fmt.Sprintf("%s asked for input %d times in one call; mcpflow gave up", req.what(), rounds+1)}
		}
		if round, err = s.relayInput(callCtx, name, input); err != nil {
			return nil, err
		}
	}
}

const sessMaxInputRounds = 10

// TaskAnswer is the error of a tools/call answered with a task, which the
// runtime adopts as a durable task.
type TaskAnswer struct {
	Server, Tool string
	TaskID       string
}

func (e *TaskAnswer) Error() string {
	return fmt.Sprintf("MCP tool '%s' on server '%s' answered with task '%s'", e.Tool, e.Server, e.TaskID)
}

// inputRequired is a resultType "input_required" answer.
type inputRequired struct {
	Requests     map[string]json.RawMessage `json:"inputRequests"`
	RequestState string                     `json:"requestState"`
}

// toolAnswer reads an answer's resultType: nil, nil for a result.
func (s *Session) toolAnswer(name string, raw json.RawMessage) (*inputRequired, error) {
	var probe struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	if completeAnswer(raw) {
		return nil, nil
	}
	if t := bytes.TrimLeft(raw, " \t\r\n"); (len(t) == 0 || t[0] != '{') && !bytes.Contains(raw, []byte(`"resultType"`)) {
		return nil, nil // not an object: readResult says what is wrong with it
	}
	what := s.toolRequest(name).what()
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, &mcpflow.Error{Code: mcpflow.EUpstream, Err: err, Message: what + " answered something that is not a result object"}
	}
	switch probe.ResultType {
	case "", "complete":
		return nil, nil
	case "task":
		if probe.TaskID == "" {
			return nil, &mcpflow.Error{Code: mcpflow.EUpstream, Message: what + " answered a task without a taskId"}
		}
		return nil, &TaskAnswer{Server: s.server, Tool: name, TaskID: probe.TaskID}
	case "input_required":
		var in inputRequired
		if err := json.Unmarshal(raw, &in); err != nil || (len(in.Requests) == 0 && in.RequestState == "") {
			return nil, &mcpflow.Error{Code: mcpflow.EUpstream, Message: what + " asked for input without saying what it needs"}
		}
		return &in, nil
	}
	return nil, &mcpflow.Error{Code: mcpflow.EUpstream, Message: fmt.Sprintf(
		"%s answered resultType %q, which mcpflow cannot read: the call's outcome is unknown", what, mcpflow.TruncateChars(probe.ResultType, 40))}
}

// completeAnswer reports, from a walk over raw's top-level members
// without decoding them, whether raw is an answer the probe in toolAnswer
// would read as complete: an object with no resultType or "complete", and
// any taskId a string. Every 2025 answer and every complete 2026 one is;
// anything else (another resultType, a member name encoding/json would
// match to resultType or taskId in another spelling, escaped or non-ASCII
// names, not valid JSON) returns false and is decoded.
func completeAnswer(raw []byte) bool {
	i := jsonscan.SkipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' || !json.Valid(raw) {
		return false
	}
	seen := false
	return jsonscan.Members(raw, i, func(key []byte, v, end int) bool {
		switch {
		case strings.EqualFold(string(key), "resultType"):
			if seen || string(key) != "resultType" || string(raw[v:end]) != `"complete"` {
				return false
			}
			seen = true
		case strings.EqualFold(string(key), "taskId"):
			return raw[v] == '"'
		}
		return true
	})
}

// relaySet counts the calls in flight of a kind, by their relay.
type relaySet struct {
	mu sync.Mutex
	m  map[*mcpflow.CallRelay]int
}

func (rs *relaySet) hold(r *mcpflow.CallRelay) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m == nil {
		rs.m = map[*mcpflow.CallRelay]int{}
	}
	rs.m[r]++
}

func (rs *relaySet) drop(r *mcpflow.CallRelay) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m[r]--; rs.m[r] <= 0 {
		delete(rs.m, r)
	}
}

func (rs *relaySet) all() []*mcpflow.CallRelay {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Collect(maps.Keys(rs.m))
}

// askerOf returns who a server request goes to: the relay in ctx (streamable
// HTTP), else on stdio the one call in flight that can ask, else nil.
func (s *Session) askerOf(ctx context.Context) *mcpflow.CallRelay {
	if r := relayFrom(ctx); r != nil {
		if r.Ask == nil {
			return nil
		}
		return r
	}
	if s.proc == nil {
		return nil
	}
	if calls := s.asks.all(); len(calls) == 1 {
		return calls[0]
	}
	return nil
}

// InputRequiredAnswer is an input_required result passed as it is
// (CallRelay.PassInput).
type InputRequiredAnswer struct{ Raw json.RawMessage }

func (e *InputRequiredAnswer) Error() string { return "the MCP server asked the caller for input" }

type relayKey struct{}

// WithRelay returns ctx whose tool calls carry the caller's relay.
func WithRelay(ctx context.Context, r *mcpflow.CallRelay) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, relayKey{}, r)
}

func relayFrom(ctx context.Context) *mcpflow.CallRelay {
	r, _ := ctx.Value(relayKey{}).(*mcpflow.CallRelay)
	return r
}

// inputResponses keeps each raw answer as it is.
func inputResponses(answers map[string]json.RawMessage) mcp.InputResponses {
	if len(answers) == 0 {
		return nil
	}
	out := make(mcp.InputResponses, len(answers))
	for k, v := range answers {
		var r mcp.InputResponse
		_ = r.UnmarshalJSON(v)
		out[k] = r
	}
	return out
}

// relayInput asks the caller (CallRelay.Ask) and returns the next round.
func (s *Session) relayInput(ctx context.Context, name string, in *inputRequired) (mcp.MultiRoundTripParams, error) {
	next := mcp.MultiRoundTripParams{RequestState: in.RequestState}
	if len(in.Requests) == 0 {
		return next, nil
	}
	var ask func(context.Context, map[string]json.RawMessage) (map[string]json.RawMessage, error)
	if r := relayFrom(ctx); r != nil {
		ask = r.Ask
	}
	if ask == nil {
		return next, &mcpflow.Error{Code: mcpflow.EUpstream, Message: fmt.Sprintf(
			"%s asked the caller a question (%s), but this call cannot ask its caller: call it through an MCP client that declares the elicitation capability",
			s.toolRequest(name).what(), inputKinds(in.Requests))}
	}
	answers, err := ask(ctx, in.Requests)
	if err != nil {
		return next, err
	}
	next.InputResponses = inputResponses(answers)
	return next, nil
}

// inputKinds names the methods of input requests ("elicitation/create").
func inputKinds(requests map[string]json.RawMessage) string {
	var kinds []string
	for _, raw := range requests {
		var r struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(raw, &r) == nil && r.Method != "" && !slices.Contains(kinds, r.Method) {
			kinds = append(kinds, r.Method)
		}
	}
	slices.Sort(kinds)
	return strings.Join(kinds, ", ")
}

// callParams returns the params of a tools/call of name with args and
// meta merged over the WithCallMeta keys of ctx (meta's keys win).
func callParams(ctx context.Context, name string, args any, meta map[string]any) mcp.CallToolParams {
	switch a := args.(type) {
	case json.RawMessage:
		if len(a) == 0 {
			args = map[string]any{}
		}
	case map[string]any:
		if a == nil {
			args = map[string]any{}
		}
	case nil:
		args = map[string]any{}
	}
	p := mcp.CallToolParams{Name: name, Arguments: args}
	if extra, ok := ctx.Value(callMetaKey{}).(map[string]any); ok && len(extra) > 0 {
		merged := maps.Clone(extra)
		maps.Copy(merged, meta)
		meta = merged
	}
	if len(meta) > 0 {
		p.Meta = mcp.NewMetaFromMap(maps.Clone(meta))
	}
	return p
}

// encodeCallParams is json.Marshal(p) written directly for the common
// call: raw JSON arguments and nothing but a name and a _meta besides
// (mcp-go's MarshalJSON reflects over the struct and compacts the
// arguments twice, about 10 µs a call in serve's profile). Anything else
// goes to json.Marshal. The arguments keep their spacing, which the
// stdio transport compacts when it must (a line break) and HTTP carries.
func encodeCallParams(p mcp.CallToolParams) ([]byte, error) {
	args, ok := p.Arguments.(json.RawMessage)
	if !ok || len(args) == 0 || len(p.RawArguments) > 0 || p.Task != nil || p.RequestState != "" || len(p.InputResponses) > 0 ||
		!json.Valid(args) {
		return json.Marshal(p)
	}
	var meta []byte
	if p.Meta != nil {
		var err error
		if meta, err = json.Marshal(p.Meta); err != nil {
			return nil, err
		}
	}
	b := make([]byte, 0, len(`{"name":"","arguments":,"_meta":}`)+len(p.Name)+len(args)+len(meta))
	b = append(b, `{"name":`...)
	b = jsonscan.AppendString(b, p.Name)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	if meta != nil {
		b = append(b, `,"_meta":`...)
		b = append(b, meta...)
	}
	return append(b, '}'), nil
}

// Close ends the session (idempotent). A stdio server gets its stdin
// closed, then SIGTERM, then SIGKILL; it is reaped when Close returns.
func (s *Session) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown(true) })
	return s.closeErr
}

// abort tears the session down at once (failed initialization).
func (s *Session) abort() {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown(false) })
}

func (s *Session) shutdown(graceful bool) error {
	s.markLost()
	if s.proc != nil && !graceful {
		s.proc.signal(syscall.SIGKILL)
	}
	var err error
	if s.client != nil {
		if cerr := s.client.Close(); cerr != nil {
			err = fmt.Errorf("close MCP session of server '%s': %w", s.server, cerr)
		}
	}
	if s.proc != nil {
		if perr := s.proc.stop(graceful); perr != nil && err == nil {
			err = fmt.Errorf("stop MCP server '%s': %w", s.server, perr)
		}
	}
	s.cancel()
	return err
}

func (s *Session) markLost() {
	s.lostOnce.Do(func() { close(s.done) })
}

// sessRequest names a request for classify's errors. A tools/call's
// names are written only when an error needs them (every call makes one).
type sessRequest struct {
	desc    string // what(), unless tool is set
	missing string // notFound(), unless tool is set
	tool    string // the tool of a tools/call, "" otherwise
	server  string // a tools/call's server
}

// what names the request: "MCP tool 'x' on server 'y'".
func (r sessRequest) what() string {
	if r.tool == "" {
		return r.desc
	}
	return "MCP tool '" + r.tool + "' on server '" + r.server + "'"
}

// notFound is the ENotFound message of a -32601 answer.
func (r sessRequest) notFound() string {
	if r.tool == "" {
		return r.missing
	}
	return "MCP tool '" + r.tool + "' not found on server '" + r.server + "'"
}

func (s *Session) listingRequest() sessRequest {
	return sessRequest{desc: fmt.Sprintf("MCP tool listing of server '%s'", s.server),
		missing: fmt.Sprintf("MCP server '%s' does not list tools", s.server)}
}

func (s *Session) toolRequest(tool string) sessRequest {
	return sessRequest{tool: tool, server: s.server}
}

// classify turns an mcp-go error into a domain error; opCtx is ctx bounded
// by tool_call_timeout.
func (s *Session) classify(ctx, opCtx context.Context, req sessRequest, err error) error {
	what, tool := req.what(), req.tool
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	if opCtx != ctx && sessExpired(opCtx) {
		return &mcpflow.Error{Code: mcpflow.ETimeout, Err: err,
			Message: fmt.Sprintf("%s timed out after %.1fs", what, s.callTimeout.Seconds())}
	}
	if sessRawDisconnect(err) {
		s.markLost()
		return s.disconnected(what, tool, err)
	}
	switch {
	case errors.Is(err, mcp.ErrMethodNotFound):
		return &mcpflow.Error{Code: mcpflow.ENotFound, Err: err, Message: req.notFound()}
	case errors.Is(err, mcp.ErrInvalidParams):
		msg := sessRPCMessage(err, mcp.ErrInvalidParams)
		if tool != "" && sessUnknownTool(msg, tool) {
			return &mcpflow.Error{Code: mcpflow.ENotFound, Err: err, Message: req.notFound()}
		}
		return &mcpflow.Error{Code: mcpflow.EInvalid, Err: err,
			Message: fmt.Sprintf("%s rejected the request: %s", what, msg)}
	case errors.Is(err, transport.ErrAuthorizationRequired), errors.Is(err, transport.ErrOAuthAuthorizationRequired):
		return &mcpflow.Error{Code: mcpflow.EUpstream, Err: err,
			Message: fmt.Sprintf("MCP server '%s' requires authorization", s.server)}
	}
	for _, sentinel := range []error{mcp.ErrInternalError, mcp.ErrInvalidRequest, mcp.ErrParseError, mcp.ErrRequestInterrupted} {
		if errors.Is(err, sentinel) {
			return &mcpflow.Error{Code: mcpflow.EUpstream, Err: err,
				Message: fmt.Sprintf("%s failed: %s", what, sessRPCMessage(err, sentinel))}
		}
	}
	if s.Lost() {
		return s.disconnected(what, tool, err)
	}
	if sessUnknownSession(err.Error()) { // e.g. the server restarted
		s.markLost()
		return s.disconnected(what, tool, err)
	}
	return &mcpflow.Error{Code: mcpflow.EUpstream, Err: err, Message: what + " failed"}
}

// sessUnknownSession reports whether an error message says the server does
// not know the session ("Session not found", "No valid session ID
// provided", "Server not initialized", "Missing session ID", ...).
func sessUnknownSession(msg string) bool {
	l := strings.ToLower(msg)
	if strings.Contains(l, "server not initialized") {
		return true
	}
	if !strings.Contains(l, "session") {
		return false
	}
	for _, s := range []string{"not found", "no valid", "invalid", "unknown", "expired", "terminated", "missing"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// sessUnknownSessionAnswer is sessUnknownSession for the transports'
// server-defined codes.
func sessUnknownSessionAnswer(e *mcp.JSONRPCErrorDetails) bool {
	return (e.Code == -32000 || e.Code == -32001) && sessUnknownSession(e.Message)
}

// Lost reports whether the session ended (Done is closed).
func (s *Session) Lost() bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

func (s *Session) disconnected(what, tool string, err error) error {
	s.log.Info("MCP transport lost", "tool", tool, "err", err)
	return &mcpflow.Error{Code: mcpflow.EUpstream, Err: fmt.Errorf("%w: %w", errSessDisconnected, err),
		Message: fmt.Sprintf("%s failed: connection to the server was lost", what)}
}

// sessExpired reports whether ctx's deadline passed (mcp-go's SSE timer
// may fire a moment before ctx ends).
func sessExpired(ctx context.Context) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// IsDisconnect reports whether err is a lost process, stream, transport or
// HTTP session (not a timeout, isError, JSON-RPC or credential error).
func IsDisconnect(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errSessDisconnected) {
		return true
	}
	var de *mcpflow.Error
	return !errors.As(err, &de) && sessRawDisconnect(err)
}

// sessRawDisconnect classifies an unwrapped mcp-go error.
func sessRawDisconnect(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	for _, target := range []error{
		transport.ErrTransportClosed, transport.ErrSessionTerminated,
		io.EOF, io.ErrUnexpectedEOF, io.ErrClosedPipe, os.ErrClosed, net.ErrClosed,
		syscall.EPIPE, syscall.ECONNRESET, syscall.ECONNABORTED,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	// The SSE transport reports these without a sentinel.
	msg := err.Error()
	return strings.Contains(msg, "connection has been closed") || strings.Contains(msg, "transport has been closed")
}

// sessRPCMessage returns the message of mcp-go's "<sentinel>: <message>".
func sessRPCMessage(err, sentinel error) string {
	msg := err.Error()
	if i := strings.Index(msg, sentinel.Error()+": "); i >= 0 {
		return msg[i+len(sentinel.Error())+2:]
	}
	return sentinel.Error()
}

// sessUnknownTool reports whether an invalid-params message says the tool
// does not exist (mcp-go: "tool 'x' not found", Python SDK: "Unknown tool: x").
func sessUnknownTool(msg, tool string) bool {
	l := strings.ToLower(msg)
	return strings.Contains(l, "unknown tool") || strings.Contains(l, "tool not found") ||
		strings.Contains(l, "'"+strings.ToLower(tool)+"' not found")
}

// sessHeaderFunc merges static headers with per-request ones (see
// credential.MergeHeaders).
func sessHeaderFunc(static map[string]string, dynamic func(context.Context) map[string]string) func(context.Context) map[string]string {
	return func(ctx context.Context) map[string]string {
		var over map[string]string
		if dynamic != nil {
			over = dynamic(ctx)
		}
		if len(static) == 0 && len(over) == 0 {
			return nil // no header to set, the common case: no map per request
		}
		return credential.MergeHeaders(static, over)
	}
}

func sessClientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// sessProc is a stdio server process the session owns: it waits for it
// (Done fires when it exits) and kills its group.
type sessProc struct {
	pid        int
	exited     chan struct{} // closed once the process is reaped
	stdout     *os.File
	stderr     *os.File // logged at debug
	stderrDone chan struct{}
}

// sessStartProcess starts srv's command in its own process group and
// returns a transport over its stdin/stdout.
func sessStartProcess(ctx context.Context, srv *config.Server, o DialOptions, log *slog.Logger, onExit func()) (*sessProc, *stdiopipe.Transport, error) {
	cmd := exec.CommandContext(ctx, srv.Command, srv.Args...)
	cmd.Env = sessEnv(srv.Env, o.Env)
	cmd.Dir = o.Dir
	if srv.Cwd != "" {
		cmd.Dir = srv.Cwd
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

	var files []*os.File // read and write ends of stdin, stdout, stderr
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	for _, name := range []string{"stdin", "stdout", "stderr"} {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("create %s pipe: %w", name, err)
		}
		files = append(files, r, w)
	}
	inR, inW, outR, outW, errR, errW := files[0], files[1], files[2], files[3], files[4], files[5]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, nil, err
	}
	// The child holds its ends now.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()

	p := &sessProc{
		pid:        cmd.Process.Pid,
		exited:     make(chan struct{}),
		stdout:     outR,
		stderr:     errR,
		stderrDone: make(chan struct{}),
	}
	go func() {
		err := cmd.Wait()
		log.Debug("MCP stdio server exited", "pid", p.pid, "status", err)
		close(p.exited)
		onExit()
	}()
	go p.readStderr(log)
	return p, stdiopipe.New(outR, inW, sessTransportLogger(log)), nil
}

func sessEnv(server, defaults map[string]string) []string {
	env := map[string]string{}
	for _, k := range sessInheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	maps.Copy(env, defaults)
	maps.Copy(env, server)
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

func (p *sessProc) readStderr(log *slog.Logger) {
	defer close(p.stderrDone)
	br := bufio.NewReaderSize(p.stderr, sessStderrLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && log.Enabled(context.Background(), slog.LevelDebug) {
			log.Debug("MCP server stderr", "pid", p.pid, "line", strings.TrimRight(string(line), "\r\n"))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func (p *sessProc) signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.pid, sig)
}

func (p *sessProc) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// stop ends the process, then the rest of its group, and releases the pipes.
func (p *sessProc) stop(graceful bool) error {
	var err error
	if graceful && !p.waitExit(sessStdinGrace) {
		p.signal(syscall.SIGTERM)
		if !p.waitExit(sessTermGrace) {
			p.signal(syscall.SIGKILL)
		}
	} else if !graceful {
		p.signal(syscall.SIGKILL)
	}
	if !p.waitExit(sessKillWait) {
		err = fmt.Errorf("process %d did not exit after SIGKILL", p.pid)
	}
	// Descendants that stayed in the group.
	if syscall.Kill(-p.pid, syscall.SIGKILL) == nil {
		deadline := time.Now().Add(sessGroupWait)
		for syscall.Kill(-p.pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	_ = p.stdout.Close()
	_ = p.stderr.Close()
	<-p.stderrDone
	return err
}

// sessTransportLogger caps mcp-go's transport logs at warn: it logs routine
// events as errors, and the session reports failures itself.
func sessTransportLogger(l *slog.Logger) *slog.Logger {
	return slog.New(sessLevelCap{l.Handler()})
}

type sessLevelCap struct{ slog.Handler }

func (h sessLevelCap) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, min(l, slog.LevelWarn))
}

func (h sessLevelCap) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelWarn {
		r.Level = slog.LevelWarn
	}
	return h.Handler.Handle(ctx, r)
}

func (h sessLevelCap) WithAttrs(a []slog.Attr) slog.Handler {
	return sessLevelCap{h.Handler.WithAttrs(a)}
}
func (h sessLevelCap) WithGroup(n string) slog.Handler { return sessLevelCap{h.Handler.WithGroup(n)} }

// NonEmptyJSON is v as JSON, nil for null, {} or [].
func NonEmptyJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	switch string(b) {
	case "null", "{}", "[]":
		return nil
	}
	return b
}
