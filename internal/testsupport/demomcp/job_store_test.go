package demomcp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// submit calls submit_job and checks the §2.3 submit payload.
func submit(t *testing.T, c *client.Client, args map[string]any) string {
	t.Helper()
	got := callStructured(t, c, ToolSubmitJob, args)
	id, _ := got["task_id"].(string)
	require.True(t, strings.HasPrefix(id, "job-"), "task_id %q", id)
	require.Equal(t, map[string]any{"task_id": id, "status": "running"}, got)
	return id
}

func status(t *testing.T, c *client.Client, id string) map[string]any {
	t.Helper()
	return callStructured(t, c, ToolGetJobStatus, map[string]any{"task_id": id})
}

func cancel(t *testing.T, c *client.Client, id string) map[string]any {
	t.Helper()
	return callStructured(t, c, ToolCancelJob, map[string]any{"task_id": id})
}

func TestJobCompleted(t *testing.T) {
	t.Parallel()
	b := setup(t)

	id := submit(t, b.client, map[string]any{"duration_seconds": 0.2, "result": map[string]any{"rows": []any{1, "two"}}})
	got := waitStatus(t, b.client, id, "completed")
	require.Equal(t, map[string]any{"task_id": id, "status": "completed", "result": map[string]any{"rows": []any{float64(1), "two"}}}, got)

	id = submit(t, b.client, map[string]any{"duration_seconds": 0.2, "result": "plain string"})
	require.Equal(t, "plain string", waitStatus(t, b.client, id, "completed")["result"])

	id = submit(t, b.client, map[string]any{"duration_seconds": 0})
	require.Equal(t, map[string]any{"answer": float64(42)}, waitStatus(t, b.client, id, "completed")["result"])
}

func TestJobRunningCarriesPollHint(t *testing.T) {
	t.Parallel()
	b := setup(t)

	id := submit(t, b.client, map[string]any{"duration_seconds": 300, "poll_after_seconds": 1.5})
	require.Equal(t, map[string]any{"task_id": id, "status": "running", "poll_after_seconds": 1.5}, status(t, b.client, id))

	plain := submit(t, b.client, map[string]any{"duration_seconds": 300})
	require.Equal(t, map[string]any{"task_id": plain, "status": "running"}, status(t, b.client, plain))
}

func TestJobFailed(t *testing.T) {
	t.Parallel()
	b := setup(t)

	id := submit(t, b.client, map[string]any{"duration_seconds": 0.2, "outcome": "failed", "error": "disk full"})
	require.Equal(t, map[string]any{"task_id": id, "status": "failed", "error": "disk full"},
		waitStatus(t, b.client, id, "failed"))

	id = submit(t, b.client, map[string]any{"duration_seconds": 0.2, "outcome": "failed"})
	require.Equal(t, map[string]any{"task_id": id, "status": "failed", "error": "job failed"},
		waitStatus(t, b.client, id, "failed"))
}

func TestJobInputRequiredStaysUntilCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)

	id := submit(t, b.client, map[string]any{"duration_seconds": 0.2, "outcome": "input_required", "poll_after_seconds": 2})
	want := map[string]any{
		"task_id": id,
		"status":  "input_required",
		"input_required": map[string]any{
			"question": "Which format?",
			"options":  []any{"pdf", "csv"},
		},
	}
	require.Equal(t, want, waitStatus(t, b.client, id, "input_required"))
	require.Equal(t, want, status(t, b.client, id))

	require.Equal(t, map[string]any{"task_id": id, "status": "cancelled"}, cancel(t, b.client, id))
	require.Equal(t, map[string]any{"task_id": id, "status": "cancelled"}, status(t, b.client, id))
}

func TestJobNotFoundOutcome(t *testing.T) {
	t.Parallel()
	b := setup(t)

	id := submit(t, b.client, map[string]any{"duration_seconds": 0.2, "outcome": "not_found"})
	require.Equal(t, map[string]any{"task_id": id, "status": "failed", "error_code": "task_not_found", "error": "job expired"},
		waitStatus(t, b.client, id, "failed"))
	require.Equal(t, map[string]any{"task_id": id, "status": "failed", "error": "job expired"}, cancel(t, b.client, id))
}

