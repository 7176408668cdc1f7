package mcpflow_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

func TestDecodeArgumentsKeepsNumbers(t *testing.T) {
	t.Parallel()
	m, err := mcpflow.DecodeArguments([]byte(` {"big": 9007199254740993, "neg": -9007199254740993, "dec": 0.10000000000000000555,
		"exp": 1E+2, "huge": 1e400, "nested": {"list": [1, "x", true, null, {"n": 18446744073709551617}]}} `))
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"big": json.Number("9007199254740993"), "neg": json.Number("-9007199254740993"),
		"dec": json.Number("0.10000000000000000555"), "exp": json.Number("1E+2"), "huge": json.Number("1e400"),
		"nested": map[string]any{"list": []any{json.Number("1"), "x", true, nil, map[string]any{"n": json.Number("18446744073709551617")}}},
	}, m)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	require.Equal(t, `{"big":9007199254740993,"dec":0.10000000000000000555,"exp":1E+2,"huge":1e400,"neg":-9007199254740993,`+
		`"nested":{"list":[1,"x",true,null,{"n":18446744073709551617}]}}`, string(out), "encoding writes them back verbatim")

	for _, empty := range []string{"", "  ", "null", " null "} {
		m, err := mcpflow.DecodeArguments([]byte(empty))
		require.NoError(t, err, "%q", empty)
		require.Nil(t, m, "%q", empty)
	}
	m, err = mcpflow.DecodeArguments([]byte(`{}`))
	require.NoError(t, err)
	require.Equal(t, map[string]any{}, m)

	for _, bad := range []string{`[1]`, `9007199254740993`, `"secret-xyz"`, `true`} {
		_, err := mcpflow.DecodeArguments([]byte(bad))
		require.ErrorIs(t, err, mcpflow.ErrArgumentsNotObject, bad)
	}
	for _, bad := range []string{`{`, `{"a": 1} {"b": 2}`, `{"a": "secret-xyz"`, `nope`, `{"a": 1}x`} {
		_, err := mcpflow.DecodeArguments([]byte(bad))
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), "secret-xyz", "input is never quoted")
	}
}

// Arguments inside a JSON document (a workflow or activity input) decode
// with numbers as json.Number; an object written with float64 numbers (the
// earlier encoding) decodes to the same values.
func TestArgumentsUnmarshalJSON(t *testing.T) {
	t.Parallel()
	var req mcpflow.SubmitRequest
	require.NoError(t, json.Unmarshal([]byte(`{"server_name": "s", "arguments": {"big": 9007199254740993, "f": 0.5}}`), &req))
	require.Equal(t, mcpflow.Arguments{"big": json.Number("9007199254740993"), "f": json.Number("0.5")}, req.Arguments)
	b, err := json.Marshal(req)
	require.NoError(t, err)
	require.Contains(t, string(b), `"arguments":{"big":9007199254740993,"f":0.5}`)

	req = mcpflow.SubmitRequest{Arguments: mcpflow.Arguments{"x": 1}}
	require.NoError(t, json.Unmarshal([]byte(`{"arguments": null}`), &req))
	require.Nil(t, req.Arguments)
	require.Error(t, json.Unmarshal([]byte(`{"arguments": [1]}`), &req))

	// Code that takes a map[string]any takes Arguments as it is.
	var plain map[string]any = mcpflow.Arguments{"a": json.Number("1")}
	require.Equal(t, json.Number("1"), plain["a"])
}
