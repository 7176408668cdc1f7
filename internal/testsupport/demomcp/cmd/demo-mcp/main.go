// Command demo-mcp runs the demo MCP server (package internal/testsupport/demomcp) over
// stdio, SSE or streamable HTTP for `make dev` and the integration tests.
//
// Usage:
//
//	demo-mcp [--transport stdio|sse|http] [--addr 127.0.0.1:0] [--state FILE] [--workdir DIR]
//
// --addr falls back to $DEMO_MCP_ADDR and --state to $DEMO_MCP_STATE. For sse
// and http it prints "demo-mcp listening on http://HOST:PORT" to stderr once
// listening. SIGINT or SIGTERM shuts it down gracefully with exit status 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	transport := fs.String("transport", demomcp.TransportStdio, "transport: stdio, sse or http")
	addr := fs.String("addr", envOr("DEMO_MCP_ADDR", demomcp.DefaultAddr), "listen address for sse/http (port 0 picks a free port; env DEMO_MCP_ADDR)")
	state := fs.String("state", os.Getenv("DEMO_MCP_STATE"), "JSON file that persists jobs and counters across restarts (env DEMO_MCP_STATE)")
	workdir := fs.String("workdir", "", "directory write_file writes into (default: the working directory)")
	record := fs.Bool("record-calls", false, "keep the credentials and the raw arguments of every tool call in memory for the headers tool's history (tests only)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "demo-mcp: unexpected arguments: %v\n", fs.Args())
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := demomcp.Run(ctx, demomcp.Options{
		Transport:   *transport,
		Addr:        *addr,
		StatePath:   *state,
		Workdir:     *workdir,
		RecordCalls: *record,
		Stderr:      stderr,
	})
	if err != nil {
		fmt.Fprintf(stderr, "demo-mcp: %v\n", err)
		return 1
	}
	return 0
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