func TestJobUnknownID(t *testing.T) {
	t.Parallel()
	b := setup(t)

	require.Equal(t, map[string]any{"task_id": "job-nope", "status": "failed", "error_code": "task_not_found", "error": "unknown job"},
		status(t, b.client, "job-nope"))
	require.Equal(t, map[string]any{"task_id": "job-nope", "status": "failed", "error": "unknown job"},
		cancel(t, b.client, "job-nope"))
}

func TestJobStatusErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)

	id := submit(t, b.client, map[string]any{"duration_seconds": 0, "status_errors": 2})
	for range 2 {
		res := callTool(t, b.client, ToolGetJobStatus, map[string]any{"task_id": id})
		require.True(t, res.IsError)
		require.Equal(t, "upstream temporarily unavailable", firstText(res))
		require.Nil(t, res.StructuredContent)
	}
	require.Equal(t, "completed", waitStatus(t, b.client, id, "completed")["status"])
	stats := callStructured(t, b.client, ToolJobStats, nil)
	require.EqualValues(t, 3, stats["status_calls"])
}

func TestCancelIsIdempotentAndReportsTerminalStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)

	running := submit(t, b.client, map[string]any{"duration_seconds": 300, "label": "long"})
	require.Equal(t, map[string]any{"task_id": running, "status": "cancelled"}, cancel(t, b.client, running))
	require.Equal(t, map[string]any{"task_id": running, "status": "cancelled"}, cancel(t, b.client, running))
	require.Equal(t, map[string]any{"task_id": running, "status": "cancelled"}, status(t, b.client, running))

	completed := submit(t, b.client, map[string]any{"duration_seconds": 0, "result": map[string]any{"n": 1}})
	waitStatus(t, b.client, completed, "completed")
	require.Equal(t, map[string]any{"task_id": completed, "status": "completed", "result": map[string]any{"n": float64(1)}},
		cancel(t, b.client, completed))
	require.Equal(t, "completed", status(t, b.client, completed)["status"])

	failed := submit(t, b.client, map[string]any{"duration_seconds": 0, "outcome": "failed", "error": "boom"})
	waitStatus(t, b.client, failed, "failed")
	require.Equal(t, map[string]any{"task_id": failed, "status": "failed", "error": "boom"}, cancel(t, b.client, failed))

	stats := callStructured(t, b.client, ToolJobStats, nil)
	require.EqualValues(t, 3, stats["submits"])
	require.EqualValues(t, 4, stats["cancels"])
	jobs := stats["jobs"].(map[string]any)
	require.Equal(t, map[string]any{"status": "cancelled", "label": "long", "submits": float64(1), "status_calls": float64(1), "cancel_calls": float64(2), "answer_calls": float64(0)},
		jobs[running])
	require.EqualValues(t, 1, jobs[completed].(map[string]any)["cancel_calls"])
	require.Equal(t, "failed", jobs[failed].(map[string]any)["status"])
}

func TestSubmitJobValidatesArguments(t *testing.T) {
	t.Parallel()
	b := setup(t)

	for _, args := range []map[string]any{
		{"outcome": "queued"},
		{"duration_seconds": -1},
		{"poll_after_seconds": 0},
		{"poll_after_seconds": -2},
		{"status_errors": -1},
		{"status_errors": 1.5},
		{"duration_seconds": "soon"},
		{"answer_duration_seconds": -1},
	} {
		res := callTool(t, b.client, ToolSubmitJob, args)
		require.True(t, res.IsError, "args %v accepted", args)
	}
	for _, name := range []string{ToolGetJobStatus, ToolCancelJob, ToolAnswerJob} {
		res := callTool(t, b.client, name, map[string]any{})
		require.True(t, res.IsError, "%s without task_id accepted", name)
	}
	stats := callStructured(t, b.client, ToolJobStats, nil)
	require.Equal(t, map[string]any{"submits": float64(0), "status_calls": float64(0), "cancels": float64(0), "answers": float64(0), "jobs": map[string]any{}}, stats)
}

