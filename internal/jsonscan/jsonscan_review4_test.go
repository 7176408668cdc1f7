package jsonscan

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Passes (review 4, edge cases): ScanEnvelope reads what json.Unmarshal
// reads into RawMessage fields (the value's bytes, no white space around
// them) with every JSON white space (\t \r \n) between tokens, values
// nested 5000 deep, strings full of brackets and escaped quotes; it leaves
// to encoding/json the names folded with the Kelvin sign or "ſ" and the
// escaped ones; StringValue reads lone surrogates and invalid UTF-8 as
// encoding/json does (U+FFFD).
func TestReview4ScanEnvelopeEdges(t *testing.T) {
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	for _, b := range []string{
		"\t{\r\n\"id\"\t:\n-0\r,\n\"result\" :\t[ ]\n,\"method\"\r:\r\"m\"\t,\"error\":\nnull\r}\r\n",
		`{"id":"a\"}]","result":{"x":"\\","y":["\"",{"z":"}"}]},"jsonrpc":"2.0"}`,
		`{"result":` + deep + `,"id":1e400}`,
		`{"id":1,"idx":2,"ids":3,"method_":"x","Xresult":1}`,
	} {
		if !json.Valid([]byte(b)) {
			t.Fatalf("invalid test input %q", b)
		}
		var want struct{ ID, Method, Result, Error json.RawMessage }
		if err := json.Unmarshal([]byte(b), &want); err != nil {
			t.Fatal(err)
		}
		env, ok := ScanEnvelope([]byte(b))
		if !ok || string(env.ID) != string(want.ID) || string(env.Method) != string(want.Method) ||
			string(env.Result) != string(want.Result) || string(env.Error) != string(want.Error) {
			t.Errorf("%.80q: scanned %v %q\nencoding/json %q", b, ok, env, want)
		}
	}
	for _, b := range []string{
		"{\"re\u017fult\":1}", "{\"\u212a\":1,\"id\":1}", `{"m\u0065thod":"x"}`, `{"Id":1}`, `{"id":1,"id":2}`, `{"error":1,"error":null}`,
	} {
		if _, ok := ScanEnvelope([]byte(b)); ok {
			t.Errorf("%q: scanned, encoding/json may read it otherwise", b)
		}
	}
	for v, want := range map[string]string{`"\ud800"`: "\ufffd", `"\udc00x"`: "\ufffdx", "\"\xed\xa0\x80\"": "\ufffd\ufffd\ufffd", `"a\/b"`: "a/b"} {
		var s string
		if err := json.Unmarshal([]byte(v), &s); err != nil || s != want {
			t.Fatalf("test assumption: %s decodes to %q (%v)", v, s, err)
		}
		if got, err := StringValue([]byte(v)); err != nil || got != want {
			t.Errorf("StringValue(%s) = %q, %v; encoding/json %q", v, got, err, want)
		}
	}
}

// Passes (review 4, edge cases): AppendID writes json.Marshal's text for
// the id values an mcp.RequestId may hold after a decode or by hand.
func TestReview4AppendIDKinds(t *testing.T) {
	for _, id := range []any{int64(-9223372036854775808), int(0), 1e21, math.Copysign(0, -1), 1e-7, float32(1.5), uint64(18446744073709551615),
		json.Number("12"), "", "\x7f", "a\u2028b", "<", true, []int{1}} {
		got, err := AppendID(nil, id)
		want, wantErr := json.Marshal(id)
		if (err == nil) != (wantErr == nil) || string(got) != string(want) {
			t.Errorf("AppendID(%#v) = %s, %v; json.Marshal %s, %v", id, got, err, want, wantErr)
		}
	}
	if _, err := AppendID(nil, json.Number("x")); err == nil {
		t.Error(`AppendID(json.Number("x")): no error, json.Marshal fails`)
	}
}
