package mcpserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow"
)

// review4Read runs readMessage on body as a POST with application/json.
func review4Read(body string) (*message, bool, int) {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	msg, ok := (&Server{}).readMessage(rec, r, &mcpflow.MCPRequest{})
	return msg, ok, rec.Code
}

// Found by review 4, failed before its fix: readMessage trimmed the body with bytes.TrimSpace before
// decoding it; TrimSpace removes Unicode white space (U+000B, U+000C,
// U+0085, U+00A0, U+2028, U+3000...), which is not JSON white space
// (space, tab, CR, LF only). encoding/json rejects such a body
// ("invalid character ... looking for beginning of value" or "after
// top-level value"), so the server should answer 400 PARSE_ERROR; it
// decoded the request and ran it instead. A parser differential at the
// edge: a body that a JSON-validating proxy or WAF in front of mcpflow
// refuses or reads as not-JSON was executed (here a tools/call).
func TestReview4ReadMessageRejectsNonJSONWhitespace(t *testing.T) {
	const req = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
	// The control: JSON's own white space around the message is fine.
	if _, ok, code := review4Read(" \t\r\n" + req + "\r\n\t "); !ok {
		t.Fatalf("a valid body was refused (%d)", code)
	}
	for _, sp := range []string{"\v", "\f", "\u0085", "\u00a0", "\u2028", "\u3000"} {
		for _, body := range []string{sp + req, req + sp} {
			var v any
			if json.Unmarshal([]byte(body), &v) == nil {
				t.Fatalf("%q: the test assumes encoding/json rejects it", body)
			}
			if msg, ok, _ := review4Read(body); ok {
				t.Errorf("%q: encoding/json rejects the body (not JSON), readMessage decoded it as %s %s", body, msg.Method, msg.ID)
			}
		}
	}
}

// Passes (review 4, edge cases): member names encoding/json matches by
// Unicode folding ("ſ" U+017F folds to "s", the Kelvin sign U+212A to
// "k") or spells with escapes, in params and at the top level, are left
// to encoding/json and read as it reads them.
func TestReview4FastMessageFoldedNames(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","paramſ":{"name":"echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","argumentſ":{"a":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"argumentſ":{"a":1}}}`,
		`{"jſonrpc":"2.0","id":1,"method":"tools/call","params":{"taſkId":"t"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/get\",\"params\":{\"tas\u212aId\":\"t\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{},\"task\":{\"ttl\":1},\"tas\u212a\":null}}",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"a","name":"b"}}`,
		`{"jsonrpc":"2.0","\u0069d":1,"id":2,"method":"tools/call"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"e\",\"_meta\":{\"io.x/\xffy\":1}}}",
	} {
		if !json.Valid([]byte(body)) {
			t.Fatalf("invalid test input %s", body)
		}
		var want message
		wantErr := json.Unmarshal([]byte(body), &want)
		got, ok := decodeMessage([]byte(body))
		if wantErr != nil {
			t.Logf("%s: json.Unmarshal %v (ok %v)", body, wantErr, ok)
			continue
		}
		if !ok {
			t.Errorf("%s: refused, json.Unmarshal reads it", body)
			continue
		}
		g := normal(*got)
		g.paramsErr = nil
		if w := normal(want); !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", body, g, w)
		}
	}
}
