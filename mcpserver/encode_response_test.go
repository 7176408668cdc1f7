package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/jsontest"
)

// encodeResponse says what json.Marshal says of the same response: the
// same JSON value, the same bytes for compact blocks without characters
// json.Marshal escapes, and json.Marshal's own error where it fails.
func TestEncodeResponse(t *testing.T) {
	text := textContent("hello <world> & \"you\"\n")
	for _, r := range []response{
		newResponse(json.RawMessage(`1`), callToolResult{Content: []json.RawMessage{text}}, nil),
		newResponse(json.RawMessage(`"a-1"`), callToolResult{Content: []json.RawMessage{}, IsError: true}, nil),
		newResponse(json.RawMessage(`7`), callToolResult{Content: []json.RawMessage{text, json.RawMessage(` {"type" : "text", "text":"x"}`)},
			StructuredContent: json.RawMessage(`{"n":12345678901234567890}`)}, nil),
		newResponse(nil, callToolResult{Content: []json.RawMessage{text}}, nil),
		newResponse(json.RawMessage(`1`), callToolResult{Content: nil}, nil),
		newResponse(json.RawMessage(`1`), callToolResult{Content: []json.RawMessage{text}, StructuredContent: map[string]any{"a": 1}}, nil),
		newResponse(json.RawMessage(`1`), callToolResult{Content: []json.RawMessage{text}, Meta: map[string]any{"k": "v"}}, nil),
		newResponse(json.RawMessage(`1`), callToolResult{Content: []json.RawMessage{text}, StructuredContent: json.RawMessage(nil)}, nil),
		newResponse(json.RawMessage(`1`), nil, invalidParams("name is required")),
		newResponse(json.RawMessage(`4`), (&Server{}).modernResult(callToolResult{Content: []json.RawMessage{text}, Meta: map[string]any{"k": "v"}}), nil),
		newResponse(json.RawMessage(`5`), (&Server{}).modernResult(callToolResult{Content: []json.RawMessage{text}, StructuredContent: json.RawMessage(`{"a":1}`)}), nil),
		newResponse(json.RawMessage(`6`), modernCallResult{callToolResult: callToolResult{Content: []json.RawMessage{text}}, ResultType: resultComplete}, nil),
		newResponse(json.RawMessage(`6`), modernCallResult{callToolResult: callToolResult{Content: []json.RawMessage{text}}, ResultType: "other"}, nil),
		newResponse(json.RawMessage(`1`), map[string]any{"tools": []any{}}, nil),
	} {
		want, wantErr := json.Marshal(r)
		got, err := encodeResponse(r)
		require.NoError(t, wantErr)
		jsontest.SameAsMarshal(t, want, wantErr, got, err)
	}
	got, err := encodeResponse(newResponse(json.RawMessage(`3`), callToolResult{
		Content:           []json.RawMessage{json.RawMessage(`{"type":"text","text":"a"}`), json.RawMessage(`{"type":"text","text":"b"}`)},
		StructuredContent: json.RawMessage(`{"x":1}`)}, nil))
	require.NoError(t, err)
	require.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"structuredContent":{"x":1},"isError":false}}`, string(got))
	modern := newResponse(json.RawMessage(`3`), (&Server{}).modernResult(callToolResult{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"a"}`)}}), nil)
	got, err = encodeResponse(modern)
	require.NoError(t, err)
	want, err := json.Marshal(modern)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "2026-07-28's answer, byte for byte")

	// A block that is not JSON is never written: json.Marshal's error.
	for _, r := range []response{
		newResponse(json.RawMessage(`1`), callToolResult{Content: []json.RawMessage{json.RawMessage(`{"type":`)}}, nil),
		newResponse(json.RawMessage(`1`), callToolResult{Content: []json.RawMessage{}, StructuredContent: json.RawMessage(`{`)}, nil),
	} {
		_, err := encodeResponse(r)
		require.Error(t, err)
	}
}

func FuzzEncodeResponse(f *testing.F) {
	f.Add([]byte(`1`), []byte(`{"type":"text","text":"hi"}`), []byte(`{"a":[1]}`), false)
	f.Add([]byte(`"x"`), []byte(` {"t" : "<&>"} `), []byte(nil), true)
	f.Fuzz(func(t *testing.T, id, block, structured []byte, isError bool) {
		res := callToolResult{Content: []json.RawMessage{block, block}, IsError: isError}
		if structured != nil {
			res.StructuredContent = json.RawMessage(structured)
		}
		r := newResponse(id, res, nil)
		want, wantErr := json.Marshal(r)
		got, err := encodeResponse(r)
		jsontest.SameAsMarshal(t, want, wantErr, got, err)
	})
}

// go test -bench EncodeResponse ./mcpserver: the direct encoding against
// json.Marshal of an echo call's answer.
func BenchmarkEncodeResponse(b *testing.B) {
	r := newResponse(json.RawMessage(`12`), callToolResult{Content: []json.RawMessage{textContent("hello")}}, nil)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeResponse(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
