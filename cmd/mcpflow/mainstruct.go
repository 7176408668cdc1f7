package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/audit"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpclient"
	"github.com/mcpflow/mcpflow/mcpclient/route"
	"github.com/mcpflow/mcpflow/mcpclient/taskdriver"
	"github.com/mcpflow/mcpflow/mcpserver"
	"github.com/mcpflow/mcpflow/policy"
	"github.com/mcpflow/mcpflow/ratelimit"
	"github.com/mcpflow/mcpflow/store"
	"github.com/mcpflow/mcpflow/worker"
	"github.com/mcpflow/mcpflow/workflows"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
)

// Process modes (subcommands).
const (
	ModeServe  = "serve"
	ModeWorker = "worker"
	ModeDev    = "dev"
)

// ConfigError is a start-up error caused by configuration: the command
// prints it as one line and exits 2.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Main is one mcpflow process: configuration, database, Temporal client,
// HTTP API and Temporal worker, opened by Open and closed by Close. The
// end-to-end tests run it in-process.
type Main struct {
	Mode       string
	ConfigPath string
	Env        func(string) (string, bool)
	Logger     *slog.Logger

	stopPprof func() // the profiler's (MCPFLOW_PPROF_ADDR), nil when off

	// Set by Open.
	Config         *config.Service
	Extensions     *config.Extensions
	ExtensionsPath string
	DB             *store.DB
	Temporal       client.Client
	API            *api.Server
	auditLog       *audit.Log // the audit log (audit.enabled); nil when off
	MCP            *mcpclient.Runtime
	MCPServer      *mcpserver.Server  // the MCP endpoint; nil in a worker
	Tasks          *worker.TaskClient // nil when mcp_tasks.enabled is false

	telemetry   *telemetry
	taskServers map[string]config.Server // enabled servers with task_toolsets or native_tasks, frozen at start
	// idempotentSubmit holds mcp_tasks.idempotent_submit_servers.
	idempotentSubmit map[string]bool
	secrets          *mcpflow.SecretBox // seals request secrets of durable submits; nil without a key
	// temporalNamespace is the namespace the client resolved (config,
	// TEMPORAL_*, temporal.toml or the default).
	temporalNamespace string
	versioning        *worker.Versioning // temporal.worker_versioning; nil: unversioned
	// oauth makes the API an OAuth 2.1 protected resource (auth.oidc);
	// nil without identity providers.
	oauth  *api.OAuthResource
	pinned sdkworker.Worker

	httpServer *http.Server
	listener   net.Listener
	baseCancel context.CancelFunc
	worker     sdkworker.Worker
	polling    atomic.Bool // the worker started (m.worker is set)
	workerCtx  context.CancelFunc
	workerDone chan struct{}
	failed     chan error
	closeOnce  sync.Once
}

func (m *Main) serves() bool { return m.Mode == ModeServe || m.Mode == ModeDev }

// WorkerPolling reports whether this process's Temporal worker has started
// (safe from any goroutine).
func (m *Main) WorkerPolling() bool { return m.polling.Load() }
func (m *Main) works() bool         { return m.Mode == ModeWorker || m.Mode == ModeDev }

// Failed delivers the first fatal error of a background component.
func (m *Main) Failed() <-chan error {
	if m.failed == nil {
		m.failed = make(chan error, 1)
	}
	return m.failed
}

func (m *Main) fail(err error) {
	select {
	case m.failed <- err:
	default:
	}
}

func (m *Main) shutdownTimeout() time.Duration {
	if m.Config != nil && m.Config.Server.ShutdownTimeoutSeconds > 0 {
		return m.Config.Server.ShutdownTimeout()
	}
	return 20 * time.Second
}

