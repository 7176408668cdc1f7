package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// A task's question reaches an MCP client that can elicit as an
// elicitation/create on its tasks/result stream, related to the task; the
// client's answer, POSTed back, is delivered to the task; the stream then
// ends with the task's result.
func TestTaskQuestionIsElicited(t *testing.T) {
	t.Parallel()
	question := map[string]any{"message": "Which interpretation?", "requested_schema": map[string]any{"type": "object",
		"properties": map[string]any{"interpretation": map[string]any{"type": "string"}}, "required": []any{"interpretation"}}}
	b := newQuestionBundleAsking(t, question)

	elicit := b.elicitation(t)
	params := elicit["params"].(map[string]any)
	require.Equal(t, "Which interpretation?", params["message"])
	require.Equal(t, question["requested_schema"], params["requestedSchema"])
	require.Equal(t, map[string]any{"taskId": b.task.ID}, params["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"])
	id, _ := json.Marshal(elicit["id"])

	// A refused answer (content that does not match) is not delivered.
	bad := b.post(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"action":"accept","content":{"other":1}}}`, false)
	bad.Body.Close()
	require.Equal(t, http.StatusBadRequest, bad.StatusCode)
	good := b.post(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"action":"accept","content":{"interpretation":"historical"}}}`, false)
	good.Body.Close()
	require.Equal(t, http.StatusAccepted, good.StatusCode)
	<-b.answered
	b.mu.Lock()
	require.Equal(t, []mcpflow.InputAnswer{{Action: "accept", Content: map[string]any{"interpretation": "historical"}, QuestionID: 1}}, b.answers)
	b.mu.Unlock()

	// The task completes: the stream ends with its result.
	task := b.task
	task.Status, task.InputRequired, task.InputAnswerable, task.Result = mcpflow.StatusCompleted, nil, false, map[string]any{"report": "ok"}
	require.NoError(t, b.db.UpdateTask(context.Background(), task))
	var final map[string]any
	for ev := range b.events {
		if ev["id"] != nil && ev["method"] == nil {
			final = ev
			break
		}
	}
	require.NotNil(t, final, "the stream ended without the result")
	require.Equal(t, map[string]any{"report": "ok"}, final["result"].(map[string]any)["structuredContent"])
}