// TestStatePersists reopens the state file in a new Server, as a restart does.
func TestStatePersists(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nested", "state.json")

	first, err := New(Config{StatePath: path})
	require.NoError(t, err)
	c1 := connectHTTP(t, first, "")
	id := submit(t, c1, map[string]any{"duration_seconds": 0.3, "label": "persisted", "result": []any{"a"}})
	cancelled := submit(t, c1, map[string]any{"duration_seconds": 300})
	cancel(t, c1, cancelled)
	status(t, c1, id)

	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "temp files left next to the state file")

	second, err := New(Config{StatePath: path})
	require.NoError(t, err)
	c2 := connectHTTP(t, second, "")
	require.Equal(t, []any{"a"}, waitStatus(t, c2, id, "completed")["result"])
	require.Equal(t, "cancelled", status(t, c2, cancelled)["status"])

	stats := callStructured(t, c2, ToolJobStats, nil)
	require.EqualValues(t, 2, stats["submits"])
	require.EqualValues(t, 1, stats["cancels"])
	jobs := stats["jobs"].(map[string]any)
	require.Equal(t, "persisted", jobs[id].(map[string]any)["label"])
	require.EqualValues(t, 1, jobs[id].(map[string]any)["submits"])
	require.EqualValues(t, 1, jobs[cancelled].(map[string]any)["cancel_calls"])
}

func TestCorruptStateFileIsAnError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o644))
	_, err := New(Config{StatePath: path})
	require.ErrorContains(t, err, "decode state file")
}

// A repeated idempotency key answers the job it started, also after a
// restart; a new key or none starts a new job.
func TestSubmitIdempotencyKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	srv, err := New(Config{StatePath: path})
	require.NoError(t, err)
	c := connectHTTP(t, srv, "")
	keyed := func(c *client.Client, key string) string {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = ToolSubmitJob
		req.Params.Arguments = map[string]any{"duration_seconds": 300, "label": key}
		req.Params.Meta = mcp.NewMetaFromMap(map[string]any{mcpflow.SubmitKeyMeta: key})
		res, err := c.CallTool(t.Context(), req)
		require.NoError(t, err)
		require.False(t, res.IsError, firstText(res))
		got := structuredOf(t, res)
		require.Equal(t, "running", got["status"])
		return got["task_id"].(string)
	}
	a := keyed(c, "mcp-task-a")
	require.Equal(t, a, keyed(c, "mcp-task-a"))
	b := keyed(c, "mcp-task-b")
	require.NotEqual(t, a, b)
	require.NotEqual(t, submit(t, c, map[string]any{"duration_seconds": 300}), submit(t, c, map[string]any{"duration_seconds": 300}))

	restarted, err := New(Config{StatePath: path})
	require.NoError(t, err)
	c2 := connectHTTP(t, restarted, "")
	require.Equal(t, a, keyed(c2, "mcp-task-a"))

	stats := callStructured(t, c2, ToolJobStats, nil)
	require.EqualValues(t, 6, stats["submits"], "every submit call counts")
	jobs := stats["jobs"].(map[string]any)
	require.Len(t, jobs, 4)
	require.EqualValues(t, 3, jobs[a].(map[string]any)["submits"])
	require.EqualValues(t, 1, jobs[b].(map[string]any)["submits"])
}

func answer(t *testing.T, c *client.Client, id, action string, content map[string]any) map[string]any {
	t.Helper()
	args := map[string]any{"task_id": id, "action": action}
	if content != nil {
		args["content"] = content
	}
	return callStructured(t, c, ToolAnswerJob, args)
}