// Open loads the configuration, opens the database and the Temporal
// client, and starts the HTTP API and/or the worker as the mode says. It
// returns a *ConfigError for configuration problems.
func (m *Main) Open(ctx context.Context) error {
	if m.Logger == nil {
		m.Logger = slog.Default()
	}
	if m.failed == nil {
		m.failed = make(chan error, 1)
	}
	log := m.Logger
	cfg, err := config.LoadService(m.ConfigPath, m.Env)
	if err != nil {
		return &ConfigError{err}
	}
	m.Config = cfg
	extPath, err := config.Locate(cfg.ExtensionsConfig, cfg.Dir, m.Env)
	if err != nil {
		return &ConfigError{err}
	}
	m.ExtensionsPath = extPath
	if extPath != "" {
		ext, err := config.LoadExtensions(extPath, m.Env)
		if err != nil {
			return &ConfigError{err}
		}
		m.Extensions = ext
	}
	if err := m.freezeTaskServers(); err != nil {
		return &ConfigError{err}
	}
	if err := m.openSecretBox(); err != nil {
		return &ConfigError{err}
	}
	auth, err := api.NewAuthenticator(authConfig(cfg))
	if err != nil {
		return &ConfigError{fmt.Errorf("%s: %w", sourceName(cfg), err)}
	}
	if m.oauth, err = oauthResource(ctx, cfg, m.Logger); err != nil {
		return &ConfigError{fmt.Errorf("%s: %w", sourceName(cfg), err)}
	}
	topts, tsum, err := worker.ClientOptions(temporalConnection(cfg.Temporal), m.Env)
	if err != nil {
		return &ConfigError{fmt.Errorf("%s: %w", sourceName(cfg), err)}
	}
	m.temporalNamespace = tsum.Namespace
	if cfg.Temporal.WorkerVersioning && m.works() {
		v, err := workerVersioning(cfg.Temporal)
		if err != nil {
			return &ConfigError{fmt.Errorf("%s: %w", sourceName(cfg), err)}
		}
		m.versioning = v
		tsum.BuildID = v.BuildID
	}
	attrs := []any{"mode", m.Mode, "config", cmp.Or(cfg.Path, "(none)"), "extensions_config", cmp.Or(extPath, "(none)"), "database", cfg.Database.Backend}
	attrs = append(attrs, tsum.LogAttrs()...)
	log.Info("starting mcpflow", append(attrs, "task_queue", cfg.Temporal.TaskQueue)...)

	tel, err := newTelemetry(m.Env, m.Mode)
	if err != nil {
		return &ConfigError{err}
	}
	m.telemetry = tel
	if m.stopPprof, err = startPprof(m.Env, log); err != nil {
		return &ConfigError{err}
	}

	db, err := store.Open(ctx, cfg.Database.Backend, cfg.Database.DSN)
	if err != nil {
		return fmt.Errorf("open %s database: %w", cfg.Database.Backend, err)
	}
	m.DB = db

	topts.Logger = sdklog.NewStructuredLogger(temporalLogger(log))
	topts.MetricsHandler = tel.temporalMetrics()
	topts.Interceptors = tel.interceptors()
	tc, err := client.NewLazyClient(topts)
	if err != nil {
		return fmt.Errorf("temporal client: %w", err)
	}
	m.Temporal = tc

	// With no file found, the runtime watches the path the admin API
	// creates it at, so the first write is picked up like any edit.
	runtimePath := extPath
	if runtimePath == "" {
		runtimePath = m.defaultExtensionsPath()
	}
	ro := mcpclient.Options{
		ExtensionsPath:  runtimePath,
		Initial:         m.Extensions,
		Env:             m.Env,
		WorkspaceRoot:   cfg.Workspace.Root,
		MaxContentBytes: cfg.Server.MaxContentBytes,
		Logger:          log,
		Meter:           tel.meter(),
		Tracer:          tel.tracer.Tracer("github.com/mcpflow/mcpflow/mcpclient"),
	}
	if cfg.MCPTasks.Enabled {
		ro.MaxPinnedPerUser = cfg.MCPTasks.MaxPinnedSessionsPerUser
		ro.FrozenTaskServers = m.taskServers
		if m.Extensions != nil {
			ro.FrozenInterceptors = m.Extensions.MCPInterceptors
		}
	}
	m.MCP = mcpclient.NewRuntime(ro)

	if cfg.MCPTasks.Enabled {
		m.Tasks = &worker.TaskClient{Client: tc, TaskQueue: cfg.Temporal.TaskQueue, Config: m.taskConfig(),
			Servers: m.taskServers, CurrentServer: m.MCP.Server, Secrets: m.secrets, Logger: log, IdempotentSubmit: m.idempotentSubmit,
			MaxRunningPerUser: cfg.MCPTasks.MaxRunningTasksPerUser, Slots: m.DB, Tasks: m.DB, Namespace: m.temporalNamespace}
		if m.serves() {
			m.MCP.SetSubmitter(m.Tasks.Submit)
			m.MCP.SetBackgroundTasks(backgroundTasks{m.DB, m.Tasks})
		}
	}

	if err := m.startHTTP(auth); err != nil {
		return err
	}
	if m.works() {
		m.startWorker()
	}
	return nil
}

