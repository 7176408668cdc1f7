package session

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/jsontest"
)

// encodeCallParams says what json.Marshal says of the same params: the
// same JSON value, and the same bytes when the arguments are compact and
// hold nothing json.Marshal escapes; an error where it fails.
func TestEncodeCallParams(t *testing.T) {
	meta := mcp.NewMetaFromMap(map[string]any{"progressToken": "mcpflow-progress-1", "x": 1})
	for _, p := range []mcp.CallToolParams{
		{Name: "echo", Arguments: json.RawMessage(`{"message":"hello"}`)},
		{Name: "echo", Arguments: json.RawMessage(`{}`), Meta: meta},
		{Name: "srv_tool.v2/x-y", Arguments: json.RawMessage(`{"n":12345678901234567890,"a":[1,{"b":null}]}`)},
		{Name: "a<b>&\"c\"\\\n\x01é", Arguments: json.RawMessage(`{"m":"<tag> & \u00e9"}`)},
		{Name: "echo", Arguments: json.RawMessage(" {\n \"m\" : 1 }\n")},
		{Name: "echo", Arguments: json.RawMessage(`null`)},
		{Name: "echo", Arguments: map[string]any{"m": "x"}},
		{Name: "echo", Arguments: json.RawMessage(`{"m":1}`), Task: &mcp.TaskParams{}},
		{Name: "echo", Arguments: json.RawMessage(`{"m":1}`), MultiRoundTripParams: mcp.MultiRoundTripParams{RequestState: "s"}},
		{Name: "echo", Arguments: json.RawMessage(`{"m":1}`), RawArguments: json.RawMessage(`{"m":2}`)},
	} {
		want, wantErr := json.Marshal(p)
		got, err := encodeCallParams(p)
		jsontest.SameAsMarshal(t, want, wantErr, got, err)
	}
	got, err := encodeCallParams(mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"message":"hello"}`), Meta: meta})
	require.NoError(t, err)
	require.Equal(t, `{"name":"echo","arguments":{"message":"hello"},"_meta":{"progressToken":"mcpflow-progress-1","x":1}}`, string(got))

	// Invalid arguments are refused as json.Marshal refuses them, not sent.
	_, err = encodeCallParams(mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"m":`)})
	require.Error(t, err)
}

func FuzzEncodeCallParams(f *testing.F) {
	f.Add("echo", []byte(`{"message":"hello"}`), false)
	f.Add("a<b", []byte(`{"m":"<&>"}`), true)
	f.Add("x", []byte(" [1, 2]\n"), false)
	f.Fuzz(func(t *testing.T, name string, args []byte, withMeta bool) {
		p := mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)}
		if withMeta {
			p.Meta = &mcp.Meta{ProgressToken: "t"}
		}
		want, wantErr := json.Marshal(p)
		got, err := encodeCallParams(p)
		jsontest.SameAsMarshal(t, want, wantErr, got, err)
	})
}

// go test -bench EncodeCallParams ./mcpclient/session: the direct
// encoding against json.Marshal of the same params.
func BenchmarkEncodeCallParams(b *testing.B) {
	p := mcp.CallToolParams{Name: "demo_echo", Arguments: json.RawMessage(`{"message":"hello"}`)}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeCallParams(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
