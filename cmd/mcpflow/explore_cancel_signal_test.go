package main

// A walk of the surfaces through which a cancel is requested or observed,
// after f5b378a (the API records its cancel signal in cancel_signalled_at;
// the views read mcpflow.Task.CancelPending).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitStatusCall waits until the demo server has seen at least one
// get_job_status call of the job labelled label (a poll is in its remote
// call, which status_delay_seconds holds).
func waitStatusCall(t *testing.T, e *taskEnv, thread, label string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, j := range jobStats(t, e, thread).Jobs {
			if j.Label == label && j.StatusCalls >= 1 {
				return true
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond, "the job's first status call never came")
}

// TestExploreCancelSignalSeenEverywhereDuringSlowPoll: a cancel requested
// through the built-in tool cancel_background_task while a status poll is
// in its remote call reads as requested at once on every surface: the REST
// list and detail, list_background_tasks, the CLI's `tasks` and `tasks
// get`, MCP 2025-11-25 tasks/get and 2026-07-28 tasks/get; a second cancel
// (REST) answers 202 again, and the remote job sees one cancel_job call.
func TestExploreCancelSignalSeenEverywhereDuringSlowPoll(t *testing.T) {
	e := startTaskEnv(t)
	const thread = "explore-signal-surfaces"
	id := e.submit(t, thread, "demo_submit_job", `{"duration_seconds": 120, "status_delay_seconds": 8, "label": "surfaces"}`)
	waitStatusCall(t, e, thread, "surfaces")

	code, out := e.post(t, "/api/threads/"+thread+"/tools/cancel_background_task/call", `{"arguments": {"task": "`+id+`"}}`)
	require.Equal(t, 200, code, out)
	sc, _ := out["structured_content"].(map[string]any)
	require.Equal(t, true, sc["task"].(map[string]any)["cancel_requested"], out)

	// Everything below runs well inside the 8 s status call in flight.
	_, d := get(t, e.m.URL()+"/api/threads/"+thread+"/mcp-tasks/"+id, testUserToken)
	status, _ := d["status"].(string) // submitted: the first poll is in flight
	require.Contains(t, []string{"submitted", "working"}, status, d)
	require.Equal(t, true, d["cancel_requested"], d)

	_, list := get(t, e.m.URL()+"/api/threads/"+thread+"/mcp-tasks", testUserToken)
	items := list["tasks"].([]any)
	require.Len(t, items, 1, list)
	require.Equal(t, true, items[0].(map[string]any)["cancel_requested"], list)

	code, out = e.post(t, "/api/threads/"+thread+"/tools/list_background_tasks/call", `{"arguments": {}}`)
	require.Equal(t, 200, code, out)
	b, _ := json.Marshal(out["structured_content"])
	require.Contains(t, string(b), `"cancel_requested":true`, out)

	r := e.cli(t, "tasks", "get", id, "--thread", thread)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Status: "+status+" (cancel requested)\n")
	r = e.cli(t, "tasks", "--thread", thread)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^`+id+`\s+job\s+`+status+` \(cancelling\)\s`, r.stdout)

	sid := initSession(t, e.m.URL(), "/mcp/threads/"+thread, testUserToken, nil)
	a := doRPC(t, e.m.URL(), "POST", rpc{path: "/mcp/threads/" + thread, token: testUserToken, session: sid,
		body: fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":%q}}`, id)})
	require.Equal(t, 200, a.status, a.raw)
	require.Equal(t, "working", a.result()["status"], a.raw)
	require.True(t, strings.HasPrefix(fmt.Sprint(a.result()["statusMessage"]), "cancellation requested"), a.raw)

	c := &rpc2026{url: e.m.URL() + "/mcp/threads/" + thread, token: testUserToken, ext: true}
	got := c.call(t, "tasks/get", id, map[string]any{"taskId": id})
	require.Equal(t, "working", got["status"], got)
	require.True(t, strings.HasPrefix(fmt.Sprint(got["statusMessage"]), "cancellation requested"), got)
	// Precondition: the reads above came while the cancel was only
	// signalled (the workflow had not recorded it yet).
	row, err := e.m.DB.GetTask(context.Background(), id)
	require.NoError(t, err)
	require.NotNil(t, row.CancelSignalledAt, "precondition: the signal was recorded")
	require.Nil(t, row.CancelRequestedAt, "precondition (timing): the workflow recorded the cancel before the reads ended")

	// A retried cancel is acknowledged again and sends no second remote cancel.
	code, out = e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+id+"/cancel", "")
	require.Equal(t, 202, code, out)
	require.Equal(t, true, out["cancel_requested"], out)

	d = e.waitStatus(t, thread, id, "cancelled")
	require.Equal(t, true, d["cancel_requested"], d)
	require.Equal(t, float64(1), d["cancel_attempt_count"], d)
	for _, j := range jobStats(t, e, thread).Jobs {
		if j.Label == "surfaces" {
			require.Equal(t, 1, j.CancelCalls, "%+v", j)
		}
	}
}

