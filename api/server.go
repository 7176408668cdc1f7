package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Check is one readiness dependency (database, Temporal).
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Options are the dependencies of the API server.
type Options struct {
	Auth    *Authenticator
	OAuth   *OAuthResource // identity providers' tokens and metadata (nil: static tokens only)
	Threads mcpflow.ThreadStore
	Tools   mcpflow.ToolRuntime // nil: no MCP tool routes
	Audit   mcpflow.AuditStore  // nil: the audit log is off (GET /api/audit answers 404)
	// Approvals holds the calls waiting for approval (nil: no approval
	// routes); RecordAudit, when set, records each decision.
	Approvals      mcpflow.ApprovalStore
	RecordAudit    func(ctx context.Context, r mcpflow.AuditRecord)
	Tasks          mcpflow.TaskStore   // nil: no task routes
	Events         mcpflow.EventStore  // nil: no thread inbox route
	Config         mcpflow.ConfigAdmin // nil: no config admin routes
	MCP            mcpflow.MCPEndpoint // /mcp, /mcp/threads/{thread_id}; nil: none
	AllowedOrigins []string            // browser origins the MCP endpoint accepts (else 403)
	// ThreadDeleted runs after a thread was deleted, so its tasks' pending
	// notifications dead-letter now (nil: nothing to do).
	ThreadDeleted func(ctx context.Context, t *mcpflow.Thread)
	// CancelTask asks the task's workflow to cancel it (EUnavailable: no
	// worker). Nil: 503.
	CancelTask func(ctx context.Context, t *mcpflow.Task) error
	// AnswerInput delivers an answer to a task's question upstream:
	// EConflict when the task no longer takes it (mcpflow.ErrInputGone,
	// ErrAnswerPending, ErrTaskCancelling), EUpstream when the server did
	// not, EUnavailable without a worker. Nil: 503.
	AnswerInput         func(ctx context.Context, t *mcpflow.Task, a mcpflow.InputAnswer) error
	TaskLink            func(taskID string) string // Temporal Web UI link of a task; nil: none
	DegradedAfterErrors int                        // mcp_tasks.tracking_degraded_after_errors
	Readiness           []Check
	ReadyTimeout        time.Duration // per check; default 2 s
	MCPTasksEnabled     func() bool   // whether the task runtime actually started
	Meter               metric.Meter  // HTTP metrics; nil: none
	Metrics             http.Handler  // GET /metrics; nil: no route
	Tracer              trace.TracerProvider
	HealthOnly          bool  // only /healthz, /readyz and /metrics (a worker)
	MaxBodyBytes        int64 // 413 beyond; default 1 MiB
	// Per-user caps in this process (429 beyond; default 32 each): tool
	// calls in flight; waits (events long polls, MCP tasks/result and
	// tasks/cancel, together); open MCP GET streams.
	MaxCallsPerUser   int
	MaxWaitsPerUser   int
	MaxStreamsPerUser int
	Logger            *slog.Logger
	Now               func() time.Time
}

// Server is the HTTP API.
type Server struct {
	opts    Options
	log     *slog.Logger
	engine  *gin.Engine
	now     func() time.Time
	threads threadCache
	calls   userSlots // tool calls in flight
	waits   userSlots // events long polls and MCP waits
	streams userSlots // MCP GET streams
	metrics *httpMetrics
}

func init() { gin.SetMode(gin.ReleaseMode) }

