package testenv

import (
	"strings"
	"testing"
	"time"
)

// surface_client.mjs, in internal/testdata/npm: prompts, resources,
// completions and log messages through the official TypeScript SDK
// clients, v1 (@modelcontextprotocol/sdk, 2025-11-25) or v2
// (@modelcontextprotocol/client pinned to 2026-07-28).
const (
	surfaceClientScript  = "surface_client.mjs"
	surfaceClientTimeout = 2 * time.Minute
)

// RunSurfaceClient runs surface_client.mjs with the TypeScript SDK sdk
// ("v1" or "v2") against url as the bearer token (none when empty) and
// returns the JSON object it printed for each step, in order. args follow
// on the command line: "--server", S (the upstream whose prompt it gets
// and completes, "ever" by default), "--log" (it asks for log messages
// and calls S's simulated logging and an 11 s operation), "--log-server",
// C (it calls C's test_tool_with_logging, the conformance fixture's) and
// "--log-level", L (the level it asks for, debug by default); see the
// script's comment for the steps. A non-zero exit fails t with the client's stderr
// and the steps it printed. t ends through MissingDependency when node or
// the SDK packages are not installed.
func RunSurfaceClient(t testing.TB, sdk, url, token string, args ...string) []map[string]any {
	t.Helper()
	requireNPMPackage(t, "@modelcontextprotocol/sdk")
	node := Node2026(t)
	steps, stderr, err := runNodeSteps(node, surfaceClientTimeout, nil,
		append([]string{surfaceClientScript, "--sdk", sdk, "--url", url, "--token", token}, args...)...)
	if err != nil {
		t.Fatalf("node %s --sdk %s %s: %v\nstderr: %s\nsteps: %v", surfaceClientScript, sdk, strings.Join(args, " "), err, stderr, steps)
	}
	return steps
}
