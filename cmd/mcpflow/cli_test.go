package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/stretchr/testify/require"
)

// cliResult is what one run of the client printed and its exit code.
type cliResult struct {
	code           int
	stdout, stderr string
}

// cliEnv is the environment of a client pointed at e as the test user.
func (e *taskEnv) cliEnv(extra ...string) func(string) (string, bool) {
	vars := map[string]string{"MCPFLOW_URL": e.m.URL(), "MCPFLOW_TOKEN": testUserToken}
	for i := 0; i+1 < len(extra); i += 2 {
		vars[extra[i]] = extra[i+1]
	}
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

// cli runs mcpflow's command line (run, as main does) against e.
func (e *taskEnv) cli(t *testing.T, args ...string) cliResult {
	t.Helper()
	return runWith(context.Background(), e.cliEnv(), args...)
}

func runWith(ctx context.Context, env func(string) (string, bool), args ...string) cliResult {
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, env, &stdout, &stderr)
	return cliResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// cliAsync runs the client in the background until ctx ends; the result
// arrives on the channel, its output is readable meanwhile.
func (e *taskEnv) cliAsync(ctx context.Context, args ...string) (*testenv.SyncBuffer, <-chan cliResult) {
	out, errs := &testenv.SyncBuffer{}, &testenv.SyncBuffer{}
	done := make(chan cliResult, 1)
	go func() {
		code := run(ctx, args, e.cliEnv(), out, errs)
		done <- cliResult{code: code, stdout: out.String(), stderr: errs.String()}
	}()
	return out, done
}

func wait(t *testing.T, done <-chan cliResult, within time.Duration) cliResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(within):
		t.Fatalf("the command did not end within %s", within)
		return cliResult{}
	}
}

var startedTask = regexp.MustCompile(`Started task (mcp-task-[0-9a-f]+) \(job\)`)

