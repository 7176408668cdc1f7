package streamhttp

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"
)

// encodeRequest encodes r in one pass, json.RawMessage params as they are.
func encodeRequest(r transport.JSONRPCRequest) ([]byte, error) {
	var params []byte
	switch p := r.Params.(type) {
	case nil:
	case json.RawMessage:
		params = p
		if params == nil {
			params = []byte("null")
		}
	default:
		var err error
		if params, err = json.Marshal(p); err != nil {
			return nil, err
		}
	}
	b := make([]byte, 0, 64+len(r.Method)+len(params))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	switch id := r.ID.Value().(type) {
	case nil:
		b = append(b, "null"...)
	case int64:
		b = strconv.AppendInt(b, id, 10)
	case int:
		b = strconv.AppendInt(b, int64(id), 10)
	case string:
		b = appendString(b, id)
	default:
		enc, err := json.Marshal(id)
		if err != nil {
			return nil, err
		}
		b = append(b, enc...)
	}
	b = append(b, `,"method":`...)
	b = appendString(b, r.Method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}'), nil
}

// appendString appends s as a JSON string, quoted as it is when it is
// printable ASCII needing no escape.
func appendString(b []byte, s string) []byte {
	plain := !strings.ContainsAny(s, `"\<>&`)
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	enc, _ := json.Marshal(s) // a string always encodes
	return append(b, enc...)
}
