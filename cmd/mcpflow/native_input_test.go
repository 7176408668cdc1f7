package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"

	"testing"

	"github.com/stretchr/testify/require"
)

// waitQuestion waits until the task is input_required with a question the
// user can answer, and returns the detail.
func (e *taskEnv) waitQuestion(t *testing.T, thread, id string) map[string]any {
	t.Helper()
	d := e.waitStatus(t, thread, id, "input_required")
	if d["input_answerable"] != true {
		d = e.waitDetail(t, thread, id, "input_answerable", true)
	}
	require.Equal(t, "input_required", d["status"], d)
	return d
}

// TestNativeTaskQuestionsAnswered runs server-everything's research with
// ambiguous: true over stdio and streamable HTTP: the server asks which
// interpretation is meant (elicitation/create related to the task, sent on
// the tasks/result stream mcpflow keeps open), the task shows
// input_required with the question, the answer goes through
// POST …/input, reaches the server, and the report uses it. A declined
// question makes the server use its default; answers that do not fit the
// requested schema are refused before they reach the workflow.
func TestNativeTaskQuestionsAnswered(t *testing.T) {
	e, _ := startNativeEnv(t)
	for _, server := range []string{"ever", "everhttp"} {
		t.Run("accept over "+server, func(t *testing.T) {
			thread := "q-" + server
			id := e.submitNative(t, thread, server+"_"+researchTool, researchTool, `{"topic": "python", "ambiguous": true}`)
			d := e.waitQuestion(t, thread, id)
			q := d["input_required"].(map[string]any)
			require.Contains(t, q["message"], `The research query "python" could have multiple interpretations`)
			schema := q["requested_schema"].(map[string]any)
			require.Equal(t, []any{"interpretation"}, schema["required"])

			code, out := e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"interpretation": 7}}`)
			require.Equal(t, 400, code, "content that does not match the requested schema: %v", out)
			code, out = e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"interpretation": "comedy"}}`)
			require.Equal(t, 202, code, out)

			d = e.waitStatus(t, thread, id, "completed")
			report := reportText(t, d["result"])
			require.Contains(t, report, "# Research Report: python (comedy)", "the server used the answer")
			require.Contains(t, report, `After receiving clarification ("comedy")`)

			code, out = e.post(t, "/api/threads/"+thread+"/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"interpretation": "snake"}}`)
			require.Equal(t, 409, code, "a completed task takes no answer: %v", out)
		})
	}

	t.Run("decline", func(t *testing.T) {
		id := e.submitNative(t, "q-decline", "everhttp_"+researchTool, researchTool, `{"topic": "tides", "ambiguous": true}`)
		e.waitQuestion(t, "q-decline", id)
		code, out := e.post(t, "/api/threads/q-decline/mcp-tasks/"+id+"/input", `{"action": "decline"}`)
		require.Equal(t, 202, code, out)
		d := e.waitStatus(t, "q-decline", id, "completed")
		require.Contains(t, reportText(t, d["result"]), "User declined - using default interpretation")
	})
}