// New builds the API server and its routes.
func New(opts Options) *Server {
	s := &Server{opts: opts, log: opts.Logger, now: opts.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.opts.ReadyTimeout <= 0 {
		s.opts.ReadyTimeout = 2 * time.Second
	}
	if s.opts.MaxBodyBytes <= 0 {
		s.opts.MaxBodyBytes = 1 << 20
	}
	if s.opts.MaxCallsPerUser <= 0 {
		s.opts.MaxCallsPerUser = 32
	}
	if s.opts.MaxWaitsPerUser <= 0 {
		s.opts.MaxWaitsPerUser = 32
	}
	if s.opts.MaxStreamsPerUser <= 0 {
		s.opts.MaxStreamsPerUser = 32
	}
	s.calls.max = s.opts.MaxCallsPerUser
	s.waits.max = s.opts.MaxWaitsPerUser
	s.streams.max = s.opts.MaxStreamsPerUser
	s.metrics = newHTTPMetrics(opts.Meter)
	e := gin.New()
	e.ContextWithFallback = true
	_ = e.SetTrustedProxies(nil)
	e.HandleMethodNotAllowed = true
	if opts.Tracer != nil {
		e.Use(s.tracing())
	}
	e.Use(s.requestIDMiddleware, s.accessLog, s.measure, s.recovery, s.limitBody)
	e.NoRoute(func(c *gin.Context) { s.renderError(c, mcpflow.Errorf(mcpflow.ENotFound, "no such route")) })
	e.NoMethod(func(c *gin.Context) {
		s.abort(c, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed on this route")
	})

	// HEAD too: load balancers and uptime checkers probe with it (net/http
	// sends the status and headers, not the body).
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		e.Handle(m, "/healthz", s.healthz)
		e.Handle(m, "/readyz", s.readyz)
	}
	if opts.Metrics != nil {
		e.GET("/metrics", gin.WrapH(opts.Metrics))
	}
	if !opts.HealthOnly {
		s.routes(e)
	}
	s.engine = e
	return s
}

// routes adds the routes of a full server (not a worker's health-only
// one), by the capabilities Options enable.
func (s *Server) routes(e *gin.Engine) {
	opts := s.opts
	e.GET("/openapi.json", s.openAPI)
	s.addOAuthRoutes(e)
	e.GET("/api/features", s.features)

	user := e.Group("/api", s.authenticate, s.requireUser)
	user.POST("/threads", s.createThread)
	user.GET("/threads/:thread_id", s.getThread)
	user.DELETE("/threads/:thread_id", s.deleteThread)
	if opts.Events != nil {
		user.GET("/threads/:thread_id/events", s.listEvents)
	}
	if opts.Tasks != nil {
		user.GET("/threads/:thread_id/mcp-tasks", s.listTasks)
		user.GET("/threads/:thread_id/mcp-tasks/:task_id", s.getTask)
		user.POST("/threads/:thread_id/mcp-tasks/:task_id/cancel", s.cancelTask)
		user.POST("/threads/:thread_id/mcp-tasks/:task_id/input", s.answerInput)
	}
	if opts.Approvals != nil {
		user.GET("/approvals", s.listApprovals)
		user.POST("/approvals/:task_id", s.decideApproval)
	}
	if opts.Tools != nil {
		user.GET("/threads/:thread_id/tools", s.listTools)
		user.POST("/threads/:thread_id/tools/:tool/call", s.callTool)
		admin := e.Group("/api", s.authenticate, s.requireAdmin)
		admin.POST("/mcp/cache/reset", s.resetCache)
	}
	if opts.MCP != nil {
		mcp := e.Group("/mcp", s.checkOrigin)
		// CORS preflights carry no token.
		mcp.OPTIONS("", s.mcpPreflight)
		mcp.OPTIONS("/threads/:thread_id", s.mcpPreflight)
		mcp.OPTIONS("/v/:server", s.mcpPreflight)
		mcp.OPTIONS("/v/:server/threads/:thread_id", s.mcpPreflight)
		authed := mcp.Group("", s.authenticate, s.requireUser)
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			authed.Handle(method, "", s.serveMCP)
			authed.Handle(method, "/threads/:thread_id", s.serveMCP)
			// A virtual server: its tools only (extensions_config.json
			// virtualServers), the same endpoint otherwise.
			authed.Handle(method, "/v/:server", s.serveMCP)
			authed.Handle(method, "/v/:server/threads/:thread_id", s.serveMCP)
		}
	}
	if opts.Config != nil {
		admin := e.Group("/api", s.authenticate, s.requireAdmin)
		cfg := opts.Config
		admin.GET("/mcp/config", s.readConfig(cfg.MCPConfig))
		admin.PUT("/mcp/config", s.writeConfig(http.StatusOK, cfg.ReplaceMCPServers))
		admin.PATCH("/mcp/config", s.patchConfig)
		admin.POST("/mcp/config/servers", s.writeConfig(http.StatusCreated, cfg.AddMCPServers))
		admin.GET("/mcp/policies", s.readConfig(cfg.PolicyConfig))
		admin.PUT("/mcp/policies", s.writeConfig(http.StatusOK, cfg.ReplacePolicies))
		admin.GET("/mcp/virtual-servers", s.readConfig(cfg.VirtualServers))
		admin.PUT("/mcp/virtual-servers", s.writeConfig(http.StatusOK, cfg.ReplaceVirtualServers))
	}
	if !opts.HealthOnly {
		e.GET("/api/audit", s.authenticate, s.requireAdmin, s.listAudit)
	}
}

// Handler returns the http.Handler of the API.
func (s *Server) Handler() http.Handler { return s.engine }

// Admin returns the router group of admin-only routes under /api.
func (s *Server) Admin() gin.IRoutes {
	return s.engine.Group("/api", s.authenticate, s.requireAdmin)
}