func (m *Main) startHTTP(auth *api.Authenticator) error {
	cfg := m.Config
	var cancelTask func(context.Context, *mcpflow.Task) error
	var answerInput func(context.Context, *mcpflow.Task, mcpflow.InputAnswer) error
	var threadDeleted func(context.Context, *mcpflow.Thread)
	if m.Tasks != nil {
		cancelTask = m.Tasks.CancelTask
		answerInput = m.Tasks.AnswerInput
		threadDeleted = m.threadDeleted
	}
	admin := &config.Admin{Path: m.MCP.ExtensionsPath(), Env: m.Env, Policy: config.NewLaunchPolicy(m.Env),
		Log: m.Logger, OnChange: m.MCP.ResetCache}
	// The edges see the tools through the policies, for each request's
	// caller; the worker's task activities use the runtime itself.
	tools := &policy.Guard{Next: m.MCP, Policies: m.MCP.Policies, Views: m.MCP.VirtualServers, Limiter: &ratelimit.Limiter{Store: m.DB}}
	if m.Tasks != nil {
		tools.Approvals = m.Tasks
	}
	if a := cfg.Audit; a.Enabled {
		// A worker's log holds the records of the approved calls it makes;
		// the API's also sweeps old records.
		retention := time.Duration(a.RetentionDays) * 24 * time.Hour
		if !m.serves() {
			retention = 0
		}
		m.auditLog = audit.New(audit.Options{Store: m.DB, QueueSize: a.QueueSize,
			FlushEvery: time.Duration(a.FlushIntervalMS) * time.Millisecond,
			Retention:  retention, Logger: m.Logger, Meter: m.telemetry.meter(),
			Export: m.telemetry.auditLogger()})
	}
	if m.auditLog != nil && m.serves() {
		tools.Audit = m.auditLog.Add
		admin.Audit = func(ctx context.Context, kind, detail string) {
			m.auditLog.Add(ctx, mcpflow.AuditRecord{Kind: kind, Detail: detail})
		}
		cancelTask, answerInput = m.auditTaskActions(cancelTask, answerInput)
	}
	if m.serves() {
		m.countTasks()
	}
	if store := m.approvalStore(); store != nil {
		m.MCP.SetApprovals(store, m.recordAudit())
	}
	var tracer trace.TracerProvider
	if m.telemetry.spans != nil {
		tracer = m.telemetry.spans
	}
	var taskLink func(string) string
	if base := cfg.Temporal.WebUIURL; base != "" {
		taskLink = func(id string) string { return worker.WebUILink(base, m.temporalNamespace, id) }
	}
	var mcpEndpoint mcpflow.MCPEndpoint
	if m.serves() {
		mo := mcpserver.Options{Tools: tools, Sessions: m.DB, Events: m.DB, PollInterval: cfg.MCPTasks.PollInterval(), Logger: m.Logger,
			TaskLink: taskLink, MaxSessionsPerUser: cfg.Server.MaxMCPSessionsPerUser,
			Version: version()} // serverInfo.version: the stamp mcpflow version prints
		if m.Tasks != nil {
			mo.Tasks, mo.CancelTask, mo.AnswerInput = m.DB, cancelTask, answerInput // audited when the audit log is on
		}
		m.MCPServer = mcpserver.New(mo)
		mcpEndpoint = m.MCPServer
	}
	m.API = api.New(api.Options{
		MCP:            mcpEndpoint,
		AllowedOrigins: cfg.Server.AllowedOrigins,
		// A worker serves only health, readiness and metrics.
		HealthOnly:  !m.serves(),
		Meter:       m.telemetry.meter(),
		Metrics:     m.telemetry.handler(),
		Tracer:      tracer,
		Config:      admin,
		CancelTask:  cancelTask,
		AnswerInput: answerInput,
		Auth:        auth,
		OAuth:       m.oauth,
		Threads:     m.DB,
		Tools:       tools,
		Audit:       m.auditStore(),
		Approvals:   m.approvalStore(),
		RecordAudit: m.recordAudit(),
		Readiness: []api.Check{
			{Name: "database", Check: m.DB.Ping},
			{Name: "temporal", Check: func(ctx context.Context) error {
				_, err := m.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
				return err
			}},
		},
		Tasks:               m.DB,
		Events:              m.DB,
		ThreadDeleted:       threadDeleted,
		DegradedAfterErrors: cfg.MCPTasks.TrackingDegradedAfterErrors,
		TaskLink:            taskLink,
		MCPTasksEnabled:     func() bool { return m.Tasks != nil },
		MaxBodyBytes:        int64(cfg.Server.MaxBodyBytes),
		MaxCallsPerUser:     cfg.Server.MaxConcurrentCallsPerUser,
		MaxWaitsPerUser:     cfg.Server.MaxWaitsPerUser,
		MaxStreamsPerUser:   cfg.Server.MaxMCPStreamsPerUser,
		Logger:              m.Logger,
	})
	addr, what, key := cfg.Server.Addr, "API listening", "server.addr"
	if !m.serves() {
		addr, what, key = cfg.Server.WorkerAddr, "health and metrics listening", "server.worker_addr"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s (%s): %w", addr, key, err)
	}
	m.listener = ln
	baseCtx, cancel := context.WithCancel(context.Background())
	m.baseCancel = cancel
	m.httpServer = &http.Server{
		Handler:           m.API.Handler(),
		ReadHeaderTimeout: config.Seconds(cfg.Server.ReadHeaderTimeoutSeconds),
		ReadTimeout:       config.Seconds(cfg.Server.ReadTimeoutSeconds),
		WriteTimeout:      config.Seconds(cfg.Server.WriteTimeoutSeconds),
		IdleTimeout:       config.Seconds(cfg.Server.IdleTimeoutSeconds),
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
	}
	if m.MCPServer != nil {
		// Open MCP streams and waiting tasks/result calls end at once, so
		// a graceful stop does not wait for them.
		m.httpServer.RegisterOnShutdown(m.MCPServer.Stop)
	}
	go func() {
		if err := m.httpServer.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.fail(fmt.Errorf("http server: %w", err))
		}
	}()
	m.Logger.Info(what, "url", m.URL())
	return nil
}

