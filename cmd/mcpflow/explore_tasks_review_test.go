package main

// Defects in the durable-task lifecycle found by a review against a running
// stack (make dev's binaries), each shown by a test that fails on the
// current code and passes once the defect is fixed.

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReviewCancelRequestedRegressesDuringSlowPoll: a cancel that arrives
// while a status poll is in the middle of its remote call answers 202 with
// "cancel_requested": true, but the task's detail then says
// "cancel_requested": false until that poll's remote call returns (up to
// mcp_tasks.lease_seconds): the workflow writes cancel_requested_at to the
// row only once the in-flight poll has finished (workflows/task.go, cancel()),
// so the API records that it sent the cancel (cancel_signalled_at) and the
// views read both (mcpflow.Task.CancelPending).
//
// Documented: docs/reference/http-api.md, "POST …/cancel | 202 with
// cancel_requested: true"; docs/agent-developers.md lists cancel_requested in
// the detail; docs/reference/mcp-endpoint.md, the status table: statusMessage
// is "cancellation requested while a cancel is pending". A reader that saw
// the 202 must not read the cancel request back as false (the CLI's
// `tasks get` loses its "(cancel requested)" too, and MCP tasks/get its
// "cancellation requested").
func TestReviewCancelRequestedRegressesDuringSlowPoll(t *testing.T) {
	e := startTaskEnv(t)
	const thread = "review-slow-poll"
	// Each status call takes 10 s (the demo counts it, then waits).
	id := e.submit(t, thread, "demo_submit_job", `{"duration_seconds": 60, "status_delay_seconds": 10, "label": "slow-poll"}`)

	// Wait until the first poll is in the middle of its remote call.
	require.Eventually(t, func() bool {
		s := jobStats(t, e, thread)
		for _, j := range s.Jobs {
			if j.Label == "slow-poll" && j.StatusCalls >= 1 {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond)

	code, out := e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+id+"/cancel", "")
	require.Equal(t, 202, code, out)
	require.Equal(t, true, out["cancel_requested"], out)

	// Read the detail a few times while the poll is still in flight (well
	// inside its 10 s): the cancel request must stay visible.
	for i := 0; i < 10; i++ {
		time.Sleep(300 * time.Millisecond)
		_, d := get(t, e.m.URL()+"/api/threads/"+thread+"/mcp-tasks/"+id, testUserToken)
		if d["status"] == "cancelled" {
			break
		}
		require.Equal(t, true, d["cancel_requested"],
			"read %d after the 202 (status %v): the task's detail lost the cancel request: %v", i, d["status"], d)
	}
	e.waitStatus(t, thread, id, "cancelled")
}

// startReviewEnv is startTaskEnv's stack with the demo server's input tool
// (answer_job) in its toolset, as make dev configures it, so that a task's
// question is answerable.
func startReviewEnv(t *testing.T, extraTasks string) *taskEnv {
	t.Helper()
	url := demoHTTP(t)
	ext := fmt.Sprintf(`{"mcpServers": {
  "demo": {"type": "http", "url": %q, "tool_call_timeout": 10, "task_toolsets": [{"name": "job",
    "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job", "input_tool": "answer_job"}]}
}}`, url)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, input_required_poll_interval_seconds: 5"+extraTasks+" }\nworkspace: { root: ws }\n", ext)
	return &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
}

// TestReviewInputAnswerableWhileBeingCancelled: once a cancel of an
// input_required task has been requested (and its remote cancel is still
// being retried), every answer is refused with 409 "the task is being
// cancelled: it takes no answer", yet the task's detail keeps saying
// "input_answerable": true.
//
// Documented: docs/agent-developers.md, "Answering a task's question": the
// detail and event "say with `input_answerable: true` that mcpflow can
// deliver an answer", and the input update's "validator admits it only
// while the task is `input_required`, answerable, not being cancelled";
// docs/reference/mcp-endpoint.md: 2026 tasks/get carries "`inputRequests`
// while it waits for an answer mcpflow can deliver". While a cancel is
// pending mcpflow delivers none, so the detail must not advertise one (a
// UI or agent that trusts input_answerable asks its user a question whose
// answer is then refused, for as long as the remote cancel is retried).
func TestReviewInputAnswerableWhileBeingCancelled(t *testing.T) {
	e := startReviewEnv(t, "")
	const thread = "review-answer-cancel"
	// "ask" asks a question at once; the next 5 cancel_job calls fail, so
	// the cancel stays pending for a while.
	id := e.submit(t, thread, "demo_submit_job", `{"duration_seconds": 0, "outcome": "ask", "cancel_errors": 5}`)
	d := e.waitStatus(t, thread, id, "input_required")
	require.Equal(t, true, d["input_answerable"], d)

	code, out := e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+id+"/cancel", "")
	require.Equal(t, 202, code, out)
	// The workflow has taken the cancel once a remote cancel attempt failed.
	d = e.waitDetail(t, thread, id, "cancel_attempt_count", float64(1))
	require.Equal(t, "input_required", d["status"], d)
	require.Equal(t, true, d["cancel_requested"], d)

	code, out = e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+id+"/input",
		`{"action": "accept", "content": {"format": "pdf"}, "question_id": 1}`)
	require.Equal(t, 409, code, out)
	require.Contains(t, fmt.Sprint(out), "being cancelled", out)

	_, d = get(t, e.m.URL()+"/api/threads/"+thread+"/mcp-tasks/"+id, testUserToken)
	require.Equal(t, "input_required", d["status"], d)
	require.Equal(t, false, d["input_answerable"],
		"the task refuses every answer while it is being cancelled, but its detail says the question is answerable: %v", d)
}

