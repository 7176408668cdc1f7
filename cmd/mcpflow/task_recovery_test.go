package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
)

// jobToolset is the demo server's task toolset.
const jobToolset = `"task_toolsets": [{"name": "job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job"}]`

// demoTaskExt is an extensions_config.json with the demo server at url
// (streamable HTTP) and its job toolset.
func demoTaskExt(url string) string {
	return fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 10, %s}}}`, url, jobToolset)
}

// workerProc is `mcpflow worker` running as a child process.
type workerProc struct {
	cmd    *exec.Cmd
	logs   *testenv.SyncBuffer
	exited chan struct{}
	err    error // Wait's answer, once exited is closed
}

// startWorkerProc runs `mcpflow worker --config cfg` and waits until it
// polls its task queue. Cleanup stops it (SIGTERM, then SIGKILL) unless it
// has exited already.
func startWorkerProc(t *testing.T, cfg string) *workerProc {
	t.Helper()
	return startWorkerBinary(t, testenv.Binary(t, "./cmd/mcpflow"), cfg)
}

// startWorkerBinary is startWorkerProc with a given mcpflow binary and
// extra environment variables ("KEY=value").
func startWorkerBinary(t *testing.T, bin, cfg string, env ...string) *workerProc {
	t.Helper()
	return startProc(t, bin, ModeWorker, cfg, env...)
}

// startProc runs `bin mode --config cfg` and waits until it is ready: its
// worker polls (worker, dev), or its API listens (serve).
func startProc(t *testing.T, bin, mode, cfg string, env ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(bin, mode, "--config", cfg, "--log-format", "json")
	cmd.Env = append(append(os.Environ(), "MCPFLOW_SERVER_WORKER_ADDR=127.0.0.1:0"), env...) // a free port for its health listener
	p := &workerProc{cmd: cmd, logs: &testenv.SyncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	ready, what := `"msg":"worker polling"`, "the worker"
	if mode == ModeServe {
		ready, what = `"msg":"API listening"`, "serve"
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s pid %d output:\n%s", mode, cmd.Process.Pid, p.logs.String())
		}
		select {
		case <-p.exited:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	require.Eventually(t, func() bool {
		select {
		case <-p.exited:
			return true
		default:
		}
		return strings.Contains(p.logs.String(), ready)
	}, 60*time.Second, 50*time.Millisecond, "%s never became ready", what)
	select {
	case <-p.exited:
		t.Fatalf("%s exited at start-up: %v\n%s", what, p.err, p.logs.String())
	default:
	}
	return p
}

// kill9 kills the worker with SIGKILL (no shutdown of any kind) and waits
// until it is gone.
func (p *workerProc) kill9(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.exited
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the worker died of SIGKILL: %v", p.cmd.ProcessState)
}

// waitForWorker waits until an in-process Main's worker polls (its log says
// so).
func waitForWorker(t *testing.T, logs *testenv.SyncBuffer) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), `msg="worker polling"`) },
		60*time.Second, 50*time.Millisecond, "the in-process worker never polled")
}

// submitTask calls the submit wrapper through the API without require, so
// that it can run on any goroutine.
func submitTask(base, thread, args string) (string, error) {
	req, err := http.NewRequest("POST", base+"/api/threads/"+thread+"/tools/demo_submit_job/call",
		strings.NewReader(`{"arguments": `+args+`}`))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+testUserToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		IsError           bool `json:"is_error"`
		StructuredContent struct {
			TaskID string `json:"task_id"`
			Status string `json:"status"`
		} `json:"structured_content"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil || out.IsError || out.StructuredContent.TaskID == "" {
		return "", fmt.Errorf("submit answered %d: %s", resp.StatusCode, b)
	}
	return out.StructuredContent.TaskID, nil
}

// submitMany submits one task per label concurrently and returns the task
// ids in label order.
func submitMany(t *testing.T, base, thread string, labels []string, args func(label string) string) []string {
	t.Helper()
	ids := make([]string, len(labels))
	errs := make([]error, len(labels))
	var wg sync.WaitGroup
	for i, label := range labels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = submitTask(base, thread, args(label))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "submit %s", labels[i])
	}
	return ids
}

// demoJob is one job of the demo server's job_stats answer.
type demoJob struct {
	Status      string `json:"status"`
	Label       string `json:"label"`
	Submits     int    `json:"submits"`
	StatusCalls int    `json:"status_calls"`
	CancelCalls int    `json:"cancel_calls"`
}

// demoStats is the demo server's job_stats answer.
type demoStats struct {
	Submits     int                `json:"submits"`
	StatusCalls int                `json:"status_calls"`
	Cancels     int                `json:"cancels"`
	Jobs        map[string]demoJob `json:"jobs"`
}

