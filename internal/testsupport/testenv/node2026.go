package testenv

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The Node test programs of protocol revision 2026-07-28, in
// internal/testdata/npm (installed by `make testdeps`):
//
//   - mcp2026_server.mjs: a 2026-only upstream MCP server with the Tasks
//     extension, on @modelcontextprotocol/server 2.4.0 (StartMCP2026Server);
//   - mcp2026_client.mjs: a 2026 test client on @modelcontextprotocol/client
//     2.4.0 and @modelcontextprotocol/ext-tasks 0.2.2 (RunMCP2026Client);
//   - conformance_fixture_server.mjs: the tool fixtures of the conformance
//     runner's server scenarios, for 2026-07-28 and 2025-11-25 clients
//     (StartConformanceFixture).
//
// Each file's comment says what it serves or does; the tests assert on what
// these independent implementations see, not on mcpflow's own code.
const (
	mcp2026ServerScript  = "mcp2026_server.mjs"
	mcp2026ClientScript  = "mcp2026_client.mjs"
	conformanceFixture   = "conformance_fixture_server.mjs"
	mcp2026ClientTimeout = 2 * time.Minute
	nodeServerStartLimit = 30 * time.Second
)

// NPMDir returns internal/testdata/npm, where `make testdeps` installs the
// npm test packages.
func NPMDir() string { return filepath.Join(RepoRoot(), "internal", "testdata", "npm") }