// URL is the base URL of this process's HTTP listener: the API, or a
// worker's health and metrics ("" before Open).
func (m *Main) URL() string {
	if m.listener == nil {
		return ""
	}
	return "http://" + m.listener.Addr().String()
}

// approvalStore is the store of calls waiting for approval, which the API
// serves when it serves calls and durable tasks run (nil otherwise).
func (m *Main) approvalStore() mcpflow.ApprovalStore {
	if m.Tasks == nil || !m.serves() {
		return nil
	}
	return m.DB
}

// recordAudit adds a record to the audit log (nil when it is off).
func (m *Main) recordAudit() func(context.Context, mcpflow.AuditRecord) {
	if m.auditLog == nil {
		return nil
	}
	return m.auditLog.Add
}

// closeAudit writes the audit records still queued, within ctx.
func (m *Main) closeAudit(ctx context.Context) {
	if err := m.auditLog.Close(ctx); err != nil {
		m.Logger.Warn("audit records still queued at shutdown were not all written", "error", err)
	}
}

// approvalDriver runs approved calls in the worker; the one record of each
// goes to this process's audit log (written in batches, and exported to a
// collector like the API's), as the driver wrote it.
func (m *Main) approvalDriver() *taskdriver.Approval {
	d := &taskdriver.Approval{Store: m.DB, Call: m.MCP.CallTool, Logger: m.Logger}
	if m.auditLog != nil {
		d.Audit = func(_ context.Context, r mcpflow.AuditRecord) { m.auditLog.Record(r) }
	}
	return d
}

