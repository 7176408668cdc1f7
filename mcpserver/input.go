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

// clientElicits reports whether a client declared the elicitation
// capability (its capabilities: the session's, or a 2026-07-28 request's
// own).
func clientElicits(caps json.RawMessage) bool {
	var c struct {
		Elicitation json.RawMessage `json:"elicitation"`
	}
	return json.Unmarshal(caps, &c) == nil && len(c.Elicitation) > 0 && !bytes.Equal(c.Elicitation, []byte("null"))
}

// elicitationID names a task's current question by the task's question
// number (mcpflow.Task.QuestionSeq), which changes only when the task asks
// a new question: each question is asked once per stream, and its answer
// names the question it answers.
func elicitationID(t *mcpflow.Task) string {
	return elicitationPrefix + t.ID + ":" + strconv.Itoa(t.QuestionSeq)
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

// elicitationTask returns the task id and question number an elicitation
// response answers, "" for any other response.
func elicitationTask(id json.RawMessage) (string, int) {
	var s string
	if json.Unmarshal(id, &s) != nil || !strings.HasPrefix(s, elicitationPrefix) {
		return "", 0
	}
	task, q, ok := strings.Cut(strings.TrimPrefix(s, elicitationPrefix), ":")
	if !ok || !mcpflow.ValidTaskID(task) {
		return "", 0
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 1 {
		return "", 0
	}
	return task, n
}

// answerElicitation takes a client's response to an elicitation/create of
// a task's question (number question) and delivers it as the task's
// answer (the REST input route's rules: the session's own task, still
// answerable, content matching the requested schema). It returns the
// refusal of an answer to an earlier question than the task's current one
// (the transport answers it with 409 naming the current question); for
// everything else the transport answers 202, and what went wrong is
// logged.
func (s *Server) answerElicitation(ctx context.Context, sess *mcpflow.MCPSession, taskID string, question int, msg *message, requestID string) error {
	log := s.log.With("request_id", requestID, "task_id", taskID)
	if len(msg.Error) > 0 {
		log.Info("MCP client answered a task's question with an error; the task keeps waiting")
		return nil
	}
	var res struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	dec := json.NewDecoder(bytes.NewReader(msg.Result))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		log.Info("MCP client's answer to a task's question is not an elicitation result")
		return nil
	}
	if s.opts.Tasks == nil || s.opts.AnswerInput == nil {
		return nil
	}
	t, err := s.opts.Tasks.GetTask(ctx, taskID)
	if err != nil || t.UserID != sess.UserID || t.ThreadID != sess.ThreadID {
		log.Info("MCP client answered a question of a task it cannot see")
		return nil
	}
	if err := mcpflow.StaleAnswer(t, question); err != nil {
		log.Info("MCP client answered an earlier question of a task; refused", "question", question, "current", t.QuestionSeq)
		return err
	}
	if !t.InputAnswerable {
		log.Info("MCP client answered a question that is no longer open")
		return nil
	}
	ans := mcpflow.InputAnswer{Action: res.Action, Content: res.Content, QuestionID: question}
	if err := ans.Validate(t.InputRequired); err != nil {
		log.Info("MCP client's answer to a task's question was refused", "reason", mcpflow.ErrorMessage(err))
		return nil
	}
	if err := s.opts.AnswerInput(ctx, t, ans); err != nil {
		if fresh, gerr := s.opts.Tasks.GetTask(ctx, taskID); gerr == nil {
			if serr := mcpflow.StaleAnswer(fresh, question); serr != nil {
				log.Info("MCP client answered an earlier question of a task; refused", "question", question, "current", fresh.QuestionSeq)
				return serr // a newer question came while it was on its way
			}
		}
		log.Warn("MCP client's answer to a task's question was not delivered", "reason", mcpflow.ErrorMessage(err))
	}
	return nil
}
