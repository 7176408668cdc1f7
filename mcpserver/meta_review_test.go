package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Review (held): the shared infoMeta bytes are copied into each answer;
// scribbling on one encoded answer leaves the next unchanged, and the
// json.Marshal fallback writes the same _meta.
func TestReviewInfoMetaNotShared(t *testing.T) {
	s := New(Options{Version: "1<2"})
	enc := func() []byte {
		r := s.modernResult(callToolResult{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"a"}`)}})
		b, err := encodeResponse(response{JSONRPC: "2.0", ID: json.RawMessage(`1`), Result: r})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := enc()
	want := append([]byte(nil), a...)
	for i := range a {
		a[i] = 'x'
	}
	if b := enc(); !bytes.Equal(b, want) {
		t.Fatalf("second answer %s, want %s", b, want)
	}
	m, _ := json.Marshal(response{JSONRPC: "2.0", ID: json.RawMessage(`1`), Result: s.modernResult(callToolResult{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"a"}`)}})})
	if !bytes.Equal(m, want) {
		t.Fatalf("json.Marshal %s, fast path %s", m, want)
	}
}
