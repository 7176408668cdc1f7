// Command mcpflow runs the mcpflow API (serve), the Temporal worker (worker),
// or both in one process (dev), and is a client of that API for people
// (tools, call, tasks, events; see cli.go). See README.md and DESIGN.md.
//
// Package main wires the adapters together; it is the only package that
// imports all of them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

const usage = `usage: mcpflow <command> [--config FILE] [--log-format text|json] [--log-level debug|info|warn|error]

commands:
  serve    HTTP API, MCP client runtime and Temporal client
  worker   Temporal worker (task workflows and activities)
  dev      serve and worker in one process (SQLite by default)
  healthcheck [URL]
           exit 0 when URL (default http://127.0.0.1:8080/readyz) answers 2xx
           within 5 s, else 1: a container health check without a shell
  version  print mcpflow's version (the commit make build stamps) and Go's
           (also --version)

The config file comes from --config, else $MCPFLOW_CONFIG; without either,
defaults and MCPFLOW_* environment variables apply.

client commands (call a running mcpflow's REST API as a user):
  tools [TOOL]               list the thread's MCP tools, or show one
  call TOOL [key=value...]   call a tool (values are JSON when valid JSON, else
                             strings; or --args '{...}'); --watch a task it starts
  tasks [list|get ID|cancel ID|watch ID]
                             the thread's durable tasks; watch follows one to its
                             end and exits 0 completed, 1 failed, 3 cancelled
  events [--follow]          the thread's task events, in order

  --url URL       default $MCPFLOW_URL, else http://127.0.0.1:8080
  --token TOKEN   default $MCPFLOW_TOKEN, else the file .dev/user.token
  --thread ID     default $MCPFLOW_THREAD, else "cli"
  --json          the API's JSON (one object per line for --follow and watch)

See mcpflow <client command> --help. They exit 1 on an API error, 2 on a
usage error.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

// run parses the command line, starts mcpflow and blocks until ctx ends or a
// component fails; it returns the process exit code. Configuration errors
// print one line and return 2.
func run(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(args) > 1 && args[0] == "help" && slices.Contains(cliCommands, args[1]) {
		return runCLI(ctx, append(args[1:2:2], "--help"), env, stdout, stderr)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	mode := args[0]
	if mode == "version" || mode == "--version" {
		return printVersion(args[1:], stdout, stderr)
	}
	if isCLI(args) {
		return runCLI(ctx, args, env, stdout, stderr)
	}
	if mode == "healthcheck" {
		return healthcheck(args[1:], stderr)
	}
	switch mode {
	case ModeServe, ModeWorker, ModeDev:
	default:
		fmt.Fprintf(stderr, "mcpflow: unknown command %q\n%s", mode, usage)
		return 2
	}
	fs := flag.NewFlagSet("mcpflow "+mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "path to config.yaml (default $MCPFLOW_CONFIG)")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpflow: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *configPath == "" {
		*configPath, _ = env("MCPFLOW_CONFIG")
	}
	logger, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "mcpflow: %v\n", err)
		return 2
	}

	m := &Main{Mode: mode, ConfigPath: *configPath, Env: env, Logger: logger}
	if err := m.Open(ctx); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			fmt.Fprintf(stderr, "mcpflow: %s\n", oneLine(ce.Error()))
			return 2
		}
		logger.Error("start-up failed", "error", err)
		closeCtx, cancel := context.WithTimeout(context.Background(), m.shutdownTimeout())
		_ = m.Close(closeCtx)
		cancel()
		return 1
	}
	code := 0
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "signal", signalName(ctx))
	case err := <-m.Failed():
		logger.Error("component failed; shutting down", "error", err)
		code = 1
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), m.shutdownTimeout())
	defer cancel()
	if err := m.Close(closeCtx); err != nil {
		logger.Error("shutdown incomplete", "error", err)
		code = 1
	}
	logger.Info("stopped")
	return code
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: must be debug, info, warn or error (got %q)", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format: must be text or json (got %q)", format)
	}
}

func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// printVersion prints the binary's version (what make build stamps with
// -ldflags "-X main.buildVersion=...", see version), the Go release that
// built it, and its platform: "mcpflow <version> <go version> <os>/<arch>".
// The MCP endpoint reports the same version as serverInfo.version.
func printVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprintln(stdout, "usage: mcpflow version (or mcpflow --version): print mcpflow's version, Go's and the platform")
			return 0
		}
		fmt.Fprintf(stderr, "mcpflow: version takes no arguments (got %q)\n", args[0])
		return 2
	}
	fmt.Fprintf(stdout, "mcpflow %s %s %s/%s\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

// healthcheck GETs a URL and reports whether it answered 2xx.
func healthcheck(args []string, stderr io.Writer) int {
	url := "http://127.0.0.1:8080/readyz"
	if len(args) > 0 {
		url = args[0]
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintf(stderr, "mcpflow healthcheck: %v\n", err)
		return 1
	}
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		fmt.Fprintf(stderr, "mcpflow healthcheck: %s answered %d\n", url, resp.StatusCode)
		return 1
	}
	return 0
}

// signalName names the signal that ended ctx, as main's NotifyContext
// records it in the context's cause ("SIGTERM", "SIGINT"; another cause as
// it says).
func signalName(ctx context.Context) string {
	cause := context.Cause(ctx)
	if cause == nil {
		return "none"
	}
	switch name := strings.TrimSuffix(cause.Error(), " signal received"); name {
	case syscall.SIGINT.String():
		return "SIGINT"
	case syscall.SIGTERM.String():
		return "SIGTERM"
	default:
		return name
	}
}