// startWorker waits for Temporal in the background, makes sure the search
// attributes exist, then starts the worker. A worker that cannot start
// fails the process.
func (m *Main) startWorker() {
	ctx, cancel := context.WithCancel(context.Background())
	m.workerCtx = cancel
	m.workerDone = make(chan struct{})
	pinnedQueue := m.Config.Temporal.TaskQueue + "@" + processID()
	drivers := &taskdriver.Drivers{
		Ordinary: &taskdriver.Ordinary{Call: m.callTaskTool},
		Native:   &taskdriver.Native{Run: m.runTaskSession, Questions: m.MCP.Questions()},
		Approval: m.approvalDriver(),
	}
	acts := &activities.Activities{Driver: drivers, Tasks: m.DB, Threads: m.DB, Events: m.DB,
		Secrets: m.secrets, Webhook: m.webhook(), PinnedQueue: pinnedQueue, Heartbeats: m.Temporal, Reports: m.Temporal}
	acts.Meter = m.telemetry.meter()
	opts := worker.Options{
		TaskQueue:               m.Config.Temporal.TaskQueue,
		MaxConcurrentActivities: m.Config.MCPTasks.MaxConcurrentPolls * 32,
		StopTimeout:             m.shutdownTimeout() / 2,
		Register: func(r sdkworker.Registry) {
			r.RegisterWorkflow(workflows.TaskWorkflow)
			r.RegisterActivity(acts)
		},
		Versioning: m.versioning,
	}
	w := worker.New(m.Temporal, opts)
	// The pinned queue's worker stays unversioned: it runs activities only
	// (nothing to replay), and its queue belongs to this process alone.
	// Versioned, that queue would be one of the version's task queues,
	// which a newer build (another process) never polls, so the server
	// refuses to make the newer build current (tried: promotion stalled
	// until the old process stopped).
	opts.TaskQueue = pinnedQueue
	opts.Register = func(r sdkworker.Registry) { r.RegisterActivity(acts) }
	opts.Versioning = nil
	pinned := worker.New(m.Temporal, opts)
	go func() {
		defer close(m.workerDone)
		if err := worker.WaitForTemporal(ctx, m.Temporal, m.Logger); err != nil {
			if ctx.Err() == nil {
				m.fail(err)
			}
			return
		}
		worker.RegisterSearchAttributes(ctx, m.Temporal, m.temporalNamespace, m.Logger)
		if ctx.Err() != nil {
			return
		}
		if err := pinned.Start(); err != nil {
			m.fail(fmt.Errorf("start Temporal worker on %s: %w", pinnedQueue, err))
			return
		}
		m.pinned = pinned
		if err := w.Start(); err != nil {
			m.fail(fmt.Errorf("start Temporal worker: %w", err))
			return
		}
		m.worker = w
		m.polling.Store(true)
		m.Logger.Info("worker polling", "task_queue", m.Config.Temporal.TaskQueue)
		if m.versioning != nil {
			m.promote(ctx)
		}
	}()
}

// Close stops the process in order: the API stops accepting requests and
// lets in-flight ones finish until ctx's deadline, after which their
// contexts are cancelled (hung upstream calls end); then the worker stops,
// and the Temporal client and the database close. It is safe to call more
// than once.
func (m *Main) Close(ctx context.Context) error {
	var errs []error
	m.closeOnce.Do(func() {
		if m.stopPprof != nil {
			defer m.stopPprof()
		}
		if m.httpServer != nil {
			grace := ctx
			if dl, ok := ctx.Deadline(); ok {
				// Leave a slice of the budget for cancelling stragglers.
				var cancel context.CancelFunc
				grace, cancel = context.WithDeadline(ctx, dl.Add(-time.Until(dl)/5))
				defer cancel()
			}
			if err := m.httpServer.Shutdown(grace); err != nil {
				m.Logger.Warn("in-flight requests did not finish in time; cancelling them", "error", err)
				m.baseCancel()
				if err := m.httpServer.Shutdown(ctx); err != nil {
					_ = m.httpServer.Close()
					errs = append(errs, fmt.Errorf("http shutdown: %w", err))
				}
			}
			m.baseCancel()
		}
		if m.auditLog != nil && !m.works() {
			// After the API stopped: every call it answered is queued.
			m.closeAudit(ctx)
		}
		if m.workerCtx != nil {
			m.workerCtx()
			<-m.workerDone
			if m.worker != nil {
				m.worker.Stop()
			}
			if m.pinned != nil {
				m.pinned.Stop()
			}
		}
		if m.auditLog != nil && m.works() {
			// After the worker stopped too: its approved calls are queued.
			m.closeAudit(ctx)
		}
		if m.MCP != nil {
			if err := m.MCP.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close MCP sessions: %w", err))
			}
		}
		if m.Temporal != nil {
			m.Temporal.Close()
		}
		if m.telemetry != nil {
			if err := m.telemetry.close(ctx); err != nil {
				m.Logger.Warn("could not flush telemetry", "error", err)
			}
		}
		if m.DB != nil {
			if err := m.DB.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close database: %w", err))
			}
		}
	})
	return errors.Join(errs...)
}

