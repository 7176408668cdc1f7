package streamhttp

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
)

// message is what the transport reads of a JSON-RPC message.
type message struct {
	hasID  bool // id present and not null
	method string
	result json.RawMessage // a copy: it outlives the buffer read
	err    *mcp.JSONRPCErrorDetails
}

// decodeMessage validates b (json.Valid allocates nothing), then scans for
// the top-level members so the result is copied once; escaped member
// names, and names encoding/json matches in another case ("ID"), fall
// back to encoding/json.
func decodeMessage(b []byte) (message, error) {
	var m message
	if !json.Valid(b) {
		var v any
		return m, json.Unmarshal(b, &v) // the syntax error, as encoding/json words it
	}
	env, ok := jsonscan.ScanEnvelope(b)
	if !ok {
		return decodeSlow(b)
	}
	m.hasID = len(env.ID) > 0 && string(env.ID) != "null"
	var err error
	if m.method, err = jsonscan.StringValue(env.Method); err != nil {
		return m, err
	}
	if env.Result != nil {
		m.result = append(json.RawMessage(nil), env.Result...)
	}
	if len(env.Error) > 0 && string(env.Error) != "null" {
		m.err = new(mcp.JSONRPCErrorDetails)
		if err := json.Unmarshal(env.Error, m.err); err != nil {
			return m, err
		}
	}
	return m, nil
}

// decodeSlow is decodeMessage with encoding/json.
func decodeSlow(b []byte) (message, error) {
	var w struct {
		ID     json.RawMessage          `json:"id"`
		Method string                   `json:"method"`
		Result json.RawMessage          `json:"result"`
		Error  *mcp.JSONRPCErrorDetails `json:"error"`
	}
	err := json.Unmarshal(b, &w)
	return message{hasID: len(w.ID) > 0 && string(w.ID) != "null", method: w.Method, result: w.Result, err: w.Error}, err
}
