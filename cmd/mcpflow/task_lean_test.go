package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCancelDuringAWritingPoll runs the lean task shape on a real Temporal
// server: the poll activity writes a change to the row and the inbox where
// it polls, and a cancel that arrives while that poll's remote call is in
// flight waits for it (WaitForCancellation) instead of discarding it. Here
// the remote status call takes 3 s and answers input_required (a change
// with an event); the cancel comes during those 3 s. The inbox then holds
// the question (version 1) and the cancellation (version 2), once each, and
// the task ends cancelled with one remote cancel.
func TestCancelDuringAWritingPoll(t *testing.T) {
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, lease_seconds: 30 }\n", demoTaskExt(demoHTTP(t)))
	e := &taskEnv{m: startMain(t, ModeDev, cfg, nil)}
	waitReady(t, e.m)
	id := e.submit(t, "lean", "demo_submit_job", `{"duration_seconds": 0, "outcome": "input_required", "status_delay_seconds": 3, "poll_after_seconds": 1}`)
	remote := remoteID(t, e.m, id)
	require.Eventually(t, func() bool {
		return jobStats(t, e, "lean").Jobs[remote].StatusCalls >= 1
	}, 60*time.Second, 20*time.Millisecond, "the first status call never arrived")
	_, d := get(t, e.m.URL()+"/api/threads/lean/mcp-tasks/"+id, testUserToken)
	require.Equal(t, "submitted", d["status"], "the status call is still in flight: %v", d)

	code, out := e.post(t, "/api/threads/lean/mcp-tasks/"+id+"/cancel", "")
	require.Equal(t, 202, code, out)
	d = e.waitStatus(t, "lean", id, "cancelled")
	require.Equal(t, true, d["cancel_requested"])

	var versions []int
	var statuses []string
	for _, ev := range threadEvents(t, e.m.URL(), "lean") {
		if ev.TaskID == id {
			versions = append(versions, ev.EventVersion)
			statuses = append(statuses, ev.Status)
		}
	}
	require.Equal(t, []int{1, 2}, versions, "each version once, in order")
	require.Equal(t, []string{"input_required", "cancelled"}, statuses, "the in-flight poll's question was kept, then the cancel")
	job := jobStats(t, e, "lean").Jobs[remote]
	require.Equal(t, 1, job.CancelCalls)
	require.Equal(t, "cancelled", job.Status)
}
