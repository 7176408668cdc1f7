package streamhttp

import (
	"bytes"
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
// names fall back to encoding/json. Names match exactly (not "ID").
func decodeMessage(b []byte) (message, error) {
	var m message
	if !json.Valid(b) {
		var v any
		return m, json.Unmarshal(b, &v) // the syntax error, as encoding/json words it
	}
	env, ok := scanEnvelope(b)
	if !ok {
		return decodeSlow(b)
	}
	m.hasID = len(env.id) > 0 && string(env.id) != "null"
	if len(env.method) > 0 && string(env.method) != "null" {
		if env.method[0] == '"' && bytes.IndexByte(env.method, '\\') < 0 {
			m.method = string(env.method[1 : len(env.method)-1])
		} else if err := json.Unmarshal(env.method, &m.method); err != nil {
			return m, err
		}
	}
	if env.result != nil {
		m.result = append(json.RawMessage(nil), env.result...)
	}
	if len(env.err) > 0 && string(env.err) != "null" {
		m.err = new(mcp.JSONRPCErrorDetails)
		if err := json.Unmarshal(env.err, m.err); err != nil {
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

// envelope holds sub-slices of a message's top-level members.
type envelope struct{ id, method, result, err []byte }

// scanEnvelope finds the members of b, valid JSON; false for a non-object
// or a member name with an escape or a non-ASCII byte (jsonscan.Members).
func scanEnvelope(b []byte) (env envelope, ok bool) {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return env, false
	}
	ok = jsonscan.Members(b, i, func(key []byte, v, end int) bool {
		switch string(key) {
		case "id":
			env.id = b[v:end]
		case "method":
			env.method = b[v:end]
		case "result":
			env.result = b[v:end]
		case "error":
			env.err = b[v:end]
		}
		return true
	})
	return env, ok
}
