package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// JSON-RPC error codes beyond mcp-go's (the MCP spec and its SDKs use
// these).
const (
	// codeSessionNotFound answers a request whose Mcp-Session-Id is unknown
	// (with HTTP 404, as the transport says).
	codeSessionNotFound = -32001
	// codeToolFailed answers a task-augmented call whose submit did not
	// create a task: the tool's error text is the message.
	codeToolFailed = -32000
	// codeTooMany answers a request over one of the user's limits (tool
	// calls in flight, waits, GET streams), with HTTP 429 and Retry-After.
	codeTooMany = -32002
	// retryAfterCap is the Retry-After (seconds) of a refusal by a per-user
	// cap on running durable tasks or pinned sessions: they end on their
	// own time, so a quick retry rarely helps.
	retryAfterCap = "5"
	// codeRequestCancelled answers a request that notifications/cancelled
	// ended (the transport needs an answer; clients ignore it).
	codeRequestCancelled = -32800
	// codeAnswerPending refuses an answer to a task's question while
	// another answer to it is being delivered: a conflict that passes.
	// data.retryAfterMs says when to send it again: it is delivered if
	// that delivery failed, and ignored (tasks/update acknowledges) once
	// the question closed.
	codeAnswerPending = -32003
)

// message is one incoming JSON-RPC message: a request (id and method), a
// notification (method only) or a response (id and result or error). It
// is decoded once (decodeMessage), params included: the handlers read the
// fields of params, never the body again.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  params          `json:"params"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
	// paramsErr is the -32602 of params that are not of the method's
	// shape, which its handler answers where it reads them.
	paramsErr *rpcError
}

// params are the params of every method mcpflow serves, in one struct:
// each handler reads its own fields. Arguments stay raw (callArguments).
type params struct {
	// tools/call
	Name      *string                    `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Task      *mcp.TaskParams            `json:"task"`
	Meta      map[string]json.RawMessage `json:"_meta"` // also the 2026-07-28 envelope
	// tools/call (2026-07-28 retry) and tasks/update
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   string          `json:"requestState"`
	// tasks/*
	TaskID *string `json:"taskId"`
	// tools/list, tasks/list, prompts/list, resources/list,
	// resources/templates/list
	Cursor *string `json:"cursor"`
	// resources/read (prompts/get reads name and arguments)
	URI *string `json:"uri"`
	// logging/setLevel
	Level string `json:"level"`
	// completion/complete
	Ref      json.RawMessage `json:"ref"`
	Argument json.RawMessage `json:"argument"`
	Context  json.RawMessage `json:"context"`
	// subscriptions/listen
	Notifications *json.RawMessage `json:"notifications"`
	// initialize
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      json.RawMessage `json:"clientInfo"`
	// notifications/cancelled
	RequestID json.RawMessage `json:"requestId"`
}

func (m *message) isRequest() bool      { return hasID(m.ID) && m.Method != "" }
func (m *message) isNotification() bool { return !hasID(m.ID) && m.Method != "" }

func hasID(id json.RawMessage) bool {
	return len(id) > 0 && !bytes.Equal(bytes.TrimSpace(id), []byte("null"))
}

// scalarID reports whether a present id is a string or a number, the only
// ids JSON-RPC 2.0 and MCP allow (the body is valid JSON: its first byte
// says which kind of value it is).
func scalarID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9')
}

// decodeMessage decodes a request body in one pass; false when it is not
// a JSON-RPC message (not JSON, or jsonrpc or method not strings). A value
// of the wrong type in params leaves the field unset; only the fields the
// method reads make its paramsErr, named as a decoding of those alone
// names them (the slow path of malformed params).
func decodeMessage(body []byte) (*message, bool) {
	msg := &message{}
	if json.Valid(body) && fastMessage(body, msg) {
		return msg, true
	}
	*msg = message{}
	err := json.Unmarshal(body, msg)
	if err == nil {
		return msg, true
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return nil, false
	}
	var raw struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &raw) != nil {
		return nil, false
	}
	msg.paramsErr = paramsProblem(raw.Method, raw.Params)
	return msg, true
}

// paramsProblem is the -32602 of a method's params that are not of its
// shape: what decoding them into the fields the method reads says.
func paramsProblem(method string, raw json.RawMessage) *rpcError {
	var v any
	switch method {
	case string(mcp.MethodToolsCall):
		v = &struct {
			Name         string          `json:"name"`
			Arguments    map[string]any  `json:"arguments"`
			Task         *mcp.TaskParams `json:"task"`
			Meta         map[string]any  `json:"_meta"`
			RequestState string          `json:"requestState"`
		}{}
	case string(mcp.MethodToolsList), string(mcp.MethodTasksList), string(mcp.MethodPromptsList),
		string(mcp.MethodResourcesList), string(mcp.MethodResourcesTemplatesList):
		v = &struct {
			Cursor *string `json:"cursor"`
		}{}
	case string(mcp.MethodPromptsGet):
		v = &struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
		}{}
	case string(mcp.MethodResourcesRead), string(mcp.MethodResourcesSubscribe), string(mcp.MethodResourcesUnsubscribe):
		v = &struct {
			URI string `json:"uri"`
		}{}
	case string(mcp.MethodCompletionComplete):
		v = &struct {
			Ref      map[string]any `json:"ref"`
			Argument map[string]any `json:"argument"`
			Context  map[string]any `json:"context"`
		}{}
	case string(mcp.MethodSetLogLevel):
		v = &struct {
			Level string `json:"level"`
		}{}
	case string(mcp.MethodTasksGet), string(mcp.MethodTasksCancel), string(mcp.MethodTasksResult):
		v = &struct {
			TaskID string `json:"taskId"`
		}{}
	case "tasks/update":
		v = &struct {
			TaskID         string                     `json:"taskId"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
		}{}
	case "subscriptions/listen":
		v = &struct {
			Notifications *json.RawMessage `json:"notifications"`
		}{}
	case string(mcp.MethodInitialize):
		v = &struct {
			ProtocolVersion string `json:"protocolVersion"`
		}{}
	default:
		return nil
	}
	return decodeParams(method, raw, v)
}

