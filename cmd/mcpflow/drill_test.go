package main

// Fault drills: tasks run through the whole stack (API, Temporal workflow
// and activities, database, a real MCP server) while one real process is
// killed or restarted under them. Each drill asserts what a user would
// see: every task reaches its right terminal state, the MCP server got
// exactly one submit per task, and each task's events in the thread inbox
// are versions 1..n, once each, ending with the terminal status.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient/session"
	"github.com/mcpflow/mcpflow/workflows"
)

// drillJob is one job of the demo server's state file (--state).
type drillJob struct {
	ID              string    `json:"id"`
	Label           string    `json:"label"`
	CreatedAt       time.Time `json:"created_at"`
	DurationSeconds float64   `json:"duration_seconds"`
	Submits         int       `json:"submits"`
	StatusCalls     int       `json:"status_calls"`
	CancelCalls     int       `json:"cancel_calls"`
}

// endsAt is when the job stops running on the demo server.
func (j drillJob) endsAt() time.Time {
	return j.CreatedAt.Add(time.Duration(j.DurationSeconds * float64(time.Second)))
}

// drillState is the demo server's state file. The drills read it directly
// rather than through the job_stats tool, so the counts are there while
// mcpflow's database, the MCP server or its session is down.
type drillState struct {
	Submits     int                 `json:"submits"`
	StatusCalls int                 `json:"status_calls"`
	Cancels     int                 `json:"cancels"`
	Jobs        map[string]drillJob `json:"jobs"`
	Keys        map[string]string   `json:"keys"` // idempotency key (the local task id) → job id
}

// readDrillState reads the state file; a file not written yet is an empty
// state.
func readDrillState(t *testing.T, path string) drillState {
	t.Helper()
	var s drillState
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s
	}
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &s), "demo state file %s", path)
	return s
}

// job returns the job that task id's submit started (by its idempotency
// key).
func (s drillState) job(id string) (drillJob, bool) {
	j, ok := s.Jobs[s.Keys[id]]
	return j, ok && s.Keys[id] != ""
}