// TestExploreCancelSignalAnswerWhileOnlySignalled: a cancel of an
// input_required task requested while a status poll is in its remote call
// (so only signalled: the workflow records cancel_requested_at once the
// poll returns) refuses answers as TestAnswerWhileCancelling's recorded
// cancel does: REST 409 "the task is being cancelled: it takes no answer",
// 2026 tasks/update -32602, and the detail shows input_answerable false
// while tasks/get drops inputRequests.
func TestExploreCancelSignalAnswerWhileOnlySignalled(t *testing.T) {
	e := startReviewEnv(t, "")
	const thread = "explore-signal-answer"
	id := e.submit(t, thread, "demo_submit_job", `{"duration_seconds": 0, "outcome": "ask", "status_delay_seconds": 8, "label": "answer"}`)
	c := &rpc2026{url: e.m.URL() + "/mcp/threads/" + thread, token: testUserToken, ext: true}
	key := c.questionKey(t, id)
	// The next poll (input_required_poll_interval_seconds 5) is in its
	// remote call once a second status call came.
	require.Eventually(t, func() bool {
		for _, j := range jobStats(t, e, thread).Jobs {
			if j.Label == "answer" && j.StatusCalls >= 2 {
				return true
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond)

	code, out := e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+id+"/cancel", "")
	require.Equal(t, 202, code, out)
	require.Equal(t, false, out["input_answerable"], out)

	_, d := get(t, e.m.URL()+"/api/threads/"+thread+"/mcp-tasks/"+id, testUserToken)
	require.Equal(t, "input_required", d["status"], d)
	require.Equal(t, true, d["cancel_requested"], d)
	require.Equal(t, false, d["input_answerable"], d)
	got := c.call(t, "tasks/get", id, map[string]any{"taskId": id})
	require.Nil(t, got["inputRequests"], "%v", got)

	code, _, out = e.postAnswer(t, thread, id, `{"action": "accept", "content": {"format": "pdf"}, "question_id": 1}`)
	require.Equal(t, 409, code, "%v", out)
	require.Equal(t, map[string]any{"code": "conflict", "message": "the task is being cancelled: it takes no answer"}, out["error"], "%v", out)
	res := c.update(t, id, key, map[string]any{"action": "accept", "content": map[string]any{"format": "pdf"}})
	require.Equal(t, map[string]any{"code": -32602.0, "message": "the task is being cancelled: it takes no answer"}, res["error"], "%v", res)
	// Precondition: the reads above came while the cancel was only
	// signalled (the workflow had not recorded it yet).
	row, err := e.m.DB.GetTask(context.Background(), id)
	require.NoError(t, err)
	require.NotNil(t, row.CancelSignalledAt, "precondition: the signal was recorded")
	require.Nil(t, row.CancelRequestedAt, "precondition (timing): the workflow recorded the cancel before the reads ended")

	e.waitStatus(t, thread, id, "cancelled")
}

// TestExploreCancelSignalAnswerWithoutWorkerIs503: an input_required task
// whose cancel the API acknowledged (and its workflow took: the remote
// cancel keeps failing) reads cancel_requested true and input_answerable
// false, but once no worker runs an answer is refused 503 "no mcpflow
// worker is running to deliver the answer; try again when one is" instead
// of 409 "the task is being cancelled": POST …/input checks the row's raw
// input_answerable (not Task.Answerable, which knows of the cancel) and
// leaves the cancel to the workflow's validator, which it cannot reach.
//
// Documented: docs/reference/http-api.md, POST …/input: "409 with the
// detail when the task does not take an answer; … 409 while the task is
// being cancelled"; "try again when one is" can never succeed here.
func TestExploreCancelSignalAnswerWithoutWorkerIs503(t *testing.T) {
	t.Parallel()
	const gone = 2*time.Minute + 15*time.Second // worker.pollerGoneAfter and a margin
	url := demoHTTP(t)
	ext := fmt.Sprintf(`{"mcpServers": {
  "demo": {"type": "http", "url": %q, "tool_call_timeout": 10, "task_toolsets": [{"name": "job",
    "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job", "input_tool": "answer_job"}]}
}}`, url)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, input_required_poll_interval_seconds: 5 }\n", ext)
	s := startMain(t, ModeServe, cfg, nil)
	e := &taskEnv{m: s}
	w := startWorkerProc(t, cfg)

	const thread = "explore-answer-no-worker"
	id := e.submit(t, thread, "demo_submit_job", `{"duration_seconds": 0, "outcome": "ask", "cancel_errors": 1000}`)
	d := e.waitStatus(t, thread, id, "input_required")
	require.Equal(t, true, d["input_answerable"], d)
	code, out := e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+id+"/cancel", "")
	require.Equal(t, 202, code, out)
	e.waitDetail(t, thread, id, "cancel_attempt_count", float64(1))

	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-w.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop on SIGTERM")
	}
	time.Sleep(gone)

	_, d = get(t, s.URL()+"/api/threads/"+thread+"/mcp-tasks/"+id, testUserToken)
	require.Equal(t, "input_required", d["status"], d)
	require.Equal(t, true, d["cancel_requested"], d)
	require.Equal(t, false, d["input_answerable"], d)
	code, _, out = e.postAnswer(t, thread, id, `{"action": "accept", "content": {"format": "pdf"}, "question_id": 1}`)
	require.Equal(t, 409, code,
		"the detail says the task is being cancelled and takes no answer, yet the answer is refused %d: %v", code, out)
}