// auditStore is the store of the audit log when it is on.
func (m *Main) auditStore() mcpflow.AuditStore {
	if m.auditLog == nil {
		return nil
	}
	return m.DB
}

// auditTaskActions wraps a task's cancel and answer (the API's and the
// MCP endpoint's) so each is audited with its outcome.
func (m *Main) auditTaskActions(cancel func(context.Context, *mcpflow.Task) error,
	answer func(context.Context, *mcpflow.Task, mcpflow.InputAnswer) error) (func(context.Context, *mcpflow.Task) error,
	func(context.Context, *mcpflow.Task, mcpflow.InputAnswer) error) {
	if cancel == nil || answer == nil {
		return cancel, answer
	}
	record := func(ctx context.Context, kind string, t *mcpflow.Task, start time.Time, err error) {
		out := mcpflow.OutcomeOK
		if err != nil {
			out = mcpflow.OutcomeUpstreamError
		}
		m.auditLog.Add(ctx, mcpflow.AuditRecord{Time: start, Kind: kind, UserID: t.UserID, ThreadID: t.ThreadID, Server: t.ServerName,
			Tool: t.TaskName, TaskID: t.ID, Outcome: out, LatencyMS: float64(time.Since(start).Microseconds()) / 1000})
	}
	return func(ctx context.Context, t *mcpflow.Task) error {
			start := time.Now()
			err := cancel(ctx, t)
			record(ctx, mcpflow.AuditTaskCancel, t, start, err)
			return err
		}, func(ctx context.Context, t *mcpflow.Task, a mcpflow.InputAnswer) error {
			start := time.Now()
			err := answer(ctx, t, a)
			record(ctx, mcpflow.AuditTaskAnswer, t, start, err)
			return err
		}
}

// workerVersioning builds the worker's deployment version; the build id
// defaults to the binary's version, which must then be a real one.
func workerVersioning(t config.TemporalSection) (*worker.Versioning, error) {
	id := t.BuildID
	if id == "" {
		id = version()
		if id == "dev" {
			return nil, errors.New("temporal.worker_versioning: this binary carries no version to use as its build id " +
				"(build it with make build or -ldflags \"-X main.buildVersion=...\"), so set temporal.build_id")
		}
	}
	return &worker.Versioning{DeploymentName: t.DeploymentName, BuildID: id, Promote: t.Promote}, nil
}

// promote applies temporal.promote once the worker polls, and says in the
// log which build takes new tasks. A failure is logged, not fatal: the
// operator can always promote with the temporal CLI.
func (m *Main) promote(ctx context.Context) {
	v := *m.versioning
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := worker.Promote(pctx, m.Temporal, v, m.Logger)
	attrs := []any{"deployment", v.DeploymentName, "build_id", v.BuildID}
	switch {
	case err != nil:
		if ctx.Err() == nil {
			m.Logger.Warn("could not promote this worker version; promote it with: "+v.SetCurrentCommand(), append(attrs, "error", err)...)
		}
	case res.Promoted:
		m.Logger.Info("this worker version is now current: new tasks, and running ones at their next step, run on it", attrs...)
	case res.Current == v.BuildID:
		m.Logger.Info("this worker version is current", attrs...)
	default:
		m.Logger.Warn("this worker version is not current, so it takes no task until promoted with: "+v.SetCurrentCommand(),
			append(attrs, "current", cmp.Or(res.Current, "unversioned workers"), "reason", res.Reason)...)
	}
}

// temporalConnection is the temporal section's connection keys.
func temporalConnection(t config.TemporalSection) worker.Connection {
	return worker.Connection{Address: t.Address, Namespace: t.Namespace, Profile: t.Profile, ConfigFile: t.ConfigFile,
		TLS: t.TLS, TLSCAFile: t.TLSCAFile, TLSCertFile: t.TLSCertFile, TLSKeyFile: t.TLSKeyFile,
		TLSServerName: t.TLSServerName, APIKey: t.APIKey}
}