// An "ask" job asks an MCP elicitation; answer_job's accept resumes it and
// it completes with the answer as result; a second answer is not taken.
func TestJobAskAccepted(t *testing.T) {
	t.Parallel()
	b := setup(t)

	id := submit(t, b.client, map[string]any{"duration_seconds": 0.2, "outcome": "ask", "answer_duration_seconds": 0.3})
	asking := waitStatus(t, b.client, id, "input_required")
	require.Equal(t, map[string]any{"task_id": id, "status": "input_required", "input_required": map[string]any{
		"message": "Which format should the report have?",
		"requested_schema": map[string]any{"type": "object", "required": []any{"format"},
			"properties": map[string]any{"format": map[string]any{"type": "string", "enum": []any{"pdf", "csv"}}}},
	}}, asking)

	require.Equal(t, map[string]any{"task_id": id, "status": "running"}, answer(t, b.client, id, "accept", map[string]any{"format": "pdf"}))
	require.Equal(t, "running", status(t, b.client, id)["status"], "the job runs on for answer_duration_seconds")
	// Only a question takes an answer.
	require.Equal(t, map[string]any{"task_id": id, "status": "running", "error_code": "input_not_required", "error": "job is running, not waiting for input"},
		answer(t, b.client, id, "decline", nil))
	done := waitStatus(t, b.client, id, "completed")
	require.Equal(t, map[string]any{"task_id": id, "status": "completed", "result": map[string]any{"action": "accept", "answer": map[string]any{"format": "pdf"}}}, done)
	require.Equal(t, map[string]any{"task_id": id, "status": "completed", "error_code": "input_not_required", "error": "job is completed, not waiting for input"},
		answer(t, b.client, id, "accept", map[string]any{"format": "csv"}))
	require.Equal(t, done, status(t, b.client, id), "a refused answer changes nothing")

	stats := callStructured(t, b.client, ToolJobStats, nil)
	require.EqualValues(t, 3, stats["answers"])
	require.EqualValues(t, 3, stats["jobs"].(map[string]any)[id].(map[string]any)["answer_calls"])
}

func TestJobAnswerDeclineAndCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// Decline resumes the job too; without answer_duration_seconds it
	// completes at once.
	declined := submit(t, b.client, map[string]any{"duration_seconds": 0, "outcome": "ask"})
	waitStatus(t, b.client, declined, "input_required")
	require.Equal(t, map[string]any{"task_id": declined, "status": "completed"}, answer(t, b.client, declined, "decline", nil))
	require.Equal(t, map[string]any{"task_id": declined, "status": "completed", "result": map[string]any{"action": "decline"}}, status(t, b.client, declined))
	require.Equal(t, map[string]any{"task_id": declined, "status": "completed", "result": map[string]any{"action": "decline"}}, cancel(t, b.client, declined))

	// Cancel cancels the job.
	cancelled := submit(t, b.client, map[string]any{"duration_seconds": 0, "outcome": "ask"})
	waitStatus(t, b.client, cancelled, "input_required")
	require.Equal(t, map[string]any{"task_id": cancelled, "status": "cancelled"}, answer(t, b.client, cancelled, "cancel", nil))
	require.Equal(t, map[string]any{"task_id": cancelled, "status": "cancelled"}, status(t, b.client, cancelled))

	// The free-form question of an input_required job takes answers too;
	// accept without content answers an empty object.
	free := submit(t, b.client, map[string]any{"duration_seconds": 0, "outcome": "input_required"})
	waitStatus(t, b.client, free, "input_required")
	require.Equal(t, map[string]any{"task_id": free, "status": "completed"}, answer(t, b.client, free, "accept", nil))
	require.Equal(t, map[string]any{"action": "accept", "answer": map[string]any{}}, status(t, b.client, free)["result"])

	// An unknown job.
	require.Equal(t, map[string]any{"task_id": "job-nope", "status": "failed", "error_code": "task_not_found", "error": "unknown job"},
		answer(t, b.client, "job-nope", "decline", nil))
}

