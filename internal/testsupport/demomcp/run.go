package demomcp

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// DefaultAddr is the listen address for the HTTP transports: loopback only,
// port 0 picks a free port.
const DefaultAddr = "127.0.0.1:0"

// ListeningPrefix starts the one line Run prints to Options.Stderr once an
// HTTP transport listens; the base URL follows, e.g.
// "demo-mcp listening on http://127.0.0.1:40123".
const ListeningPrefix = "demo-mcp listening on "

// Options configures Run.
type Options struct {
	// Transport is TransportStdio, TransportSSE or TransportHTTP. Default: stdio.
	Transport string
	// Addr is the listen address for sse and http. Default: DefaultAddr.
	Addr string
	// StatePath is the optional JSON state file (see Config.StatePath).
	StatePath string
	// Workdir is the directory write_file writes into; created if missing.
	// Default: the process working directory at call time.
	Workdir string
	// Stdin and Stdout carry the stdio transport. Default: os.Stdin, os.Stdout.
	Stdin  io.Reader
	Stdout io.Writer
	// Stderr receives logs and the listening line. Default: os.Stderr.
	Stderr io.Writer
	// RecordCalls: see Config.RecordCalls.
	RecordCalls bool
	// ShutdownTimeout bounds the graceful HTTP shutdown. Default: 5s.
	ShutdownTimeout time.Duration
	// Logger overrides the default text logger on Stderr.
	Logger *slog.Logger
}

// WithDefaults returns a copy of o with defaults filled in.
func (o Options) WithDefaults() Options {
	if o.Transport == "" {
		o.Transport = TransportStdio
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(o.Stderr, nil))
	}
	return o
}

func (o Options) validate() error {
	if !slices.Contains([]string{TransportStdio, TransportSSE, TransportHTTP}, o.Transport) {
		return fmt.Errorf("transport: %q is not one of stdio, sse, http", o.Transport)
	}
	return nil
}

// Run serves the demo tools on the configured transport until ctx is done
// (or, for stdio, stdin is closed), then shuts down gracefully. A shutdown
// caused by ctx is not an error.
func Run(ctx context.Context, opts Options) error {
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return err
	}
	if opts.Workdir != "" {
		if err := os.MkdirAll(opts.Workdir, 0o755); err != nil {
			return fmt.Errorf("create workdir: %w", err)
		}
	}
	srv, err := New(Config{StatePath: opts.StatePath, Workdir: opts.Workdir, Logger: opts.Logger, RecordCalls: opts.RecordCalls})
	if err != nil {
		return err
	}
	if opts.Transport == TransportStdio {
		return runStdio(ctx, srv, opts)
	}
	return runHTTP(ctx, srv, opts)
}

func runStdio(ctx context.Context, srv *Server, opts Options) error {
	stdio := server.NewStdioServer(srv.MCPServer())
	stdio.SetErrorLogger(log.New(opts.Stderr, "demo-mcp: ", log.LstdFlags))
	opts.Logger.Info("demo-mcp serving on stdio", "state", opts.StatePath)
	err := stdio.Listen(ctx, opts.Stdin, opts.Stdout)
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("serve stdio: %w", err)
	}
	opts.Logger.Info("demo-mcp stopped")
	return nil
}

func runHTTP(ctx context.Context, srv *Server, opts Options) error {
	handler, closeSessions, err := srv.HTTPHandler(opts.Transport)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		opts.Logger.Warn("demo-mcp is listening on a non-loopback address", "addr", ln.Addr().String())
	}
	httpSrv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()

	fmt.Fprintf(opts.Stderr, "%shttp://%s\n", ListeningPrefix, ln.Addr().String())
	opts.Logger.Info("demo-mcp serving", "transport", opts.Transport, "state", opts.StatePath)

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
	defer cancel()
	done := make(chan error, 1)
	closeSessions(shutdownCtx)
	go func() { done <- httpSrv.Shutdown(shutdownCtx) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				opts.Logger.Warn("graceful shutdown incomplete; closing connections", "err", err)
				_ = httpSrv.Close()
			}
			<-serveErr // http.ErrServerClosed
			opts.Logger.Info("demo-mcp stopped")
			return nil
		case <-tick.C:
			// Streams opened after the first sweep would hold Shutdown open.
			closeSessions(shutdownCtx)
		}
	}
}