func authConfig(cfg *config.Service) api.AuthConfig {
	a := api.AuthConfig{AdminTokens: cfg.Auth.AdminTokens, AdminTokenSHA256: cfg.Auth.AdminTokenSHA256}
	for _, u := range cfg.Auth.Users {
		a.Users = append(a.Users, api.UserToken{UserID: u.ID, Token: u.Token, TokenSHA256: u.TokenSHA256})
	}
	return a
}

func sourceName(cfg *config.Service) string { return cmp.Or(cfg.Path, "configuration") }

// temporalLogger keeps the Temporal SDK's routine info logs out of the way.
func temporalLogger(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{l.Handler(), slog.LevelWarn}).With("component", "temporal")
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}
func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(a), h.min}
}
func (h minLevel) WithGroup(n string) slog.Handler { return minLevel{h.Handler.WithGroup(n), h.min} }

// freezeTaskServers applies the start-up rules of spec §2.11 to the task
// servers (enabled, with task_toolsets or native_tasks): they need
// mcp_tasks.enabled, and every task server's connection must build. The
// servers are frozen: later edits make their tools fail with a restart
// error instead of silently changing running tasks. A server whose only
// durable tools are native tools with taskSupport "required" is not frozen
// (see runTaskSession).
func (m *Main) freezeTaskServers() error {
	m.taskServers = map[string]config.Server{}
	var servers []config.Server
	if m.Extensions != nil {
		servers = m.Extensions.Servers
	}
	for _, s := range servers {
		if !mcpclient.IsTaskServer(&s) {
			continue
		}
		if !m.Config.MCPTasks.Enabled {
			if len(s.TaskToolsets) == 0 {
				return fmt.Errorf("%s: mcpServers.%s.native_tasks: native MCP tasks are enabled for this server, so mcp_tasks.enabled=true is required; mcpflow will not silently expose these tools as synchronous calls", m.ExtensionsPath, s.Name)
			}
			return fmt.Errorf("%s: mcpServers.%s.task_toolsets: MCP task_toolsets are configured, so mcp_tasks.enabled=true is required; mcpflow will not silently expose these tools as synchronous calls", m.ExtensionsPath, s.Name)
		}
		if err := s.ConnectionProblem(); err != nil {
			return fmt.Errorf("%s: mcpServers.%s: %w", m.ExtensionsPath, s.Name, err)
		}
		m.taskServers[s.Name] = s
	}
	m.idempotentSubmit = map[string]bool{}
	for _, name := range m.Config.MCPTasks.IdempotentSubmitServers {
		if _, ok := m.taskServers[name]; !ok {
			return fmt.Errorf("%s: mcp_tasks.idempotent_submit_servers: '%s' is not an enabled MCP server with task_toolsets (or native_tasks)", sourceName(m.Config), name)
		}
		m.idempotentSubmit[name] = true
	}
	return nil
}

// openSecretBox builds the box that seals the request secrets a durable
// submit carries (headers_from_context). serve and worker processes need
// mcp_tasks.secrets_key to share it; mcpflow dev seals and opens in one
// process and makes up a key when none is set. The spec's §3.7 warning is
// logged for every task server with headers_from_context.
func (m *Main) openSecretBox() error {
	var needs []string
	for _, name := range slices.Sorted(maps.Keys(m.taskServers)) {
		s := m.taskServers[name]
		if s.HeadersFromContext != nil && s.HeadersFromContext.Enabled && s.Type != config.TransportStdio {
			needs = append(needs, name)
			m.Logger.Warn("MCP server has both headers_from_context and task_toolsets (or native_tasks): the submit carries the request's credentials, while status and cancel polls run later without them and use its static, OAuth and user_auth credentials", "server", name)
		}
	}
	switch key := m.Config.MCPTasks.SecretsKey; {
	case key != "":
		box, err := mcpflow.NewSecretBox(key)
		if err != nil {
			return fmt.Errorf("%s: mcp_tasks.secrets_key: %w", sourceName(m.Config), err)
		}
		m.secrets = box
	case m.Mode == ModeDev:
		m.secrets = mcpflow.NewRandomSecretBox()
	case len(needs) > 0:
		return fmt.Errorf("%s: mcp_tasks.secrets_key: must be set (the same on serve and worker) because task server(s) %s use headers_from_context, whose request secrets a durable submit carries to the worker", sourceName(m.Config), strings.Join(needs, ", "))
	}
	return nil
}