// Node2026 returns the node binary that runs the 2026 test programs: the
// local Node 22 that `make testdeps` installs (node_modules/node/bin/node),
// else node on PATH (the SDK v2 packages need Node 20 or later). It ends t
// through MissingDependency when there is no node or the packages are not
// installed.
func Node2026(t testing.TB) string {
	t.Helper()
	dir := NPMDir()
	for _, pkg := range []string{"@modelcontextprotocol/server", "@modelcontextprotocol/client", "@modelcontextprotocol/ext-tasks"} {
		requireNPMPackage(t, pkg)
	}
	if local := filepath.Join(dir, "node_modules", "node", "bin", "node"); isExecutable(local) {
		return local
	}
	node, err := exec.LookPath("node")
	if err != nil {
		MissingDependency(t, "node not found: run `make testdeps` (it installs Node 22 in %s) or install Node.js 20 or later", dir)
	}
	return node
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// StartMCP2026Server runs mcp2026_server.mjs, a 2026-only MCP server with
// the Tasks extension, on a free 127.0.0.1 port and returns its endpoint
// URL (http://127.0.0.1:<port>/mcp). args go to the script, such as
// "--token", "T" to require "Authorization: Bearer T". The server is killed
// at cleanup. Its tools: echo, progress, mrtr_question (ordinary);
// sleep_task, ask_question, fail_task, tool_error_task, long_task (tasks).
func StartMCP2026Server(t testing.TB, args ...string) string {
	t.Helper()
	return startNodeServer(t, mcp2026ServerScript, args...)
}

// StartConformanceFixture runs conformance_fixture_server.mjs, the tool
// fixtures of the conformance runner's server scenarios for 2026-07-28 and
// 2025-11-25 clients, on a free 127.0.0.1 port and returns its endpoint URL.
// args go to the script (--token T). It is killed at cleanup.
func StartConformanceFixture(t testing.TB, args ...string) string {
	t.Helper()
	return startNodeServer(t, conformanceFixture, args...)
}

// startNodeServer runs script with port 0 and waits for the URL it prints
// as its first stdout line.
func startNodeServer(t testing.TB, script string, args ...string) string {
	t.Helper()
	node := Node2026(t)
	cmd := exec.Command(node, append([]string{script, "--port", "0"}, args...)...)
	cmd.Dir = NPMDir()
	stderr := &SyncBuffer{}
	stdout := newLineWatch(func(l string) (string, bool) { return strings.TrimSpace(l), true })
	cmd.Stdout, cmd.Stderr = stdout, stderr
	c, err := startChild(t, cmd)
	if err != nil {
		t.Fatalf("start node %s: %v", script, err)
	}
	stop := c.stop
	select {
	case url := <-stdout.found:
		if !strings.HasPrefix(url, "http://") {
			stop()
			t.Fatalf("node %s printed %q instead of its URL: %s", script, url, stderr)
		}
		return url
	case <-c.exited:
		t.Fatalf("node %s exited (%v) before printing its URL: %s%s", script, c.err, stdout, stderr)
	case <-time.After(nodeServerStartLimit):
		stop()
		t.Fatalf("node %s printed no URL within %s: %s", script, nodeServerStartLimit, stderr)
	}
	return ""
}

// lineWatch is a child's output: it keeps what the child writes and sends
// on found the first complete line match accepts, as match returns it.
type lineWatch struct {
	SyncBuffer
	match   func(line string) (string, bool)
	found   chan string
	mu      sync.Mutex
	partial []byte // the incomplete last line
	sent    bool
}

func newLineWatch(match func(string) (string, bool)) *lineWatch {
	return &lineWatch{match: match, found: make(chan string, 1)}
}

// Write appends p and matches each line it completes.
func (w *lineWatch) Write(p []byte) (int, error) {
	n, err := w.SyncBuffer.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for !w.sent {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		if v, ok := w.match(string(w.partial[:i])); ok {
			w.sent = true
			w.found <- v
		}
		w.partial = w.partial[i+1:]
	}
	return n, err
}

// RunMCP2026Client runs mcp2026_client.mjs against url as the bearer token
// (none when empty) through scenario (discover, ordinary, task, question,
// cancel) and returns the JSON object it printed for each step, in order.
// args follow the scenario on the command line: the script reads one, a JSON
// object naming the tool, its arguments and the answer to questions (see the
// script's comment). A non-zero exit fails t with the client's stderr.
func RunMCP2026Client(t testing.TB, url, token, scenario string, args ...string) []map[string]any {
	t.Helper()
	steps, stderr, err := runMCP2026Client(t, url, token, scenario, args...)
	if err != nil {
		t.Fatalf("node %s %s %s: %v\nstderr: %s\nsteps: %v", mcp2026ClientScript, scenario, strings.Join(args, " "), err, stderr, steps)
	}
	return steps
}

func runMCP2026Client(t testing.TB, url, token, scenario string, args ...string) ([]map[string]any, string, error) {
	t.Helper()
	return runNodeSteps(Node2026(t), mcp2026ClientTimeout, []string{"MCP_TOKEN=" + token},
		append([]string{mcp2026ClientScript, "--url", url, scenario}, args...)...)
}

// runNodeSteps runs node with args in the npm directory, with env added to
// this process's, for at most timeout, and returns the JSON object of each
// line it printed, its stderr and what went wrong (exit or output).
func runNodeSteps(node string, timeout time.Duration, env []string, args ...string) ([]map[string]any, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = NPMDir()
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	steps, err := parseSteps(stdout.String())
	return steps, stderr.String(), errors.Join(runErr, err)
}

// Step returns the last of steps whose "step" is name, or nil.
func Step(steps []map[string]any, name string) map[string]any {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i]["step"] == name {
			return steps[i]
		}
	}
	return nil
}

// child is a process started in a process group of its own, so that what
// it spawns (npx, node) is killed with it.
type child struct {
	pid    int
	exited chan struct{} // closed once the process ended
	err    error         // its Wait error, set before exited closes
}

// startChild starts cmd in a process group of its own; cleanup kills the
// group and waits for the process.
func startChild(t testing.TB, cmd *exec.Cmd) (*child, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.exited) }()
	t.Cleanup(c.stop)
	return c, nil
}

// kill kills the child's process group without waiting.
func (c *child) kill() { _ = syscall.Kill(-c.pid, syscall.SIGKILL) }

// stop kills the child's process group and waits for the process to end.
func (c *child) stop() {
	c.kill()
	<-c.exited
}