func TestAnswerJobValidatesArguments(t *testing.T) {
	t.Parallel()
	b := setup(t)

	id := submit(t, b.client, map[string]any{"duration_seconds": 0, "outcome": "ask"})
	waitStatus(t, b.client, id, "input_required")
	for _, args := range []map[string]any{
		{"action": "accept"},
		{"task_id": id},
		{"task_id": id, "action": "maybe"},
		{"task_id": id, "action": "decline", "content": map[string]any{"format": "pdf"}},
		{"task_id": id, "action": "accept", "content": []any{"pdf"}},
		{"task_id": id, "action": "accept", "content": "pdf"},
	} {
		res := callTool(t, b.client, ToolAnswerJob, args)
		require.True(t, res.IsError, "args %v accepted", args)
	}
	require.Equal(t, "input_required", status(t, b.client, id)["status"], "no answer was taken")
}

// An answer survives a restart of the server (the state file).
func TestJobAnswerPersists(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	first, err := New(Config{StatePath: path})
	require.NoError(t, err)
	c1 := connectHTTP(t, first, "")
	id := submit(t, c1, map[string]any{"duration_seconds": 0, "outcome": "ask"})
	waitStatus(t, c1, id, "input_required")
	answer(t, c1, id, "accept", map[string]any{"format": "csv"})

	second, err := New(Config{StatePath: path})
	require.NoError(t, err)
	c2 := connectHTTP(t, second, "")
	require.Equal(t, map[string]any{"action": "accept", "answer": map[string]any{"format": "csv"}}, status(t, c2, id)["result"])
}

func TestJobFinishAtStatusCall(t *testing.T) {
	t.Parallel()
	b := setup(t)

	id := submit(t, b.client, map[string]any{"duration_seconds": 0, "finish_at_status_call": 3, "poll_after_seconds": 2, "label": "three"})
	for range 2 {
		require.Equal(t, map[string]any{"task_id": id, "status": "running", "poll_after_seconds": float64(2)}, status(t, b.client, id))
	}
	require.Equal(t, map[string]any{"task_id": id, "status": "completed", "result": map[string]any{"answer": float64(42)}}, status(t, b.client, id))
	require.Equal(t, "completed", status(t, b.client, id)["status"])

	// It ends at the call even when the duration has not passed, and
	// injected errors count as calls.
	failed := submit(t, b.client, map[string]any{"duration_seconds": 300, "finish_at_status_call": 2, "status_errors": 1, "outcome": "failed"})
	require.True(t, callTool(t, b.client, ToolGetJobStatus, map[string]any{"task_id": failed}).IsError)
	require.Equal(t, map[string]any{"task_id": failed, "status": "failed", "error": "job failed"}, status(t, b.client, failed))

	for _, bad := range []any{0, -1, 1.5, "2"} {
		res := callTool(t, b.client, ToolSubmitJob, map[string]any{"finish_at_status_call": bad})
		require.True(t, res.IsError, "finish_at_status_call %v accepted", bad)
	}
	jobs := callStructured(t, b.client, ToolJobStats, nil)["jobs"].(map[string]any)
	require.EqualValues(t, 4, jobs[id].(map[string]any)["status_calls"])
}

// status_delay_seconds holds every status call of the job before it
// answers; the call is counted when it arrives, so job_stats sees it while
// it is still held.
func TestJobStatusDelay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := submit(t, b.client, map[string]any{"duration_seconds": 300, "status_delay_seconds": 5})
	answered := make(chan string, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = ToolGetJobStatus, map[string]any{"task_id": id}
		res, err := b.client.CallTool(testContext(t), req)
		if err != nil {
			answered <- err.Error()
			return
		}
		answered <- fmt.Sprint(res.StructuredContent)
	}()
	require.Eventually(t, func() bool {
		jobs := callStructured(t, b.client, ToolJobStats, nil)["jobs"].(map[string]any)
		return jobs[id].(map[string]any)["status_calls"] == float64(1)
	}, 10*time.Second, 10*time.Millisecond, "the held call is counted")
	select {
	case got := <-answered:
		t.Fatalf("the status call answered before its delay: %v", got)
	default:
	}
	require.Contains(t, <-answered, "running", "then it answers")
	fast := submit(t, b.client, map[string]any{"duration_seconds": 300})
	require.Equal(t, "running", status(t, b.client, fast)["status"])
	for _, bad := range []any{-1, 31, "2"} {
		res := callTool(t, b.client, ToolSubmitJob, map[string]any{"status_delay_seconds": bad})
		require.True(t, res.IsError, "status_delay_seconds %v accepted", bad)
	}
}

