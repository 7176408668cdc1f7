package streamhttp

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow/internal/testsupport/jsontest"
)

// Found by review 4, failed before its fix: encodeRequest spliced json.RawMessage params without
// checking them: json.Marshal of the same request fails ("unexpected end
// of JSON input", "invalid character ...": it compacts, so validates, a
// RawMessage), encodeRequest returned a body that is not JSON and no error,
// which was then POSTed (the server answers a parse error instead of the
// caller getting its encoding error). stdiopipe's encodeRequest checks
// json.Valid before splicing; this one did not. Today's callers pass
// only bytes already checked (session.encodeCallParams, withEnvelope),
// so this is the encoder's contract, not a reachable bug today; the last
// case shows what it would allow: params that are not one JSON value
// splice into a valid body whose method (the last one, for encoding/json
// and most decoders) is not r.Method.
func TestReview4EncodeRequestInvalidRawParams(t *testing.T) {
	for _, params := range []json.RawMessage{{}, json.RawMessage(`{"a":`), json.RawMessage(`{"a":1}x`), json.RawMessage(`{} {}`),
		json.RawMessage(`{},"method":"tools/list"`)} {
		r := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Method: "tools/call", Params: params}
		want, wantErr := json.Marshal(r)
		got, err := encodeRequest(r)
		if wantErr == nil {
			t.Fatalf("%q: the test assumes json.Marshal fails (%s)", params, want)
		}
		if err == nil {
			t.Errorf("params %q: json.Marshal fails (%v), encodeRequest wrote %q (valid JSON: %v)", params, wantErr, got, json.Valid(got))
		}
	}
}

// Passes (review 4, edge cases: streamhttp's encodeRequest had no test of
// its own): the same JSON value as json.Marshal of the request, and valid
// JSON, for ids of every kind (strings needing escapes, HTML characters,
// U+2028, invalid UTF-8, floats, nil), methods needing escapes, and params
// nil, raw (nil, null, spaced, holding <>& and U+2028) or encoded.
func TestReview4EncodeRequestMatchesMarshal(t *testing.T) {
	ids := []any{int64(0), int64(-1), int64(9007199254740993), "mcpflow-1", "a<b>&c", "q\"\\", "\u2028\u2029", "a\xffb", 1.5, 1e21, nil}
	methods := []string{"tools/call", "x<y>&z", "m\u2028\n\"", "\xff"}
	params := []any{nil, json.RawMessage(nil), json.RawMessage(`null`), json.RawMessage(" {\n \"a\" : [1, \"<&>\u2028\"] }\n"),
		map[string]any{"uri": "file:///a<b>"}, map[string]any(nil), mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"a": 1}}}
	for _, id := range ids {
		for _, m := range methods {
			for _, p := range params {
				r := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: m, Params: p}
				want, wantErr := json.Marshal(r)
				got, err := encodeRequest(r)
				if err == nil && !json.Valid(got) {
					t.Fatalf("%v %q %v: not JSON: %q", id, m, p, got)
				}
				jsontest.SameAsMarshal(t, want, wantErr, got, err)
			}
		}
	}
}

// FuzzReview4DecodeMessage: decodeMessage reads what decodeSlow
// (encoding/json) reads, and fails where it fails (streamhttp had a table
// test only).
func FuzzReview4DecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"m","data":{"m":"no/such"}}}`,
		`{"jsonrpc":"2.0","id":"x","error":"cursor_invalid"}`, `{"id":1,"error":{"code":1},"error":{"message":"m"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`, "{\"re\u017fult\":1,\"id\":1}",
		`{"id":null,"method":"m","result":null,"error":null}`, `{"id":1,"method":5}`, `{"ID":1,"Result":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeMessage(append([]byte(nil), b...))
		want, wantErr := decodeSlow(b)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: encoding/json error %v, decodeMessage error %v", b, wantErr, err)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\ndecodeMessage %+v\nencoding/json %+v", b, got, want)
		}
	})
}
