package mcpflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Arguments are a tool call's arguments as they travel inside mcpflow (a
// durable submit's workflow and activity inputs): a JSON object whose
// numbers decode as json.Number, so an integer beyond 2^53 or a long
// decimal reaches the MCP server exactly as the agent wrote it (encoding
// writes a json.Number back verbatim). It is a plain map: code that takes
// map[string]any accepts it as it is.
type Arguments map[string]any

// UnmarshalJSON decodes a JSON object (or null) with numbers as
// json.Number; see DecodeArguments.
func (a *Arguments) UnmarshalJSON(b []byte) error {
	m, err := DecodeArguments(b)
	if err != nil {
		return err
	}
	*a = m
	return nil
}

// ErrArgumentsNotObject is DecodeArguments' error for valid JSON that is
// not an object.
var ErrArgumentsNotObject = errors.New("arguments must be a JSON object")

// DecodeArguments decodes tool-call arguments: a JSON object, with every
// number kept as a json.Number (nested ones too), so that nothing is
// rounded on its way to the MCP server. Empty input and null give nil.
// Anything else than one object is an error that never quotes the input:
// ErrArgumentsNotObject for another JSON value.
func DecodeArguments(raw []byte) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] != '{' {
		if !json.Valid(raw) {
			return nil, errors.New("arguments are not valid JSON")
		}
		return nil, ErrArgumentsNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, errors.New("arguments are not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("arguments must be one JSON object")
	}
	return m, nil
}