// submitCLI starts a demo job with `mcpflow call` and returns its task id.
func (e *taskEnv) submitCLI(t *testing.T, args ...string) string {
	t.Helper()
	r := e.cli(t, append([]string{"call", "demo_submit_job"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	m := startedTask.FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	require.Contains(t, r.stdout, "mcpflow tasks watch "+m[1])
	return m[1]
}

func TestCLI(t *testing.T) {
	e := startTaskEnv(t)

	t.Run("tools", func(t *testing.T) {
		r := e.cli(t, "tools")
		require.Equal(t, 0, r.code, r.stderr)
		require.Regexp(t, `(?m)^demo_add\s+\S`, r.stdout)
		require.Regexp(t, `(?m)^demo_submit_job\s+\[task job\] `, r.stdout)
		require.NotContains(t, r.stdout, "demo_get_job_status")

		r = e.cli(t, "tools", "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var body struct {
			Tools []map[string]any `json:"tools"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &body), r.stdout)
		require.Equal(t, 1, strings.Count(r.stdout, "\n"), "one line")
		require.NotEmpty(t, body.Tools)

		r = e.cli(t, "tools", "demo_add")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "arguments (JSON Schema):")
		require.Contains(t, r.stdout, `"a"`)

		r = e.cli(t, "tools", "demo_nothing")
		require.Equal(t, 1, r.code)
		require.Equal(t, "mcpflow: not_found: no tool \"demo_nothing\" on thread cli; mcpflow tools lists them (404)\n", r.stderr)
	})

	t.Run("call with key=value", func(t *testing.T) {
		r := e.cli(t, "call", "demo_add", "a=2", "b=3.5")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "5.5\n")
		require.Contains(t, r.stdout, "structured content:\n{\n  \"sum\": 5.5\n}\n")

		r = e.cli(t, "call", "demo_echo", "message=hello world", "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var ans map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &ans), r.stdout)
		require.Equal(t, false, ans["is_error"])
		require.Contains(t, r.stdout, "hello world")

		// --args, overridden by a pair; a quoted number stays a string.
		r = e.cli(t, "call", "demo_add", "--args", `{"a": 1, "b": 1}`, "b=41")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "42\n")
		r = e.cli(t, "call", "demo_add", "a=1", `b="41"`)
		require.Equal(t, 1, r.code, "the server refuses a string for a number: %s", r.stdout)

		r = e.cli(t, "call", "demo_fail", "message=boom")
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stdout, "boom")
		require.Contains(t, r.stderr, "mcpflow: tool demo_fail answered an error")
	})

	t.Run("call with an idempotency key", func(t *testing.T) {
		first := e.submitCLI(t, "duration_seconds=1", "outcome=completed", "--idempotency-key", "cli-nightly-1")
		again := e.submitCLI(t, "duration_seconds=1", "outcome=completed", "--idempotency-key", "cli-nightly-1")
		require.Equal(t, first, again, "the same key answers the task the first run started")
		other := e.submitCLI(t, "duration_seconds=1", "outcome=completed", "--idempotency-key", "cli-nightly-2")
		require.NotEqual(t, first, other)
		r := e.cli(t, "call", "demo_submit_job", "duration_seconds=1", "--idempotency-key", "has space")
		require.Equal(t, 1, r.code, r.stdout)
		require.Contains(t, r.stderr, "Idempotency-Key header")
	})

	t.Run("watch to completion", func(t *testing.T) {
		id := e.submitCLI(t, "duration_seconds=1", "outcome=completed")
		r := e.cli(t, "tasks", "watch", id)
		require.Equal(t, 0, r.code, r.stderr)
		require.NotContains(t, r.stdout, "\r", "not a terminal: plain lines")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Regexp(t, `^`+id+`  job  completed  \d+s`, firstMatching(lines, id+"  job  completed"))
		require.Contains(t, r.stdout, "Result:\n{\n  \"answer\": 42\n}\n")
		// One line per change: no status line repeats.
		seen := map[string]bool{}
		for _, l := range lines {
			if strings.HasPrefix(l, id) {
				status := strings.Split(l, "  ")[2]
				require.False(t, seen[status], "status %s printed twice:\n%s", status, r.stdout)
				seen[status] = true
			}
		}

		r = e.cli(t, "tasks", "watch", id, "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var d map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
		require.Equal(t, "completed", d["status"])

		r = e.cli(t, "tasks", "get", id)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Task: "+id+"\n")
		require.Contains(t, r.stdout, "Status: completed\n")
		require.Contains(t, r.stdout, "\"answer\": 42")
		r = e.cli(t, "tasks", "get", id, "--json")
		require.Equal(t, 0, r.code, r.stderr)
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
		require.Equal(t, id, d["task_id"])

		r = e.cli(t, "tasks")
		require.Equal(t, 0, r.code, r.stderr)
		require.Regexp(t, `(?m)^TASK ID\s+NAME\s+STATUS\s+CREATED\s+UPDATED$`, r.stdout)
		require.Regexp(t, `(?m)^`+id+`\s+job\s+completed\s`, r.stdout)
		r = e.cli(t, "tasks", "list", "--active", "--json")
		require.Equal(t, 0, r.code, r.stderr)
		require.NotContains(t, r.stdout, id, "a completed task is not active")
	})

	t.Run("call --watch to failure", func(t *testing.T) {
		r := e.cli(t, "call", "demo_submit_job", "duration_seconds=0.5", "outcome=failed", "error=disk full", "--watch")
		require.Equal(t, 1, r.code, r.stdout+r.stderr)
		require.Regexp(t, `(?m)^mcp-task-[0-9a-f]+  job  failed  .*error: disk full$`, r.stdout)
		require.Contains(t, r.stdout, "Error: disk full\n")
	})

	t.Run("cancel while watching", func(t *testing.T) {
		id := e.submitCLI(t, "duration_seconds=300", "--thread", "cli-cancel")
		ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
		defer stop()
		out, done := e.cliAsync(ctx, "tasks", "watch", id, "--thread", "cli-cancel")
		require.Eventually(t, func() bool { return strings.Contains(out.String(), "  working") },
			60*time.Second, 50*time.Millisecond, "watch never showed the task working: %q", out.String())

		r := e.cli(t, "tasks", "cancel", id, "--thread", "cli-cancel")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Cancellation requested for task "+id)
		w := wait(t, done, 90*time.Second)
		require.Equal(t, exitCancelled, w.code, w.stdout+w.stderr)
		require.Regexp(t, `(?m)^`+id+`  job  cancelled  `, w.stdout)

		r = e.cli(t, "tasks", "cancel", id, "--thread", "cli-cancel")
		require.Equal(t, 1, r.code)
		require.Equal(t, "mcpflow: conflict: task "+id+" already ended: cancelled (409)\n", r.stderr)
	})

	t.Run("input_required is not an end", func(t *testing.T) {
		id := e.submitCLI(t, "duration_seconds=0.5", "outcome=input_required")
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		out, done := e.cliAsync(ctx, "tasks", "watch", id)
		require.Eventually(t, func() bool { return strings.Contains(out.String(), "Input required: Which format?\n") },
			60*time.Second, 50*time.Millisecond, "no question: %q", out.String())
		select {
		case r := <-done:
			t.Fatalf("watch ended at input_required: %+v", r)
		default:
		}
		stop()
		r := wait(t, done, 10*time.Second)
		require.Equal(t, exitInterrupted, r.code)
		require.Contains(t, r.stderr, "stopped watching; task "+id+" goes on")
		require.Equal(t, 1, strings.Count(r.stdout, "Input required:"), r.stdout)
	})

	t.Run("events --follow", func(t *testing.T) {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		out, done := e.cliAsync(ctx, "events", "--follow", "--json", "--thread", "cli-events")
		id := e.submitCLI(t, "duration_seconds=0.5", "--thread", "cli-events")
		require.Eventually(t, func() bool { return strings.Contains(out.String(), `"status":"completed"`) },
			60*time.Second, 50*time.Millisecond, "no completed event: %q", out.String())
		stop()
		r := wait(t, done, 10*time.Second)
		require.Equal(t, 0, r.code, r.stderr)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		for _, l := range lines {
			var ev map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &ev), l)
			require.Equal(t, id, ev["task_id"])
		}

		r = e.cli(t, "events", "--thread", "cli-events")
		require.Equal(t, 0, r.code, r.stderr)
		require.Regexp(t, `(?m)^#\d+  \S+  `+id+`  job  completed  result: \{"answer":42\}$`, r.stdout)
		r = e.cli(t, "events", "--thread", "cli-events", "--after", "1000000")
		require.Equal(t, 0, r.code, r.stderr)
		require.Empty(t, r.stdout)
	})

	t.Run("API errors", func(t *testing.T) {
		require.Equal(t, 0, e.cli(t, "tools").code, "creates the thread")
		r := e.cli(t, "tasks", "get", "mcp-task-0123")
		require.Equal(t, 1, r.code)
		require.Equal(t, "mcpflow: not_found: MCP task not found (404)\n", r.stderr)
		r = e.cli(t, "tasks", "--thread", "default@someone-else")
		require.Equal(t, 1, r.code)
		require.Equal(t, "mcpflow: not_found: thread not found (404)\n", r.stderr)
		r = runWith(context.Background(), e.cliEnv("MCPFLOW_TOKEN", "wrong"), "tools")
		require.Equal(t, 1, r.code)
		require.Regexp(t, `^mcpflow: unauthenticated: .+ \(401\)\n$`, r.stderr)
		r = runWith(context.Background(), e.cliEnv("MCPFLOW_URL", "http://"+testenv.FreeAddr(t)), "tools")
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "is mcpflow running there?")
	})

	t.Run("token from flag, environment and file", func(t *testing.T) {
		noToken := func(k string) (string, bool) {
			if k == "MCPFLOW_URL" {
				return e.m.URL(), true
			}
			return "", false
		}
		t.Chdir(t.TempDir())
		r := runWith(context.Background(), noToken, "tools")
		require.Equal(t, 2, r.code)
		require.Equal(t, "mcpflow: no API token: pass --token, set MCPFLOW_TOKEN, or run `make dev` (it writes .dev/user.token, read from the working directory)\n", r.stderr)
		require.Empty(t, r.stdout)

		r = runWith(context.Background(), noToken, "tools", "--token", testUserToken)
		require.Equal(t, 0, r.code, r.stderr)
		require.NoError(t, os.MkdirAll(".dev", 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(".dev", "user.token"), []byte(testUserToken+"\n"), 0o600))
		r = runWith(context.Background(), noToken, "tools")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "demo_add")
		// --url before the command, and the environment's token over the file's.
		r = runWith(context.Background(), e.cliEnv("MCPFLOW_TOKEN", "wrong"), "--url", e.m.URL(), "tools")
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "unauthenticated")
	})
}

func firstMatching(lines []string, prefix string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestCLIUsageErrors(t *testing.T) {
	env := func(k string) (string, bool) {
		// A URL nothing listens on: a usage error must not get that far.
		switch k {
		case "MCPFLOW_URL":
			return "http://127.0.0.1:1", true
		case "MCPFLOW_TOKEN":
			return "t", true
		}
		return "", false
	}
	for _, args := range [][]string{
		{"tasks", "frob"},
		{"tasks", "get"},
		{"tasks", "watch", "a", "b"},
		{"tasks", "watch", "a", "--interval", "0s"},
		{"call"},
		{"call", "demo_add", "a"},
		{"call", "demo_add", "=1"},
		{"call", "demo_add", "--args", "[1]"},
		{"call", "demo_add", "--args", "{"},
		{"events", "--bogus"},
		{"events", "extra"},
		{"events", "--limit", "0"},
		{"tools", "a", "b"},
		{"tools", "--url", "ftp://x"},
		{"--json"},
		{"--url", "http://x", "frob"},
	} {
		r := runWith(context.Background(), env, args...)
		require.Equal(t, 2, r.code, "%v: %+v", args, r)
		require.True(t, strings.HasPrefix(r.stderr, "mcpflow: "), "%v: %q", args, r.stderr)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), "%v: one line: %q", args, r.stderr)
		require.NotContains(t, r.stderr, "connection refused", args)
	}
	r := runWith(context.Background(), env, "tasks", "--help")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "watch")
	r = runWith(context.Background(), env, "help", "call")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "key=value")
	r = runWith(context.Background(), noEnv, "--help")
	require.Equal(t, 0, r.code)
	for _, c := range []string{"tools [TOOL]", "call TOOL [key=value...]", "tasks [list|get ID|cancel ID|watch ID]", "events [--follow]"} {
		require.Contains(t, r.stdout, c)
	}
}