// TestNativeTaskQuestionThroughMCPEndpoint: an MCP host (the official
// TypeScript SDK client, declaring elicitation) creates server-everything's
// ambiguous research as an MCP task on mcpflow's endpoint and reads its
// result; the upstream question reaches it as an elicitation/create related
// to its task on the tasks/result stream, its answer goes back through
// mcpflow to the server, and the result uses it.
func TestNativeTaskQuestionThroughMCPEndpoint(t *testing.T) {
	e, _ := startNativeEnv(t)
	out := runTS[struct {
		TaskID       string `json:"taskId"`
		Elicitations []struct {
			Message         string         `json:"message"`
			RequestedSchema map[string]any `json:"requestedSchema"`
			Meta            map[string]any `json:"_meta"`
		} `json:"elicitations"`
		Result       tsAttempt[tsToolResult] `json:"result"`
		Task         tsAttempt[tsTask]       `json:"task"`
		ClientErrors []string                `json:"clientErrors"`
	}](t, "task_elicit", e.m.URL()+"/mcp/threads/q-mcp", testUserToken, tsInput{
		Tool:      "everhttp_" + researchTool,
		Arguments: map[string]any{"topic": "python", "ambiguous": true},
		Answer:    map[string]any{"action": "accept", "content": map[string]any{"interpretation": "snake"}},
	})
	require.Len(t, out.Elicitations, 1, "one question: %+v", out)
	el := out.Elicitations[0]
	require.Contains(t, el.Message, `The research query "python" could have multiple interpretations`)
	require.Equal(t, []any{"interpretation"}, el.RequestedSchema["required"])
	require.Equal(t, map[string]any{"taskId": out.TaskID}, el.Meta["io.modelcontextprotocol/related-task"], "the question is related to the host's task")
	require.Nil(t, out.Result.Error, "%+v", out.Result.Error)
	require.NotEmpty(t, out.Result.Result.Content)
	require.Contains(t, out.Result.Result.Content[0].Text, "# Research Report: python (snake)")
	require.Equal(t, "completed", out.Task.Result.Status)
	require.Empty(t, out.ClientErrors)

	_, d := get(t, e.m.URL()+"/api/threads/q-mcp/mcp-tasks/"+out.TaskID, testUserToken)
	require.Equal(t, "completed", d["status"], "the REST detail is the same task: %v", d)
}

// TestNativeQuestionDurability runs mcpflow's API and two separate worker
// processes against server-everything over streamable HTTP:
//   - the API restarts between the question and the answer: the question is
//     in the task's row and the worker still holds it, so the answer sent
//     to the new API process reaches the server and the report uses it;
//   - the workers, the one holding a question among them, are killed
//     (SIGKILL) and a new one starts: the question was
//     in its memory and on its tasks/result stream, so an answer now gets
//     409 (no delivery, never two), and the new worker tracks the task to
//     its end, which the server decides (server-everything binds its tasks
//     to the MCP session that created them: task_not_found).
func TestNativeQuestionDurability(t *testing.T) {
	entry := testenv.EverythingEntry(t)
	httpURL := testenv.StartEverythingHTTP(t, entry)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, lease_seconds: 5 }\n",
		fmt.Sprintf(`{"mcpServers": {"everhttp": {"type": "http", "url": %q}}}`, httpURL))
	api := startMain(t, ModeServe, cfg, nil)
	e := &taskEnv{m: api}
	// Two workers: polls of a task whose question one of them holds go to
	// that one (any other would report the question unanswerable).
	first, second := startWorkerProc(t, cfg), startWorkerProc(t, cfg)
	outer := t

	t.Run("API restarted before the answer", func(t *testing.T) {
		id := e.submitNative(t, "q-dur", "everhttp_"+researchTool, researchTool, `{"topic": "python", "ambiguous": true}`)
		e.waitQuestion(t, "q-dur", id)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, api.Close(ctx))
		e.m = startMain(outer, ModeServe, cfg, nil) // it serves the next subtest too
		d := e.waitQuestion(t, "q-dur", id)
		require.Contains(t, d["input_required"].(map[string]any)["message"], "multiple interpretations")
		code, out := e.post(t, "/api/threads/q-dur/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"interpretation": "programming"}}`)
		require.Equal(t, 202, code, out)
		d = e.waitStatus(t, "q-dur", id, "completed")
		require.Contains(t, reportText(t, d["result"]), "# Research Report: python (programming)")
	})

	t.Run("holder killed", func(t *testing.T) {
		id := e.submitNative(t, "q-die", "everhttp_"+researchTool, researchTool, `{"topic": "python", "ambiguous": true}`)
		e.waitQuestion(t, "q-die", id)
		first.kill9(t)
		second.kill9(t)
		startWorkerProc(outer, cfg)
		// The row may still say answerable: the workflow admits the answer
		// and its delivery, bound to the dead worker, never starts (409
		// after a minute); or the new worker's poll said otherwise (409 at
		// once).
		code, out := e.post(t, "/api/threads/q-die/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"interpretation": "snake"}}`)
		require.Equal(t, 409, code, out)
		d := e.waitStatus(t, "q-die", id, "failed")
		require.Contains(t, d["error"], "(task_not_found)")
		require.Equal(t, false, d["input_answerable"])
	})
}