// callTaskTool is the ordinary driver's way to the remote tools: through
// the runtime, with the server configuration frozen at start-up.
func (m *Main) callTaskTool(ctx context.Context, server, tool, userID, threadID string, args map[string]any) (*mcp.CallToolResult, error) {
	srv, ok := m.taskServers[server]
	if !ok {
		return nil, mcpflow.Errorf(mcpflow.EUnavailable, "MCP server '%s' has no task toolsets in the configuration mcpflow started with; restart mcpflow", server)
	}
	return m.MCP.Call(ctx, &srv, tool, userID, threadID, args)
}

// runTaskSession is the native driver's way to the sessions: through the
// runtime, with the server configuration frozen at start-up when the
// server is a task server (native_tasks), else with its current
// configuration (a tool whose taskSupport is "required" is durable on any
// server; set native_tasks: true to freeze such a server too).
func (m *Main) runTaskSession(ctx context.Context, server, userID, threadID string, op route.Op) error {
	srv, ok := m.taskServers[server]
	if !ok {
		cur, err := m.MCP.Server(ctx, server)
		if err != nil {
			return err
		}
		srv = *cur
	}
	return m.MCP.Run(ctx, &srv, userID, threadID, op)
}

// countTasks reports the tasks by status as a gauge, read from the
// database at each scrape (API processes only, so workers do not repeat
// it).
func (m *Main) countTasks() {
	meter := m.telemetry.meter()
	g, err := meter.Int64ObservableGauge("mcpflow.tasks", metric.WithDescription("durable tasks by status"))
	if err != nil {
		return
	}
	_, _ = meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		counts, err := m.DB.CountTasksByStatus(ctx)
		if err != nil {
			return nil // the scrape goes on without this gauge
		}
		for _, st := range mcpflow.Statuses {
			o.ObserveInt64(g, counts[st], metric.WithAttributes(attribute.String("status", string(st))))
		}
		return nil
	}, g)
}

// defaultExtensionsPath is where the admin API creates
// extensions_config.json when none was found: beside config.yaml, or in the
// working directory.
func (m *Main) defaultExtensionsPath() string {
	return filepath.Join(cmp.Or(m.Config.Dir, "."), "extensions_config.json")
}

// threadDeleted wakes the notification delivery of the deleted thread's
// tasks, so their pending events dead-letter now (a deleted thread gets
// nothing) instead of at their next retry.
func (m *Main) threadDeleted(ctx context.Context, t *mcpflow.Thread) {
	tasks, err := m.DB.ListTasks(ctx, mcpflow.TaskFilter{UserID: t.UserID, ThreadID: t.ID, Limit: store.MaxTaskListLimit})
	if err != nil {
		m.Logger.Warn("could not list a deleted thread's tasks", "thread_id", t.ID, "error", err)
		return
	}
	m.Tasks.WakeNotifications(ctx, tasks)
}

// webhook is the notification webhook of this worker, nil when none is
// configured.
func (m *Main) webhook() *activities.Webhook {
	n := m.Config.Notifications
	if n.WebhookURL == "" {
		return nil
	}
	return &activities.Webhook{URL: n.WebhookURL, Secret: []byte(n.WebhookSecret)}
}

func (m *Main) taskConfig() workflows.TaskConfig {
	t := m.Config.MCPTasks
	return workflows.TaskConfig{
		Webhook: m.Config.Notifications.WebhookURL != "",
		Timing: mcpflow.PollTiming{PollInterval: t.PollInterval(), InputRequiredInterval: t.InputRequiredPollInterval(),
			MaxPollBackoff: t.MaxPollBackoff(), DegradedAfterErrors: t.TrackingDegradedAfterErrors},
		Bounds:      mcpflow.Bounds{MaxResultBytes: t.MaxResultBytes, ResultPreviewMaxChars: t.ResultPreviewMaxChars},
		CallTimeout: t.Lease(),
	}
}

// processID names this worker process's pinned task queue.
func processID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// backgroundTasks serves the built-in task tools from the store and the
// task client.
type backgroundTasks struct {
	*store.DB
	*worker.TaskClient
}
