package streamhttp

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
)

// encodeRequest encodes r in one pass, json.RawMessage params as they are
// once checked valid (json.Marshal's error otherwise: bytes spliced
// unchecked could end the params early and add members of their own).
func encodeRequest(r transport.JSONRPCRequest) ([]byte, error) {
	var params []byte
	switch p := r.Params.(type) {
	case nil:
	case json.RawMessage:
		params = p
		if params == nil {
			params = []byte("null")
		} else if !json.Valid(params) {
			return json.Marshal(r)
		}
	default:
		var err error
		if params, err = json.Marshal(p); err != nil {
			return nil, err
		}
	}
	b := make([]byte, 0, 64+len(r.Method)+len(params))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b, err := jsonscan.AppendID(b, r.ID.Value())
	if err != nil {
		return nil, err
	}
	b = append(b, `,"method":`...)
	b = jsonscan.AppendString(b, r.Method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}'), nil
}
