package main

import (
	"time"

	"testing"

	"github.com/stretchr/testify/require"
)

// waitQuestion waits until the task is input_required with a question the
// user can answer, and returns the detail.
func (e *taskEnv) waitQuestion(t *testing.T, thread, id string) map[string]any {
	t.Helper()
	d := e.waitStatus(t, thread, id, "input_required")
	if d["input_answerable"] != true {
		d = e.waitDetailValue(t, thread, id, "input_answerable", true)
	}
	require.Equal(t, "input_required", d["status"], d)
	return d
}

// waitDetailValue waits until the task detail's field equals want (any
// JSON value) and returns the detail.
func (e *taskEnv) waitDetailValue(t *testing.T, thread, id, field string, want any) map[string]any {
	t.Helper()
	var last map[string]any
	require.Eventually(t, func() bool {
		_, last = get(t, e.m.URL()+"/api/threads/"+thread+"/mcp-tasks/"+id, testUserToken)
		return last[field] == want
	}, 90*time.Second, 100*time.Millisecond, "task's %s never became %v: %v", field, want, last)
	return last
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
