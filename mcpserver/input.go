package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
)

// elicitationPrefix starts the id of an elicitation/create mcpflow sends
// for a task's question: "mcpflow-input:<task id>:<question version>". The
// client's response carries it back to any replica, which answers the task
// from it alone.
const elicitationPrefix = "mcpflow-input:"

// clientElicits reports whether the session's client declared the
// elicitation capability at initialize.
func clientElicits(sess *mcpflow.MCPSession) bool {
	var caps struct {
		Elicitation json.RawMessage `json:"elicitation"`
	}
	return sess != nil && json.Unmarshal(sess.ClientCapabilities, &caps) == nil &&
		len(caps.Elicitation) > 0 && !bytes.Equal(caps.Elicitation, []byte("null"))
}

// elicitationID names a task's current question: it changes with every
// write of the question, so each question is asked once per stream.
func elicitationID(t *mcpflow.Task) string {
	return elicitationPrefix + t.ID + ":" + strconv.FormatInt(t.UpdatedAt.UnixNano(), 36)
}

// elicitationRequest is the elicitation/create of a task's question,
// related to the task (protocol 2025-11-25, tasks utility).
func elicitationRequest(id string, t *mcpflow.Task) any {
	params := map[string]any{
		"message": inputQuestion(t.InputRequired),
		"_meta":   map[string]any{metaRelatedTask: map[string]string{"taskId": t.ID}},
	}
	if schema, ok := t.InputRequired["requested_schema"].(map[string]any); ok {
		params["requestedSchema"] = schema
	} else {
		params["requestedSchema"] = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	rid, _ := json.Marshal(id)
	return struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  any             `json:"params"`
	}{mcp.JSONRPC_VERSION, rid, string(mcp.MethodElicitationCreate), params}
}

// elicitationTask returns the task id an elicitation response answers, ""
// for any other response.
func elicitationTask(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) != nil || !strings.HasPrefix(s, elicitationPrefix) {
		return ""
	}
	task, _, ok := strings.Cut(strings.TrimPrefix(s, elicitationPrefix), ":")
	if !ok || !mcpflow.ValidTaskID(task) {
		return ""
	}
	return task
}

// answerElicitation takes a client's response to an elicitation/create of
// a task's question and delivers it as the task's answer (the REST input
// route's rules: the session's own task, still answerable, content
// matching the requested schema). The transport answers 202 whatever
// happens; what went wrong is logged.
func (s *Server) answerElicitation(ctx context.Context, sess *mcpflow.MCPSession, taskID string, msg *message, requestID string) {
	log := s.log.With("request_id", requestID, "task_id", taskID)
	if len(msg.Error) > 0 {
		log.Info("MCP client answered a task's question with an error; the task keeps waiting")
		return
	}
	var res struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	dec := json.NewDecoder(bytes.NewReader(msg.Result))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		log.Info("MCP client's answer to a task's question is not an elicitation result")
		return
	}
	if s.opts.Tasks == nil || s.opts.AnswerInput == nil {
		return
	}
	t, err := s.opts.Tasks.GetTask(ctx, taskID)
	if err != nil || t.UserID != sess.UserID || t.ThreadID != sess.ThreadID {
		log.Info("MCP client answered a question of a task it cannot see")
		return
	}
	if t.Status != mcpflow.StatusInputRequired || !t.InputAnswerable {
		log.Info("MCP client answered a question that is no longer open")
		return
	}
	ans := mcpflow.InputAnswer{Action: res.Action, Content: res.Content}
	if err := ans.Validate(t.InputRequired); err != nil {
		log.Info("MCP client's answer to a task's question was refused", "reason", mcpflow.ErrorMessage(err))
		return
	}
	if err := s.opts.AnswerInput(ctx, t, ans); err != nil {
		log.Warn("MCP client's answer to a task's question was not delivered", "reason", mcpflow.ErrorMessage(err))
	}
}