const (
	ctxPrincipal = "mcpflow.principal"
	ctxRequestID = "mcpflow.request_id"
	ctxMCPMethod = "mcpflow.mcp_method"
)

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func (s *Server) requestIDMiddleware(c *gin.Context) {
	id := c.GetHeader("X-Request-ID")
	if !requestIDPattern.MatchString(id) {
		id = newRequestID()
	}
	c.Set(ctxRequestID, id)
	c.Header("X-Request-ID", id)
	c.Next()
}

func requestID(c *gin.Context) string { return c.GetString(ctxRequestID) }

// Request ids are a random per-process prefix and a counter: unique, cheap
// (no system call per request), and not guessable across restarts.
var (
	requestIDPrefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	requestIDSeq atomic.Uint64
)

func newRequestID() string {
	return requestIDPrefix + strconv.FormatUint(requestIDSeq.Add(1)|1<<32, 16)[1:]
}

// routeOf is the request's route template, "(unmatched)" for none: the
// only path form logs and metrics carry.
func routeOf(c *gin.Context) string {
	if r := c.FullPath(); r != "" {
		return r
	}
	return "(unmatched)"
}

// accessLog logs one line per request: the route template (never the raw
// query or headers, which may carry secrets), status, latency and caller.
func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := routeOf(c)
	level := slog.LevelInfo
	if route == "/healthz" || route == "/readyz" || route == "/metrics" {
		level = slog.LevelDebug
	}
	ctx := c.Request.Context()
	h := s.log.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	// The record goes to the handler directly, with no caller: a Logger
	// looks the caller up on every line (runtime.Callers), which the access
	// line never shows (a measurable share of a tool call's hop). Its
	// attributes go into the record in one AddAttrs, from an array on the
	// stack: the record keeps five inline, so the rest cost one
	// allocation, not one per AddAttrs.
	r := slog.NewRecord(time.Now(), level, "http request", 0)
	attrs := [8]slog.Attr{
		slog.String("request_id", requestID(c)),
		slog.String("method", c.Request.Method),
		slog.String("route", route),
		slog.Int("status", c.Writer.Status()),
		slog.Duration("latency", time.Since(start)),
	}
	n := 5
	if m := c.GetString(ctxMCPMethod); m != "" {
		attrs[n], n = slog.String("mcp_method", m), n+1
	}
	if p, ok := principal(c); ok {
		if p.Admin {
			attrs[n], n = slog.Bool("admin", true), n+1
		}
		if p.UserID != "" {
			attrs[n], n = slog.String("user_id", p.UserID), n+1
		}
	}
	r.AddAttrs(attrs[:n]...)
	_ = h.Handle(ctx, r)
}

func (s *Server) recovery(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.Error("panic in handler", "request_id", requestID(c), "route", routeOf(c), "panic", r)
			s.renderError(c, mcpflow.Errorf(mcpflow.EInternal, "internal error"))
		}
	}()
	c.Next()
}

func principal(c *gin.Context) (Principal, bool) {
	v, ok := c.Get(ctxPrincipal)
	if !ok {
		return Principal{}, false
	}
	p, ok := v.(Principal)
	return p, ok
}

func (s *Server) requireAdmin(c *gin.Context) {
	if p, _ := principal(c); !p.Admin {
		s.refuseAdmin(c, p)
		return
	}
	c.Next()
}

func (s *Server) requireUser(c *gin.Context) {
	if p, _ := principal(c); p.UserID == "" {
		s.renderError(c, mcpflow.Errorf(mcpflow.EForbidden, "this route needs a user token; admin tokens only manage configuration"))
		return
	}
	c.Next()
}

func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

func (s *Server) readyz(c *gin.Context) {
	checks := map[string]string{}
	ready := true
	for _, chk := range s.opts.Readiness {
		ctx, cancel := context.WithTimeout(c.Request.Context(), s.opts.ReadyTimeout)
		err := chk.Check(ctx)
		cancel()
		if err != nil {
			ready = false
			checks[chk.Name] = "unavailable"
			s.log.Warn("readiness check failed", "check", chk.Name, "error", err)
			continue
		}
		checks[chk.Name] = "ok"
	}
	status, code := "ok", http.StatusOK
	if !ready {
		status, code = "unavailable", http.StatusServiceUnavailable
	}
	c.JSON(code, gin.H{"status": status, "checks": checks})
}

func (s *Server) features(c *gin.Context) {
	enabled := s.opts.MCPTasksEnabled != nil && s.opts.MCPTasksEnabled()
	c.JSON(http.StatusOK, gin.H{"mcp_tasks": gin.H{"enabled": enabled}})
}