// Arguments of the wrong type are a tool error that names the argument and
// the JSON it takes, not Go's decoder's text.
func TestArgumentErrorsNameTheArgument(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := callTool(t, b.client, ToolAdd, map[string]any{"a": "two", "b": 3})
	require.True(t, res.IsError)
	text := res.Content[0].(mcp.TextContent).Text
	require.Equal(t, "invalid arguments for add: 'a' must be a number, not a JSON string", text)
	require.NotContains(t, text, "Go struct")
}

// answer_errors refuses that many answers (isError, not taken) of a job
// that waits for one; the next is taken. cancel_errors fails that many
// cancel_job calls; the next cancels.
func TestJobAnswerAndCancelErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := submit(t, b.client, map[string]any{"duration_seconds": 0, "outcome": "ask", "answer_errors": 2})
	waitStatus(t, b.client, id, "input_required")
	for range 2 {
		res := callTool(t, b.client, ToolAnswerJob, map[string]any{"task_id": id, "action": "decline"})
		require.True(t, res.IsError)
		require.Equal(t, "the job cannot take an answer right now", firstText(res))
	}
	require.Equal(t, "input_required", status(t, b.client, id)["status"], "a refused answer is not taken")
	require.Equal(t, map[string]any{"task_id": id, "status": "completed"}, answer(t, b.client, id, "decline", nil))

	stuck := submit(t, b.client, map[string]any{"duration_seconds": 300, "cancel_errors": 1})
	res := callTool(t, b.client, ToolCancelJob, map[string]any{"task_id": stuck})
	require.True(t, res.IsError)
	require.Equal(t, "the job cannot be cancelled right now", firstText(res))
	require.Equal(t, "running", status(t, b.client, stuck)["status"])
	require.Equal(t, "cancelled", cancel(t, b.client, stuck)["status"])

	for _, bad := range []map[string]any{{"answer_errors": -1}, {"cancel_errors": -1}} {
		res := callTool(t, b.client, ToolSubmitJob, bad)
		require.True(t, res.IsError, "%v", bad)
	}
}

// hold_answers makes answer_job calls wait until release_answers; job_stats
// counts them as answers_held meanwhile, and the held call then takes the
// answer as usual.
func TestJobHoldAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := submit(t, b.client, map[string]any{"duration_seconds": 0, "outcome": "ask", "hold_answers": true})
	waitStatus(t, b.client, id, "input_required")
	took := make(chan map[string]any, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = ToolAnswerJob, map[string]any{"task_id": id, "action": "accept", "content": map[string]any{"format": "pdf"}}
		res, err := b.client.CallTool(testContext(t), req)
		if err != nil || res.IsError {
			took <- nil
			return
		}
		took <- res.StructuredContent.(map[string]any)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		job := callStructured(t, b.client, ToolJobStats, nil)["jobs"].(map[string]any)[id].(map[string]any)
		if job["answers_held"] == float64(1) {
			require.Equal(t, "input_required", status(t, b.client, id)["status"], "a held answer is not taken yet")
			break
		}
		require.True(t, time.Now().Before(deadline), "the answer was never held: %v", job)
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, map[string]any{"task_id": id, "released": float64(1)}, callStructured(t, b.client, ToolRelease, map[string]any{"task_id": id}))
	require.Equal(t, map[string]any{"task_id": id, "status": "completed"}, <-took)
	require.Equal(t, map[string]any{"task_id": "job-nope", "status": "failed", "error_code": "task_not_found", "error": "unknown job"},
		callStructured(t, b.client, ToolRelease, map[string]any{"task_id": "job-nope"}))
}