// TestReviewCancelWithWorkersStoppedIsNot503: with every worker stopped
// (SIGTERM, as docs/operations.md tells operators to stop them) for well
// over a minute, the cancel route answered 202: the check
// (worker.TaskClient.WorkersAvailable) counted the pollers Temporal's
// DescribeTaskQueue lists, and Temporal lists a poller for five minutes
// after its worker went away. A worker now counts while it polled within
// the last two minutes (worker.pollerGoneAfter; TestLivePoller): this
// shows, against the real dev server, that a live worker idle that long
// still counts (a running worker polls again every long-poll timeout) and
// one stopped that long does not.
//
// Documented: docs/reference/http-api.md, "POST …/cancel | 202 with
// cancel_requested: true; …; 503 when no worker runs", and the `unavailable`
// error. (TestCancelWithoutWorker503 covers a task queue that no worker
// ever polled.) It takes about four and a half minutes, in parallel with
// the package's other tests.
func TestReviewCancelWithWorkersStoppedIsNot503(t *testing.T) {
	t.Parallel()
	const gone = 2*time.Minute + 15*time.Second // worker.pollerGoneAfter and a margin
	url := demoHTTP(t)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", demoTaskExt(url))
	s := startMain(t, ModeServe, cfg, nil)
	e := &taskEnv{m: s}
	w := startWorkerProc(t, cfg)

	const thread = "review-no-worker"
	var ids []string
	for range 2 {
		id, err := submitTask(s.URL(), thread, `{"duration_seconds": 600}`)
		require.NoError(t, err)
		e.waitStatus(t, thread, id, "working")
		ids = append(ids, id)
	}

	time.Sleep(gone) // the worker runs, with nothing for it to do
	code, out := e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+ids[0]+"/cancel", "")
	require.Equal(t, 202, code, "a live worker idle for %s counted as gone: %v", gone, out)
	e.waitStatus(t, thread, ids[0], "cancelled")

	// Stop the only worker gracefully and wait until it is gone.
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-w.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop on SIGTERM")
	}
	time.Sleep(gone)

	code, out = e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+ids[1]+"/cancel", "")
	_, d := get(t, s.URL()+"/api/threads/"+thread+"/mcp-tasks/"+ids[1], testUserToken)
	require.Equal(t, 503, code,
		"no worker has run for %s, yet the cancel was acknowledged (%v); the detail says cancel_requested=%v", gone, out, d["cancel_requested"])
}

// TestReviewLastCancelErrorSaysNotRetryable: a refused remote cancel is
// retried (cancel_attempt_count goes on), but the task's last_cancel_error
// (and so the MCP statusMessage "cancellation requested; the last attempt
// to cancel the remote task failed and is retried: …") carries Temporal's
// rendering of an application error, "(type: McpTaskCancelNotTerminal,
// retryable: false)": an internal error type, and a claim that the cancel
// is not retried. workflows/task.go's cancel() formats
// appMessage(err).Error(), and appMessage wraps the message in a new
// non-retryable ApplicationError whose Error() appends that suffix (the
// poll errors in last_poll_error have no such suffix).
//
// Documented: docs/agent-developers.md, "How a task runs": the remote
// cancel is retried "with backoff until it reports a terminal status";
// docs/reference/mcp-endpoint.md: the statusMessage shows "the last failed
// remote cancel attempt's error", i.e. the server's error, which here is
// "MCP task tool 'cancel_job' returned an error: the job cannot be
// cancelled right now".
func TestReviewLastCancelErrorSaysNotRetryable(t *testing.T) {
	e := startTaskEnv(t)
	const thread = "review-cancel-error"
	id := e.submit(t, thread, "demo_submit_job", `{"duration_seconds": 60, "cancel_errors": 3}`)
	e.waitStatus(t, thread, id, "working")
	code, out := e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+id+"/cancel", "")
	require.Equal(t, 202, code, out)
	d := e.waitDetail(t, thread, id, "cancel_attempt_count", float64(1))
	msg, _ := d["last_cancel_error"].(string)
	require.Contains(t, msg, "the job cannot be cancelled right now", d)
	require.NotContains(t, msg, "retryable: false",
		"the cancel is retried, but its error says it is not: %q", msg)
	require.NotContains(t, msg, "(type: ", "an internal error type leaks into the task's detail: %q", msg)
	e.waitStatus(t, thread, id, "cancelled")
}