// jobStats calls the demo server's job_stats through the API as the
// ordinary tool demo_job_stats.
func jobStats(t *testing.T, e *taskEnv, thread string) demoStats {
	t.Helper()
	code, out := e.post(t, "/api/threads/"+thread+"/tools/demo_job_stats/call", `{}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, false, out["is_error"], out)
	b, err := json.Marshal(out["structured_content"])
	require.NoError(t, err)
	var s demoStats
	require.NoError(t, json.Unmarshal(b, &s))
	return s
}

// remoteID reads a task's remote handle from the database (the API never
// shows it).
func remoteID(t *testing.T, m *Main, id string) string {
	t.Helper()
	task, err := m.DB.GetTask(context.Background(), id)
	require.NoError(t, err)
	require.NotEmpty(t, task.RemoteTaskID)
	return task.RemoteTaskID
}

// requireOneSubmitEach checks that the demo server saw exactly one submit
// per task, each for the job the task tracks, and nothing else.
func requireOneSubmitEach(t *testing.T, e *taskEnv, thread string, ids, labels []string, wantStatus string) demoStats {
	t.Helper()
	stats := jobStats(t, e, thread)
	require.Equal(t, len(ids), stats.Submits, "one remote submit per task in all: %+v", stats)
	require.Len(t, stats.Jobs, len(ids))
	for i, id := range ids {
		job, ok := stats.Jobs[remoteID(t, e.m, id)]
		require.True(t, ok, "task %s tracks a job the demo server knows", id)
		require.Equal(t, 1, job.Submits, "task %s: %+v", id, job)
		require.Equal(t, labels[i], job.Label, "task %s tracks the job it submitted", id)
		require.Equal(t, wantStatus, job.Status, "task %s", id)
		require.Positive(t, job.StatusCalls, "task %s was polled", id)
	}
	return stats
}

// TestWorkerKilledMidTaskRecovers runs serve in-process and the worker as a
// child process, kills the worker with SIGKILL while 20 tasks are working,
// and starts another: every task completes with its result, and no remote
// job was submitted twice.
func TestWorkerKilledMidTaskRecovers(t *testing.T) {
	url := demoHTTP(t)
	// lease_seconds bounds one remote call attempt (activity StartToClose):
	// an attempt that died with the worker is retried after 5 s.
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, lease_seconds: 5 }\n", demoTaskExt(url))
	s := startMain(t, ModeServe, cfg, nil)
	e := &taskEnv{m: s}
	first := startWorkerProc(t, cfg)

	labels := drillLabels("recover", 20)
	ids := submitMany(t, s.URL(), "tw", labels, func(label string) string {
		return fmt.Sprintf(`{"duration_seconds": 8, "poll_after_seconds": 1, "label": %q}`, label) // time to kill the worker mid-task, on a busy machine too
	})
	for _, id := range ids {
		e.waitStatus(t, "tw", id, "working")
	}
	// Let the first worker poll them for a while, so it holds workflow
	// state (sticky caches) and activity attempts when it dies.
	require.Eventually(t, func() bool {
		st := jobStats(t, e, "tw")
		for _, j := range st.Jobs {
			if j.StatusCalls == 0 {
				return false
			}
		}
		return len(st.Jobs) == len(labels)
	}, 30*time.Second, 100*time.Millisecond, "the first worker never polled every task")

	first.kill9(t)
	stats := jobStats(t, e, "tw")
	for _, id := range ids {
		require.NotEqual(t, "completed", stats.Jobs[remoteID(t, s, id)].Status,
			"the kill must happen mid-task; raise duration_seconds if this machine is slow")
		_, d := get(t, s.URL()+"/api/threads/tw/mcp-tasks/"+id, testUserToken)
		require.Equal(t, "working", d["status"], "the worker died while the task was working")
	}

	startWorkerProc(t, cfg)
	for _, id := range ids {
		d := e.waitStatus(t, "tw", id, "completed")
		require.Equal(t, map[string]any{"answer": 42.0}, d["result"], id)
		require.Nil(t, d["error"], id)
		require.Equal(t, false, d["cancel_requested"], id)
	}
	final := requireOneSubmitEach(t, e, "tw", ids, labels, "completed")
	require.Zero(t, final.Cancels, "recovery never cancels")
}

// TestTemporalRestartLosesNothing stops the Temporal dev server (persisted
// to a SQLite file) while tasks are working and starts it again on the
// same file and address: every task completes, submitted once.
func TestTemporalRestartLosesNothing(t *testing.T) {
	dir := t.TempDir()
	opts := testenv.TemporalOptions{DBFile: filepath.Join(dir, "temporal.db"), HostPort: testenv.FreeAddr(t),
		SearchAttributes: workflows.SearchAttributeNames}
	var srv *testenv.Temporal
	t.Cleanup(func() {
		if srv != nil {
			_ = srv.Stop()
		}
	})
	var err error
	srv, err = testenv.StartTemporal(context.Background(), opts)
	require.NoError(t, err)

	url := demoHTTP(t)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, lease_seconds: 5 }\n", demoTaskExt(url))
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	b = bytes.Replace(b, []byte(fmt.Sprintf("address: %q", temporal.HostPort)), []byte(fmt.Sprintf("address: %q", opts.HostPort)), 1)
	require.NoError(t, os.WriteFile(cfg, b, 0o600))
	logs := &testenv.SyncBuffer{}
	m := startMain(t, ModeDev, cfg, logs)
	require.Equal(t, opts.HostPort, m.Config.Temporal.Address)
	e := &taskEnv{m: m}
	waitForWorker(t, logs)

	labels := []string{"restart-0", "restart-1", "restart-2"}
	ids := submitMany(t, m.URL(), "tr", labels, func(label string) string {
		return fmt.Sprintf(`{"duration_seconds": 8, "poll_after_seconds": 1, "label": %q}`, label) // time to stop Temporal while they run, on a busy machine too
	})
	for _, id := range ids {
		e.waitStatus(t, "tr", id, "working")
	}

	require.NoError(t, srv.Stop())
	srv = nil
	// The API keeps answering from its projection while Temporal is down.
	for _, id := range ids {
		code, d := get(t, m.URL()+"/api/threads/tr/mcp-tasks/"+id, testUserToken)
		require.Equal(t, 200, code, d)
		require.Equal(t, "working", d["status"])
	}
	code, _ := get(t, m.URL()+"/readyz", "")
	require.Equal(t, 503, code, "readiness reports Temporal down")

	srv, err = testenv.StartTemporal(context.Background(), opts)
	require.NoError(t, err, "restart the dev server on the same database file and address")
	for _, id := range ids {
		d := e.waitStatus(t, "tr", id, "completed")
		require.Equal(t, map[string]any{"answer": 42.0}, d["result"], id)
	}
	final := requireOneSubmitEach(t, e, "tr", ids, labels, "completed")
	require.Zero(t, final.Cancels)
	// The workflows themselves survived the restart and finished.
	for _, id := range ids {
		require.Eventually(t, func() bool {
			resp, err := srv.Client().DescribeWorkflow(context.Background(), id, "")
			return err == nil && resp.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
		}, 60*time.Second, 100*time.Millisecond, "workflow %s", id)
	}
}

// TestTemporalNativeCancel cancels a task's workflow the way `temporal
// workflow cancel` does: the task ends cancelled, the demo server saw one
// cancel for it, and the workflow's status in Temporal is Canceled.
func TestTemporalNativeCancel(t *testing.T) {
	e := startTaskEnv(t)
	id := e.submit(t, "tn", "demo_submit_job", `{"duration_seconds": 300, "label": "native-cancel"}`)
	e.waitStatus(t, "tn", id, "working")

	require.NoError(t, temporal.Client().CancelWorkflow(context.Background(), id, ""))
	d := e.waitStatus(t, "tn", id, "cancelled")
	require.Equal(t, true, d["cancel_requested"])
	require.Nil(t, d["result"])

	require.Eventually(t, func() bool {
		resp, err := temporal.Client().DescribeWorkflow(context.Background(), id, "")
		return err == nil && resp.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_CANCELED
	}, 60*time.Second, 100*time.Millisecond, "the workflow never became Canceled")

	// The workflow is closed, so these counts are final.
	stats := jobStats(t, e, "tn")
	job, ok := stats.Jobs[remoteID(t, e.m, id)]
	require.True(t, ok)
	require.Equal(t, "native-cancel", job.Label)
	require.Equal(t, "cancelled", job.Status)
	require.Equal(t, 1, job.CancelCalls, "exactly one remote cancel: %+v", job)
	require.Equal(t, 1, job.Submits)

	code, d := e.post(t, "/api/threads/tn/mcp-tasks/"+id+"/cancel", "")
	require.Equal(t, 409, code, "cancelling a finished task: %v", d)
	require.Equal(t, "cancelled", d["status"])
}

// TestStartupRequiresTaskRuntime pins spec §2.11: task toolsets with
// mcp_tasks disabled stop every mode at start-up with one line, exit 2.
func TestStartupRequiresTaskRuntime(t *testing.T) {
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": "http://127.0.0.1:1/mcp", %s}}}`, jobToolset)
	for _, yaml := range []string{"", "mcp_tasks: { enabled: false }\n"} {
		cfg := writeConfig(t, yaml, ext)
		for _, mode := range []string{ModeServe, ModeWorker, ModeDev} {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{mode, "--config", cfg}, noEnv, &stdout, &stderr)
			out := stderr.String()
			require.Equal(t, 2, code, "%s: %s", mode, out)
			require.Equal(t, 1, strings.Count(out, "\n"), "exactly one line: %q", out)
			require.True(t, strings.HasPrefix(out, "mcpflow: "), out)
			require.Contains(t, out, "mcp_tasks.enabled=true is required")
			require.Contains(t, out, "mcpServers.demo")
		}
	}
	// A disabled server's toolsets do not need the runtime.
	disabled := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": "http://127.0.0.1:1/mcp", "enabled": false, %s}}}`, jobToolset)
	m := startMain(t, ModeServe, writeConfig(t, "", disabled), nil)
	require.Nil(t, m.Tasks)
}

// TestTaskToolsetMissingRawTool pins the answer when a toolset names a
// tool the server lacks: the tools listing (and any call) fails with 503
// unavailable and the spec's message, instead of skipping the server.
func TestTaskToolsetMissingRawTool(t *testing.T) {
	url := demoHTTP(t)
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "task_toolsets": [
		{"name": "broken", "submit_tool": "submit_job", "status_tool": "status_missing", "cancel_tool": "cancel_job"}]}}}`, url)
	m := startMain(t, ModeServe, writeConfig(t, "mcp_tasks: { enabled: true }\n", ext), nil)
	e := &taskEnv{m: m}

	code, body := get(t, m.URL()+"/api/threads/t1/tools", testUserToken)
	require.Equal(t, 503, code, "%v", body)
	errBody := body["error"].(map[string]any)
	require.Equal(t, "unavailable", errBody["code"])
	require.Equal(t, "MCP server 'demo' task_toolsets reference missing raw tool(s): status_missing", errBody["message"])
	require.Contains(t, errBody["message"], "task_toolsets reference missing raw tool(s)")

	code, body = e.post(t, "/api/threads/t1/tools/demo_echo/call", `{"arguments": {"message": "hi"}}`)
	require.Equal(t, 503, code, "%v", body)
	require.Contains(t, body["error"].(map[string]any)["message"], "task_toolsets reference missing raw tool(s)")
}

// TestCancelWithoutWorker503 pins that a cancel is never acknowledged when
// no worker polls the task queue: 503, and the task is left as it was.
func TestCancelWithoutWorker503(t *testing.T) {
	m := startMain(t, ModeServe, writeConfig(t, "mcp_tasks: { enabled: true }\n", ""), nil)
	require.NotNil(t, m.Tasks)
	ctx := context.Background()
	_, _, err := m.DB.CreateThread(ctx, &mcpflow.Thread{ID: "t1", UserID: "alice"})
	require.NoError(t, err)
	task := &mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: "alice", ThreadID: "t1", ServerName: "demo",
		DriverName: mcpflow.DriverOrdinary, RemoteTaskID: "job-1", TaskName: "job", Status: mcpflow.StatusWorking}
	require.NoError(t, m.DB.CreateTask(ctx, task))
	e := &taskEnv{m: m}

	code, body := e.post(t, "/api/threads/t1/mcp-tasks/"+task.ID+"/cancel", "")
	require.Equal(t, 503, code, "%v", body)
	errBody := body["error"].(map[string]any)
	require.Equal(t, "unavailable", errBody["code"])
	require.Contains(t, errBody["message"], "no mcpflow worker is running")

	code, d := get(t, m.URL()+"/api/threads/t1/mcp-tasks/"+task.ID, testUserToken)
	require.Equal(t, 200, code)
	require.Equal(t, "working", d["status"])
	require.Equal(t, false, d["cancel_requested"], "nothing was recorded")
}

// mcp_tasks.idempotent_submit_servers may only name task servers.
func TestIdempotentSubmitServersMustBeTaskServers(t *testing.T) {
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, idempotent_submit_servers: [demo, reports] }\n", demoTaskExt("http://127.0.0.1:1/mcp"))
	m := &Main{Mode: ModeServe, ConfigPath: cfg, Env: noEnv, Logger: slog.New(slog.DiscardHandler)}
	err := m.Open(t.Context())
	_ = m.Close(t.Context())
	var ce *ConfigError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Contains(t, err.Error(), "mcp_tasks.idempotent_submit_servers: 'reports' is not an enabled MCP server with task_toolsets")
}