// decodeParams decodes params into v; absent params decode as {}.
func decodeParams(method string, raw json.RawMessage, v any) *rpcError {
	p := bytes.TrimSpace(raw)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return nil
	}
	if p[0] != '{' {
		return invalidParams("params must be an object")
	}
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return invalidParams("invalid params for %s: %s", method, jsonErrorText(err))
	}
	return nil
}

// callArguments are a tools/call's arguments as the client wrote them,
// for the runtime to send on without decoding them (nil when absent): the
// message was decoded whole, so they are one JSON value; only that it is
// an object is checked here.
func (m *message) callArguments() (json.RawMessage, *rpcError) {
	raw := bytes.TrimSpace(m.Params.Arguments)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, invalidParams("invalid params for %s: arguments must be an object", m.Method)
	}
	return raw, nil
}

// rawString is the string a JSON value holds; false when it holds none.
func rawString(raw json.RawMessage) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true // no escapes: the common case, without a decoder
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

func invalidParams(format string, args ...any) *rpcError {
	return &rpcError{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf(format, args...)}
}

func methodNotFound(format string, args ...any) *rpcError {
	return &rpcError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf(format, args...)}
}

func internalError(format string, args ...any) *rpcError {
	return &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf(format, args...)}
}

// response is an outgoing JSON-RPC response.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func newResponse(id json.RawMessage, result any, err *rpcError) response {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if err != nil {
		return response{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: err}
	}
	if result == nil {
		result = struct{}{}
	}
	return response{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Result: result}
}

// notification is an outgoing JSON-RPC notification.
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// writeJSON answers one JSON-RPC message with an HTTP status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var b []byte
	var err error
	if r, ok := v.(response); ok {
		b, err = encodeResponse(r)
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		b, _ = json.Marshal(newResponse(nil, nil, internalError("could not encode the answer")))
		status = http.StatusInternalServerError
	}
	// With its length, sent at once: the access line and the metrics are
	// written after the handler returns, and the client has the answer
	// meanwhile (net/http would only send it after them).
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// encodeResponse is json.Marshal(r), written directly for the common
// answer, a tool's result (2025-11-25's or 2026-07-28's) whose content
// blocks and structuredContent are raw JSON, each checked to be valid
// (reflection and compaction cost about 5 µs a call in serve's profile).
// Anything else goes to json.Marshal. The blocks keep their bytes as the
// upstream wrote them.
func encodeResponse(r response) ([]byte, error) {
	var res callToolResult
	var tail []byte // after isError: 2026-07-28's resultType and _meta
	switch v := r.Result.(type) {
	case callToolResult:
		if res = v; res.Meta != nil {
			return json.Marshal(r)
		}
	case modernCallResult:
		meta, ok := v.Meta.(json.RawMessage)
		if !ok || !json.Valid(meta) {
			var err error
			if meta, err = json.Marshal(v.Meta); err != nil {
				return json.Marshal(r)
			}
		}
		if v.ResultType != resultComplete {
			return json.Marshal(r)
		}
		res = v.callToolResult
		tail = append([]byte(`,"resultType":"`+resultComplete+`","_meta":`), meta...)
	default:
		return json.Marshal(r)
	}
	sc, ok := res.StructuredContent.(json.RawMessage)
	if r.JSONRPC != mcp.JSONRPC_VERSION || r.Error != nil || res.Content == nil || !json.Valid(r.ID) ||
		res.StructuredContent != nil && (!ok || !json.Valid(sc)) {
		return json.Marshal(r)
	}
	n := len(`{"jsonrpc":"2.0","id":,"result":{"content":[],"structuredContent":,"isError":false}}`) + len(r.ID) + len(sc) + len(tail)
	for _, c := range res.Content {
		if !json.Valid(c) {
			return json.Marshal(r)
		}
		n += len(c) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, r.ID...)
	b = append(b, `,"result":{"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, c...)
	}
	b = append(b, ']')
	if sc != nil {
		b = append(b, `,"structuredContent":`...)
		b = append(b, sc...)
	}
	b = append(b, `,"isError":`...)
	b = strconv.AppendBool(b, res.IsError)
	b = append(b, tail...)
	return append(b, '}', '}'), nil
}

// writeHTTPError answers a request the transport refuses with an HTTP
// status and a JSON-RPC error body (id null, or the request's id).
func writeHTTPError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	writeJSON(w, status, newResponse(id, nil, &rpcError{Code: code, Message: msg}))
}

// jsonErrorText describes a decoding error without echoing input values.
func jsonErrorText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return te.Field + " must be " + jsonKind(te.Type)
		}
		return "wrong type"
	}
	return "malformed JSON"
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.Interface:
		return "a JSON value"
	}
	return "a number"
}