func TestCLIArguments(t *testing.T) {
	got, err := parseArguments(`{"a": 1, "keep": "x"}`, []string{
		"a=2", "f=2.50", "t=true", "n=null", "s=hello world", "q=\"42\"", "o={\"x\": [1]}", "e=", "eq=a=b", "bad={"})
	require.NoError(t, err)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, `{"a": 2, "f": 2.50, "t": true, "n": null, "s": "hello world", "q": "42",
		"o": {"x": [1]}, "e": "", "eq": "a=b", "bad": "{", "keep": "x"}`, string(b))
	require.Contains(t, string(b), `"f":2.50`, "numbers pass as written")
}

func TestCLIWatchOutput(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	polled := created.Add(20 * time.Second)
	task := &taskView{api.TaskDetail{
		TaskItem: api.TaskItem{TaskID: "mcp-task-1", TaskName: "job", Status: mcpflow.StatusWorking, CreatedAt: created,
			UpdatedAt: polled},
		LastPolledAt: &polled, StatusMessage: ptrTo("step 2 of 3"),
		TemporalUIURL: "http://localhost:8233/namespaces/default/workflows/mcp-task-1"}}
	require.Equal(t, `mcp-task-1  job  working  25s  last poll 5s ago  "step 2 of 3"`, task.line(created.Add(25*time.Second)))

	var out bytes.Buffer
	c := &cli{stdout: &out}
	c.printTask(task, created.Add(25*time.Second))
	require.Contains(t, out.String(), "\nTemporal: http://localhost:8233/namespaces/default/workflows/mcp-task-1\n")
	require.Contains(t, out.String(), "\nMessage: step 2 of 3\n")

	// On a terminal the line is rewritten in place.
	out.Reset()
	w := &liveWriter{w: &out, live: true, width: 20}
	w.redraw(task.line(created))
	w.println("Input required: x")
	w.redraw("short")
	w.end()
	require.Equal(t, "\r\x1b[2Kmcp-task-1  job  w…\r\x1b[2KInput required: x\n\r\x1b[2Kshort\n", out.String())
}

func ptrTo[T any](v T) *T { return &v }

// TestProgName: the commands a hint shows (Watch it: … tasks watch) run as
// shown, bin/mcpflow when run as that from a checkout.
func TestProgName(t *testing.T) {
	for argv0, want := range map[string]string{
		"bin/mcpflow": "bin/mcpflow", "/usr/local/bin/mcpflow": "/usr/local/bin/mcpflow",
		"mcpflow": "mcpflow", "/tmp/go-build1/b001/mcpflow.test": "mcpflow",
	} {
		require.Equal(t, want, progName(argv0), argv0)
	}
}
