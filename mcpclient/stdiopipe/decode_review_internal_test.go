package stdiopipe

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
)

// A line whose "method" is repeated, first with a value that is not a
// string: json.Unmarshal fails (it records the type error and goes on),
// so dispatch skips the line. ScanEnvelope leaves a repeated member to
// encoding/json; when it kept the last one, the first line below was
// delivered as an answer to request 1. Found by review of bc7397a.
func TestReviewDecodeIncomingDuplicateMethodTypeError(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":5,"method":null,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":1,"method":{},"method":"roots/list"}`,
		`{"jsonrpc":"2.0","method":true,"method":"notifications/progress"}`,
	} {
		var m incoming
		wantErr := json.Unmarshal([]byte(line), &m)
		_, err := decodeIncoming([]byte(line))
		if (wantErr == nil) != (err == nil) {
			t.Errorf("%s: json.Unmarshal error %v, decodeIncoming error %v", line, wantErr, err)
		}
	}
}

// Review (held): an id json.Marshal escapes still keys its answer: the
// key SendRequest stores (AppendID) equals idKey of the id the server
// echoes, raw or escaped.
func TestReviewEscapedIDMatchesAnswer(t *testing.T) {
	for _, c := range []struct{ id, echo string }{
		{"a<b&c>", `"a<b&c>"`}, {"a<b&c>", `"a\u003cb\u0026c\u003e"`},
		{"é\u2028", "\"é\u2028\""}, {"é\u2028", `"\u00e9\u2028"`}, {"q\"\\\x7f", `"q\"\\` + "\x7f" + `"`},
	} {
		key, err := jsonscan.AppendID(nil, mcp.NewRequestId(c.id).Value())
		want, _ := json.Marshal(mcp.NewRequestId(c.id))
		got, ok := idKey(json.RawMessage(c.echo))
		if err != nil || !ok || string(key) != got || string(key) != string(want) {
			t.Errorf("%q: key %s, json.Marshal %s, idKey(%s) %s", c.id, key, want, c.echo, got)
		}
	}
}
