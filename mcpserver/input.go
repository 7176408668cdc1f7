package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
)

// elicitationPrefix starts the id of a task question's elicitation/create,
// "mcpflow-input:<task id>:<question version>", so any replica can take
// the response.
const elicitationPrefix = "mcpflow-input:"

// elicitationID names a task's current question by Task.QuestionSeq, so
// an answer names the question it answers.
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

// refusal answers an undelivered elicitation response: an HTTP status
// (Retry-After when set) and a JSON-RPC error with id null, all a client
// that sent a response can see (the TypeScript SDK v1 reports it to onerror).
type refusal struct {
	status     int
	retryAfter string
	err        *rpcError
}

// answerElicitation delivers a response to a task question's
// elicitation/create by the REST input route's rules. nil (202): delivered,
// or ignored (an error answer, a task the session cannot see, a closed
// question). Else a refusal: an earlier question (409), content off the
// schema (400), another answer pending (409, Retry-After), the task
// cancelling (409), the server refusing (502, the question stays open),
// no worker (503), no outcome in time (504).
func (s *Server) answerElicitation(ctx context.Context, sess *mcpflow.MCPSession, taskID string, question int, msg *message, requestID string) *refusal {
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
		return &refusal{status: http.StatusBadRequest, err: invalidParams("the response to a task's question must be an elicitation result {action, content?}")}
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
		return &refusal{status: http.StatusConflict, err: invalidParams("%s", mcpflow.ErrorMessage(err))}
	}
	if !t.InputAnswerable {
		log.Info("MCP client answered a question that is no longer open")
		return nil
	}
	ans := mcpflow.InputAnswer{Action: res.Action, Content: res.Content, QuestionID: question}
	if err := ans.Validate(t.InputRequired); err != nil {
		return &refusal{status: http.StatusBadRequest, err: invalidParams("%s", mcpflow.ErrorMessage(err))}
	}
	origin := mcpflow.CallOrigin{Surface: "mcp " + sess.ProtocolVersion, ClientInfo: sess.ClientInfo, RequestID: requestID}
	err = s.opts.AnswerInput(mcpflow.WithCallOrigin(ctx, origin), t, ans)
	if err == nil {
		return nil
	}
	if fresh, gerr := s.opts.Tasks.GetTask(ctx, taskID); gerr == nil {
		if serr := mcpflow.StaleAnswer(fresh, question); serr != nil {
			// A newer question came while it was on its way.
			log.Info("MCP client answered an earlier question of a task; refused", "question", question, "current", fresh.QuestionSeq)
			return &refusal{status: http.StatusConflict, err: invalidParams("%s", mcpflow.ErrorMessage(serr))}
		}
	}
	if errors.Is(err, mcpflow.ErrInputGone) {
		log.Info("MCP client answered a question that is no longer open")
		return nil
	}
	log.Warn("MCP client's answer to a task's question was not delivered", "code", mcpflow.ErrorCode(err), "reason", mcpflow.ErrorMessage(err))
	r := &refusal{err: s.answerFailure(err, requestID)}
	switch {
	case errors.Is(err, mcpflow.ErrAnswerPending):
		r.status, r.retryAfter = http.StatusConflict, answerRetryAfter
	case errors.Is(err, mcpflow.ErrTaskCancelling):
		r.status = http.StatusConflict
	default:
		r.status = httpStatus(mcpflow.ErrorCode(err))
	}
	return r
}

// answerRetryAfter is the Retry-After (seconds) of an answer refused while
// another answer to the same question is being delivered.
const answerRetryAfter = "1"

// answerFailure is the JSON-RPC error of an undelivered answer: another
// pending is codeAnswerPending (data.retryAfterMs), a cancelling task
// -32602, anything else -32603 with the caller-safe message.
func (s *Server) answerFailure(err error, requestID string) *rpcError {
	msg := mcpflow.ErrorMessage(err)
	switch {
	case errors.Is(err, mcpflow.ErrAnswerPending):
		return &rpcError{Code: codeAnswerPending, Message: msg, Data: map[string]any{"retryAfterMs": 1000}}
	case errors.Is(err, mcpflow.ErrTaskCancelling):
		return invalidParams("%s", msg)
	case mcpflow.ErrorCode(err) == mcpflow.EInternal:
		s.log.Error("MCP endpoint: deliver the answer failed", "request_id", requestID, "error", err)
		msg = "mcpflow could not deliver the answer (an internal error; the server's log has the details)"
	}
	return internalError("%s", msg)
}

// httpStatus is the HTTP status of a domain error code, as the REST API
// answers it (api/error.go).
func httpStatus(code string) int {
	switch code {
	case mcpflow.EInvalid:
		return http.StatusBadRequest
	case mcpflow.EConflict:
		return http.StatusConflict
	case mcpflow.EUpstream:
		return http.StatusBadGateway
	case mcpflow.EUnavailable:
		return http.StatusServiceUnavailable
	case mcpflow.ETimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}
