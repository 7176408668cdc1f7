package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// startInputEnv runs mcpflow (dev mode) with the demo server three times:
// "demo" (streamable HTTP) and "local" (stdio) with a toolset whose
// input_tool is answer_job, and "plain" (the same HTTP server) with a
// toolset without one. The long input_required poll interval keeps the
// task's row as the question left it while a test acts on it.
func startInputEnv(t *testing.T) *taskEnv {
	t.Helper()
	url := demoHTTP(t)
	bin := testenv.Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp")
	const asking = `"task_toolsets": [{"name": "job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job", "input_tool": "answer_job"}]`
	ext := fmt.Sprintf(`{"mcpServers": {
  "demo": {"type": "http", "url": %q, "tool_call_timeout": 10, %s},
  "plain": {"type": "http", "url": %q, "tool_call_timeout": 10, %s},
  "local": {"type": "stdio", "command": %q, "args": ["--transport", "stdio"], %s}
}}`, url, asking, url, jobToolset, bin, asking)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, input_required_poll_interval_seconds: 60 }\nworkspace: { root: ws }\n", ext)
	return &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
}

// TestOrdinaryTaskInputAnswered: a task toolset with an input_tool
// makes an input_required task answerable; POST …/input delivers the
// answer to the demo server's answer_job (over HTTP and over stdio), the
// job resumes and its result carries the answer. Without an input_tool the
// question is shown but not answerable (409), and an answer to a question
// the server no longer asks is refused (409) and ends answerability.
func TestOrdinaryTaskInputAnswered(t *testing.T) {
	e := startInputEnv(t)

	// The input tool is hidden like status and cancel; a server whose
	// toolset does not name it shows answer_job as an ordinary tool.
	code, body := get(t, e.m.URL()+"/api/threads/q1/tools", testUserToken)
	require.Equal(t, 200, code)
	names := map[string]bool{}
	for _, raw := range body["tools"].([]any) {
		names[raw.(map[string]any)["name"].(string)] = true
	}
	require.True(t, names["demo_submit_job"])
	require.False(t, names["demo_answer_job"], "the input tool is hidden")
	require.False(t, names["local_answer_job"], "the input tool is hidden")
	require.True(t, names["plain_answer_job"], "not an input tool there")

	t.Run("accept over http", func(t *testing.T) {
		id := e.submit(t, "q1", "demo_submit_job", `{"duration_seconds": 0.5, "outcome": "ask", "answer_duration_seconds": 0.5}`)
		d := e.waitQuestion(t, "q1", id)
		q := d["input_required"].(map[string]any)
		require.Equal(t, "Which format should the report have?", q["message"])
		require.Equal(t, []any{"format"}, q["requested_schema"].(map[string]any)["required"])

		code, out := e.post(t, "/api/threads/q1/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"format": "docx"}}`)
		require.Equal(t, 400, code, "content that does not match the requested schema: %v", out)
		code, out = e.post(t, "/api/threads/q1/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"format": "pdf"}}`)
		require.Equal(t, 202, code, out)
		require.Equal(t, false, out["input_answerable"], "the answer was delivered: %v", out)

		d = e.waitStatus(t, "q1", id, "completed")
		require.Equal(t, map[string]any{"action": "accept", "answer": map[string]any{"format": "pdf"}}, d["result"], "the server used the answer")

		code, out = e.post(t, "/api/threads/q1/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"format": "csv"}}`)
		require.Equal(t, 409, code, "a completed task takes no answer: %v", out)
		require.Equal(t, "completed", out["status"])
		_, job := e.demoJob(t, "q1", "plain", id)
		require.EqualValues(t, 1, job["answer_calls"], "one answer reached the server")
	})

	t.Run("decline over stdio", func(t *testing.T) {
		id := e.submit(t, "q2", "local_submit_job", `{"duration_seconds": 0.5, "outcome": "ask"}`)
		e.waitQuestion(t, "q2", id)
		code, out := e.post(t, "/api/threads/q2/mcp-tasks/"+id+"/input", `{"action": "decline"}`)
		require.Equal(t, 202, code, out)
		d := e.waitStatus(t, "q2", id, "completed")
		require.Equal(t, map[string]any{"action": "decline"}, d["result"])
	})

	t.Run("cancel action", func(t *testing.T) {
		id := e.submit(t, "q3", "demo_submit_job", `{"duration_seconds": 0.5, "outcome": "input_required"}`)
		d := e.waitQuestion(t, "q3", id)
		require.Equal(t, "Which format?", d["input_required"].(map[string]any)["question"])
		code, out := e.post(t, "/api/threads/q3/mcp-tasks/"+id+"/input", `{"action": "cancel"}`)
		require.Equal(t, 202, code, out)
		e.waitStatus(t, "q3", id, "cancelled")
	})

	t.Run("no input_tool", func(t *testing.T) {
		id := e.submit(t, "q4", "plain_submit_job", `{"duration_seconds": 0.5, "outcome": "ask"}`)
		d := e.waitStatus(t, "q4", id, "input_required")
		require.Equal(t, false, d["input_answerable"], d)
		code, out := e.post(t, "/api/threads/q4/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"format": "pdf"}}`)
		require.Equal(t, 409, code, out)
		require.Equal(t, "input_required", out["status"])
		_, job := e.demoJob(t, "q4", "plain", id)
		require.EqualValues(t, 0, job["answer_calls"], "nothing reached the server")
	})

	t.Run("question gone upstream", func(t *testing.T) {
		// The job's question is answered behind mcpflow's back (answer_job
		// called directly through the plain server); mcpflow's row still
		// shows it until the next poll, a minute away.
		id := e.submit(t, "q5", "demo_submit_job", `{"duration_seconds": 0.5, "outcome": "ask", "answer_duration_seconds": 300}`)
		e.waitQuestion(t, "q5", id)
		remote, _ := e.demoJob(t, "q5", "plain", id)
		code, out := e.post(t, "/api/threads/q5/tools/plain_answer_job/call", fmt.Sprintf(`{"arguments": {"task_id": %q, "action": "decline"}}`, remote))
		require.Equal(t, 200, code, out)
		require.Equal(t, map[string]any{"task_id": remote, "status": "running"}, out["structured_content"])

		code, out = e.post(t, "/api/threads/q5/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"format": "pdf"}}`)
		require.Equal(t, 409, code, out)
		require.Equal(t, false, out["input_answerable"], "the question is gone: %v", out)
		code, out = e.post(t, "/api/threads/q5/mcp-tasks/"+id+"/input", `{"action": "decline"}`)
		require.Equal(t, 409, code, out)
		_, job := e.demoJob(t, "q5", "plain", id)
		require.EqualValues(t, 2, job["answer_calls"], "the direct answer and mcpflow's refused one; the next never left mcpflow")
	})
}

// demoJob reads the demo server's job_stats through the API (the server's
// ordinary job_stats tool) and returns the job behind a local task, found
// by its id in the task's workflow history (the API never shows it).
func (e *taskEnv) demoJob(t *testing.T, thread, server, localID string) (string, map[string]any) {
	t.Helper()
	code, out := e.post(t, "/api/threads/"+thread+"/tools/"+server+"_job_stats/call", `{}`)
	require.Equal(t, 200, code, out)
	jobs := out["structured_content"].(map[string]any)["jobs"].(map[string]any)
	h := historyBytes(t, localID)
	for id, job := range jobs {
		if bytes.Contains(h, []byte(`"`+id+`"`)) {
			return id, job.(map[string]any)
		}
	}
	t.Fatalf("no demo job of task %s among %v", localID, jobs)
	return "", nil
}