// drillLabels returns one label per task: prefix-00, prefix-01, ...
func drillLabels(prefix string, n int) []string {
	labels := make([]string, n)
	for i := range labels {
		labels[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return labels
}

// waitPolled waits until the demo server has answered at least one status
// call for every task's job (the tasks are being tracked).
func waitPolled(t *testing.T, state string, ids []string) drillState {
	t.Helper()
	var s drillState
	require.Eventually(t, func() bool {
		s = readDrillState(t, state)
		for _, id := range ids {
			if j, ok := s.job(id); !ok || j.StatusCalls == 0 {
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "not every task was polled: %+v", s)
	return s
}

// requireRunningAt checks that no task's remote job had ended at the given
// moment, taken once the fault is complete: it really hit the tasks
// mid-way, so each has a poll left to make after it.
func requireRunningAt(t *testing.T, s drillState, ids []string, at time.Time) {
	t.Helper()
	for _, id := range ids {
		j, ok := s.job(id)
		require.True(t, ok, "task %s", id)
		require.True(t, j.endsAt().After(at),
			"task %s's job had ended before the fault; the drill must hit it mid-task (raise duration_seconds if this machine is slow)", id)
	}
}

// requireOneRemoteSubmit checks with the demo server's state file that it
// got exactly one submit per task, keyed by the task's id, for the job the
// task tracks, and nothing else.
func requireOneRemoteSubmit(t *testing.T, m *Main, state string, ids, labels []string) drillState {
	t.Helper()
	s := readDrillState(t, state)
	require.Equal(t, len(ids), s.Submits, "one remote submit per task in all")
	require.Len(t, s.Jobs, len(ids), "one remote job per task")
	require.Len(t, s.Keys, len(ids), "one idempotency key per task")
	for i, id := range ids {
		j, ok := s.job(id)
		require.True(t, ok, "task %s's submit carried its id as the idempotency key", id)
		require.Equal(t, 1, j.Submits, "task %s: %+v", id, j)
		require.Equal(t, labels[i], j.Label, "task %s submitted its own arguments", id)
		require.Equal(t, j.ID, remoteID(t, m, id), "task %s tracks the job its submit started", id)
	}
	return s
}

// drillEvent is one entry of a thread inbox.
type drillEvent struct {
	Seq          int64  `json:"seq"`
	TaskID       string `json:"task_id"`
	EventVersion int    `json:"event_version"`
	Status       string `json:"status"`
}

// threadEvents reads a thread's whole inbox, page by page.
func threadEvents(t *testing.T, base, thread string) []drillEvent {
	t.Helper()
	var all []drillEvent
	after := int64(0)
	for {
		code, body := get(t, fmt.Sprintf("%s/api/threads/%s/events?after=%d&limit=1000", base, thread, after), testUserToken)
		require.Equal(t, 200, code, "%v", body)
		b, err := json.Marshal(body["events"])
		require.NoError(t, err)
		var page []drillEvent
		require.NoError(t, json.Unmarshal(b, &page))
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
}

// requireEventsOnce checks the thread inbox against want (task id →
// terminal status): every event belongs to one of the tasks, no (task,
// version) appears twice, each task's versions are 1..n in inbox order,
// and its last event, and only that one, has the terminal status.
func requireEventsOnce(t *testing.T, base, thread string, want map[string]string) {
	t.Helper()
	evs := threadEvents(t, base, thread)
	byTask := map[string][]drillEvent{}
	seen := map[string]bool{}
	for i, ev := range evs {
		if i > 0 {
			require.Greater(t, ev.Seq, evs[i-1].Seq, "inbox order")
		}
		_, ours := want[ev.TaskID]
		require.True(t, ours, "an event of a task the drill did not submit: %+v", ev)
		k := fmt.Sprintf("%s@%d", ev.TaskID, ev.EventVersion)
		require.False(t, seen[k], "event version appended twice: %+v", ev)
		seen[k] = true
		byTask[ev.TaskID] = append(byTask[ev.TaskID], ev)
	}
	versions := map[int]int{} // events per task → tasks
	for id, status := range want {
		list := byTask[id]
		versions[len(list)]++
		require.NotEmpty(t, list, "task %s has no event", id)
		for i, ev := range list {
			require.Equal(t, i+1, ev.EventVersion, "task %s's versions are 1..n in order: %+v", id, list)
			terminal := slices.Contains([]string{"completed", "failed", "cancelled"}, ev.Status)
			require.Equal(t, i == len(list)-1, terminal, "task %s: only its last event is terminal: %+v", id, list)
		}
		require.Equal(t, status, list[len(list)-1].Status, "task %s's last event: %+v", id, list)
	}
	t.Logf("thread %s: %d events; tasks by number of event versions: %v", thread, len(evs), versions)
}

// waitAll waits until every task's detail has the status and returns the
// details by task id.
func waitAll(t *testing.T, e *taskEnv, thread string, ids []string, status string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, id := range ids {
		out[id] = e.waitStatus(t, thread, id, status)
	}
	return out
}

// drillConfig swaps a writeConfig file's Temporal address or database for
// the drill's own.
func drillConfig(t *testing.T, cfg string, temporalHostPort, postgresDSN string) {
	t.Helper()
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	if temporalHostPort != "" {
		old := []byte(fmt.Sprintf("address: %q", temporal.HostPort))
		require.True(t, bytes.Contains(b, old))
		b = bytes.Replace(b, old, []byte(fmt.Sprintf("address: %q", temporalHostPort)), 1)
	}
	if postgresDSN != "" {
		old := []byte("database: { backend: sqlite, dsn: mcpflow.db }")
		require.True(t, bytes.Contains(b, old))
		b = bytes.Replace(b, old, []byte(fmt.Sprintf("database: { backend: postgres, dsn: %q }", postgresDSN)), 1)
	}
	require.NoError(t, os.WriteFile(cfg, b, 0o600))
}

// drillTasksYAML is the task runtime of the drills: fast polls, a dead
// attempt retried after 5 s (lease_seconds) and backoff capped at 2 s, so
// that recovery after a fault is quick.
const drillTasksYAML = "mcp_tasks: { enabled: true, poll_interval_seconds: 1, lease_seconds: 5, max_poll_backoff_seconds: 2 }\n"

// TestDrillTemporalKilled kills the Temporal dev server with SIGKILL while
// 20 tasks are working and starts it again on the same database file and
// address: every task completes with its result, each was submitted once,
// and its events are exactly once.
func TestDrillTemporalKilled(t *testing.T) {
	opts := testenv.TemporalOptions{DBFile: filepath.Join(t.TempDir(), "temporal.db"), HostPort: testenv.FreeAddr(t),
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

	state := filepath.Join(t.TempDir(), "jobs.json")
	demo := testenv.StartDemo(t, "http", "--state", state)
	cfg := writeConfig(t, drillTasksYAML, demoTaskExt(demo.URL))
	drillConfig(t, cfg, opts.HostPort, "")
	logs := &testenv.SyncBuffer{}
	m := startMain(t, ModeDev, cfg, logs)
	e := &taskEnv{m: m}
	waitForWorker(t, logs)

	const n = 20
	labels := drillLabels("tkill", n)
	ids := submitMany(t, m.URL(), "dt", labels, func(label string) string {
		return fmt.Sprintf(`{"duration_seconds": 12, "poll_after_seconds": 1, "label": %q}`, label)
	})
	waitAll(t, e, "dt", ids, "working")
	waitPolled(t, state, ids)

	require.NoError(t, srv.Kill())
	srv = nil
	requireRunningAt(t, readDrillState(t, state), ids, time.Now())
	// The API keeps answering from its projection while Temporal is gone.
	for _, id := range ids {
		code, d := get(t, m.URL()+"/api/threads/dt/mcp-tasks/"+id, testUserToken)
		require.Equal(t, 200, code, d)
		require.Equal(t, "working", d["status"], id)
	}
	require.Eventually(t, func() bool {
		code, _ := get(t, m.URL()+"/readyz", "")
		return code == 503
	}, 30*time.Second, 100*time.Millisecond, "readiness never reported Temporal down")

	srv, err = testenv.StartTemporal(context.Background(), opts)
	require.NoError(t, err, "restart the dev server on the same database file and address")
	for id, d := range waitAll(t, e, "dt", ids, "completed") {
		require.Equal(t, map[string]any{"answer": 42.0}, d["result"], id)
		require.Nil(t, d["error"], id)
	}
	final := requireOneRemoteSubmit(t, m, state, ids, labels)
	require.Zero(t, final.Cancels, "recovery never cancels")
	want := map[string]string{}
	for _, id := range ids {
		want[id] = "completed"
	}
	requireEventsOnce(t, m.URL(), "dt", want)
	// The workflows themselves survived the crash and finished.
	for _, id := range ids {
		require.Eventually(t, func() bool {
			resp, err := srv.Client().DescribeWorkflow(context.Background(), id, "")
			return err == nil && resp.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
		}, 60*time.Second, 100*time.Millisecond, "workflow %s", id)
	}
}

// TestDrillPostgresRestart restarts PostgreSQL while tasks poll: their jobs
// end while the database is down, so each workflow holds a terminal status
// it cannot write; once the database is back the writes catch up and
// nothing is lost. It runs a PostgreSQL of its own (initdb in a temporary
// directory, a free port), because restarting the shared server of
// TEST_DATABASE_URL would break the tests of other packages running at the
// same time; like every PostgreSQL test it runs only when TEST_DATABASE_URL
// is set.
func TestDrillPostgresRestart(t *testing.T) {
	testenv.PostgresURL(t)
	pg := testenv.StartPostgres(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s output:\n%s", pg, pg.Logs())
		}
	})

	state := filepath.Join(t.TempDir(), "jobs.json")
	demo := testenv.StartDemo(t, "http", "--state", state)
	cfg := writeConfig(t, drillTasksYAML, demoTaskExt(demo.URL))
	drillConfig(t, cfg, "", pg.DSN)
	logs := &testenv.SyncBuffer{}
	m := startMain(t, ModeDev, cfg, logs)
	require.Equal(t, "postgres", m.DB.Backend())
	e := &taskEnv{m: m}
	waitForWorker(t, logs)

	const n = 10
	labels := drillLabels("pgrestart", n)
	ids := submitMany(t, m.URL(), "dp", labels, func(label string) string {
		return fmt.Sprintf(`{"duration_seconds": 8, "poll_after_seconds": 1, "label": %q}`, label)
	})
	waitAll(t, e, "dp", ids, "working")
	waitPolled(t, state, ids)

	pg.Stop(t)
	requireRunningAt(t, readDrillState(t, state), ids, time.Now())
	require.Eventually(t, func() bool {
		code, body := get(t, m.URL()+"/readyz", "")
		checks, _ := body["checks"].(map[string]any)
		return code == 503 && checks["database"] != "ok"
	}, 30*time.Second, 100*time.Millisecond, "readiness never reported the database down")

	// Keep the database down until every job has ended on the demo server
	// and been polled after that: each workflow then knows its task
	// completed and has to write that (row and event) to a database that
	// is not there. A status call counted after a moment at which the job
	// had ended answered "completed".
	ended := map[string]int{} // job id → its status calls, read after it ended
	var s drillState
	require.Eventually(t, func() bool {
		now := time.Now() // before the read: calls counted later came after now
		s = readDrillState(t, state)
		polledAfterEnd := 0
		for _, id := range ids {
			j, _ := s.job(id)
			calls, seen := ended[j.ID]
			switch {
			case seen && j.StatusCalls > calls:
				polledAfterEnd++
			case !seen && now.After(j.endsAt()):
				ended[j.ID] = j.StatusCalls
			}
		}
		return polledAfterEnd == n
	}, 60*time.Second, 100*time.Millisecond, "not every job was polled after it ended: %+v", s)
	for _, id := range ids {
		code, d := get(t, m.URL()+"/api/threads/dp/mcp-tasks/"+id, testUserToken)
		require.Equal(t, 503, code, "a task read while the database is down is unavailable, not an internal error: %v", d)
		require.Equal(t, "unavailable", d["error"].(map[string]any)["code"])
	}

	pg.Start(t)
	for id, d := range waitAll(t, e, "dp", ids, "completed") {
		require.Equal(t, map[string]any{"answer": 42.0}, d["result"], id)
		require.Nil(t, d["error"], id)
	}
	final := requireOneRemoteSubmit(t, m, state, ids, labels)
	require.Zero(t, final.Cancels)
	want := map[string]string{}
	for _, id := range ids {
		want[id] = "completed"
	}
	requireEventsOnce(t, m.URL(), "dp", want)
	code, body := get(t, m.URL()+"/readyz", "")
	require.Equal(t, 200, code, "%v", body)
}

// TestDrillUpstreamRestart kills the demo MCP server (jobs in its state
// file) while tasks poll and starts it again on the same address: the
// shared session reconnects to the new process and polling continues,
// every task completes, each submitted once. Over streamable HTTP, and over
// SSE, whose open stream breaks with the server.
func TestDrillUpstreamRestart(t *testing.T) {
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) { upstreamRestart(t, transport) })
	}
}

func upstreamRestart(t *testing.T, transport string) {
	state := filepath.Join(t.TempDir(), "jobs.json")
	addr := testenv.FreeAddr(t)
	demo := testenv.StartDemo(t, transport, "--state", state, "--addr", addr)
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": %q, "url": %q, "tool_call_timeout": 10, %s}}}`, transport, demo.URL, jobToolset)
	cfg := writeConfig(t, drillTasksYAML, ext)
	logs := &testenv.SyncBuffer{}
	m := startMain(t, ModeDev, cfg, logs)
	e := &taskEnv{m: m}
	waitForWorker(t, logs)

	const n = 10
	labels := drillLabels("upstream-"+transport, n)
	ids := submitMany(t, m.URL(), "du", labels, func(label string) string {
		return fmt.Sprintf(`{"duration_seconds": 10, "poll_after_seconds": 1, "label": %q}`, label)
	})
	waitAll(t, e, "du", ids, "working")
	before := waitPolled(t, state, ids)

	demo.Kill()
	requireRunningAt(t, readDrillState(t, state), ids, time.Now())
	// Every task sees the outage: its polls fail and say so.
	for _, id := range ids {
		var d map[string]any
		require.Eventually(t, func() bool {
			_, d = get(t, m.URL()+"/api/threads/du/mcp-tasks/"+id, testUserToken)
			return d["last_poll_error"] != nil
		}, 60*time.Second, 100*time.Millisecond, "task %s never reported the outage: %v", id, d)
		require.Equal(t, "working", d["status"], id)
	}

	again := testenv.StartDemo(t, transport, "--state", state, "--addr", addr)
	require.Equal(t, demo.URL, again.URL)
	for id, d := range waitAll(t, e, "du", ids, "completed") {
		require.Equal(t, map[string]any{"answer": 42.0}, d["result"], id)
		require.Nil(t, d["error"], id)
		require.Nil(t, d["last_poll_error"], "a successful poll clears the error: %s", id)
	}
	final := requireOneRemoteSubmit(t, m, state, ids, labels)
	require.Zero(t, final.Cancels)
	for _, id := range ids {
		j, _ := final.job(id)
		b, _ := before.job(id)
		require.Greater(t, j.StatusCalls, b.StatusCalls, "task %s was polled by the restarted server", id)
	}
	want := map[string]string{}
	for _, id := range ids {
		want[id] = "completed"
	}
	requireEventsOnce(t, m.URL(), "du", want)
	// Ordinary tool calls use the same shared session, reconnected.
	stats := jobStats(t, e, "du")
	require.Equal(t, n, stats.Submits)
}

// stdioSession returns the pooled stdio session of a server for alice's
// thread, without starting one.
func stdioSession(t *testing.T, m *Main, server, thread string) *session.Session {
	t.Helper()
	sess, err := m.MCP.Pool().Session(context.Background(), session.PoolKey{Server: server, Scope: "alice:" + thread},
		func(context.Context) (*session.Session, error) {
			return nil, errors.New("no stdio session is running for this thread")
		})
	require.NoError(t, err)
	require.NotZero(t, sess.PID())
	return sess
}

// killStdioChild kills a thread's stdio server process with SIGKILL and
// waits until its session has noticed. It returns the dead process's id.
func killStdioChild(t *testing.T, m *Main, server, thread string) int {
	t.Helper()
	sess := stdioSession(t, m, server, thread)
	pid := sess.PID()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	select {
	case <-sess.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("the session of %s's stdio server (pid %d) did not notice its death", server, pid)
	}
	return pid
}

// stdioJobStats calls a stdio server's job_stats tool through the API, in
// the thread's session.
func stdioJobStats(t *testing.T, e *taskEnv, server, thread string) demoStats {
	t.Helper()
	code, out := e.post(t, "/api/threads/"+thread+"/tools/"+server+"_job_stats/call", `{}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, false, out["is_error"], out)
	b, err := json.Marshal(out["structured_content"])
	require.NoError(t, err)
	var s demoStats
	require.NoError(t, json.Unmarshal(b, &s))
	return s
}

// TestDrillStdioChildKilled kills the stdio server process that holds a
// thread's tasks (the worker keeps running) and checks the documented rule
// (docs/agent-developers.md, "Stdio task servers"): the next call starts a fresh process;
// a server that persisted its tasks (the demo server with --state) finds
// them again and polling continues, while one that did not answers
// task_not_found and the task fails. No task is submitted again.
func TestDrillStdioChildKilled(t *testing.T) {
	bin := testenv.Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp")
	state := filepath.Join(t.TempDir(), "stdio-jobs.json")
	ext := fmt.Sprintf(`{"mcpServers": {
  "stash": {"type": "stdio", "command": %q, "args": ["--transport", "stdio", "--state", %q], %s},
  "volatile": {"type": "stdio", "command": %q, "args": ["--transport", "stdio"], %s}
}}`, bin, state, jobToolset, bin, jobToolset)
	cfg := writeConfig(t, drillTasksYAML+"workspace: { root: ws }\n", ext)
	logs := &testenv.SyncBuffer{}
	m := startMain(t, ModeDev, cfg, logs)
	e := &taskEnv{m: m}
	waitForWorker(t, logs)
	const n = 3

	t.Run("with a state file polling continues", func(t *testing.T) {
		const thread = "ds-stash"
		labels := drillLabels("stash", n)
		var ids []string
		for _, label := range labels {
			ids = append(ids, e.submit(t, thread, "stash_submit_job",
				fmt.Sprintf(`{"duration_seconds": 8, "poll_after_seconds": 1, "label": %q}`, label)))
		}
		waitAll(t, e, thread, ids, "working")
		before := waitPolled(t, state, ids)

		dead := killStdioChild(t, m, "stash", thread)
		requireRunningAt(t, readDrillState(t, state), ids, time.Now())

		for id, d := range waitAll(t, e, thread, ids, "completed") {
			require.Equal(t, map[string]any{"answer": 42.0}, d["result"], id)
			require.Nil(t, d["error"], id)
		}
		require.NotEqual(t, dead, stdioSession(t, m, "stash", thread).PID(), "a fresh process serves the thread")
		final := requireOneRemoteSubmit(t, m, state, ids, labels)
		for _, id := range ids {
			j, _ := final.job(id)
			b, _ := before.job(id)
			require.Greater(t, j.StatusCalls, b.StatusCalls, "task %s was polled by the fresh process", id)
		}
		want := map[string]string{}
		for _, id := range ids {
			want[id] = "completed"
		}
		requireEventsOnce(t, m.URL(), thread, want)
	})

	t.Run("without a state file the task fails", func(t *testing.T) {
		const thread = "ds-volatile"
		labels := drillLabels("volatile", n)
		var ids []string
		for _, label := range labels {
			ids = append(ids, e.submit(t, thread, "volatile_submit_job",
				fmt.Sprintf(`{"duration_seconds": 300, "poll_after_seconds": 1, "label": %q}`, label)))
		}
		waitAll(t, e, thread, ids, "working")
		// The process holding the jobs got one submit per task.
		var stats demoStats
		require.Eventually(t, func() bool {
			stats = stdioJobStats(t, e, "volatile", thread)
			for _, j := range stats.Jobs {
				if j.StatusCalls == 0 {
					return false
				}
			}
			return len(stats.Jobs) == n
		}, 60*time.Second, 100*time.Millisecond, "not every task was polled: %+v", stats)
		require.Equal(t, n, stats.Submits)
		for i, id := range ids {
			j, ok := stats.Jobs[remoteID(t, m, id)]
			require.True(t, ok, "task %s", id)
			require.Equal(t, 1, j.Submits, "task %s", id)
			require.Equal(t, labels[i], j.Label, "task %s", id)
		}

		dead := killStdioChild(t, m, "volatile", thread)
		for id, d := range waitAll(t, e, thread, ids, "failed") {
			require.Equal(t, "unknown job", d["error"], "the fresh process answers task_not_found: %s", id)
			require.Nil(t, d["result"], id)
		}
		require.NotEqual(t, dead, stdioSession(t, m, "volatile", thread).PID(), "a fresh process serves the thread")
		// The fresh process was asked for the jobs' status and submitted
		// nothing: nobody re-sent a submit.
		after := stdioJobStats(t, e, "volatile", thread)
		require.Zero(t, after.Submits, "%+v", after)
		require.Empty(t, after.Jobs)
		require.GreaterOrEqual(t, after.StatusCalls, n)
		want := map[string]string{}
		for _, id := range ids {
			want[id] = "failed"
		}
		requireEventsOnce(t, m.URL(), thread, want)
	})
}
