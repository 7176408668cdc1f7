package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// conformanceReport names where TestConformanceThroughMCPFlow writes its
// report (make conformance sets it; docs/conformance.md's table comes from it).
const conformanceReport = "MCPFLOW_CONFORMANCE_REPORT"

// TestConformanceThroughMCPFlow runs the official MCP conformance runner's
// server scenarios (0.1.16 for 2025-11-25; 0.2.0-alpha.12 for 2026-07-28
// with the Tasks extension's tasks-* scenarios) against mcpflow's /mcp,
// with the runner's fixtures (tools, resources, prompts, completions,
// logging) as mcpflow's upstream (names unprefixed, durable tasks on):
// every scenario must pass (the runner's own skips aside).
func TestConformanceThroughMCPFlow(t *testing.T) {
	testenv.Node2026(t)
	fixture := testenv.StartConformanceFixture(t)
	ext := fmt.Sprintf(`{"mcpServers": {"conformance": {"type": "http", "url": %q, "tool_name_prefix": false, "tool_call_timeout": 60}}}`, fixture)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", ext)
	m := waitReady(t, startMain(t, ModeDev, cfg, nil))

	out := os.Getenv(conformanceReport)
	if out == "" {
		out = filepath.Join(t.TempDir(), "report.md")
	}
	script := filepath.Join(testenv.RepoRoot(), "scripts", "conformance.sh")
	results := os.Getenv("MCPFLOW_CONFORMANCE_RESULTS") // to read a run's details
	if results == "" {
		results = filepath.Join(t.TempDir(), "results")
	}
	args := []string{"--url", m.URL() + "/mcp", "--token", testUserToken, "--out", out, "--results", results}
	if only := os.Getenv("MCPFLOW_CONFORMANCE_SCENARIO"); only != "" {
		args = append(args, "--scenario", only) // one scenario, while working on it
	}
	cmd := exec.Command(script, args...)
	start := time.Now()
	output, err := cmd.CombinedOutput()
	report, _ := os.ReadFile(out)
	t.Logf("conformance runner (%s):\n%s", time.Since(start).Round(time.Second), report)
	require.NoError(t, err, "a scenario failed:\n%s", output)
}
