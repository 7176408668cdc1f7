package mcpserver

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// reviewOldDecode is decodeMessage as it was before the fast path.
func reviewOldDecode(body []byte) (*message, bool) {
	msg := &message{}
	err := json.Unmarshal(body, msg)
	if err == nil {
		return msg, true
	}
	var te *json.UnmarshalTypeError
	if !reviewAs(err, &te) {
		return nil, false
	}
	var raw struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &raw) != nil {
		return nil, false
	}
	msg.paramsErr = paramsProblem(raw.Method, raw.Params)
	return msg, true
}

func reviewAs(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*te = t
	}
	return ok
}

var reviewSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
	`{"JSONRPC":"2.0","id":1,"method":"tools/call"}`,
	`{"jsonrpc":"2.0","Id":1,"method":"tools/call"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Name":"b","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","ARGUMENTS":{"x":1},"arguments":{}}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\",\"arguments\":{}}}",
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"arguments\":{\"\xfe\":\"\xff\"}}}",
	"{\"j\u017fonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}",
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"k":"}]\"{["}}}`,
	`{"jsonrpc":"2.0","id":[1,{"a":"]"}],"method":"x"}`,
	`{"jsonrpc":"2.0","id":-1.5e+10,"method":"x"}`,
	`{"jsonrpc":"2.0","id":true,"method":"x"}`,
	`{"jsonrpc":"2.0","id":{},"method":"x","params":{}}`,
	"\t{\r\n\"jsonrpc\"\t:\n\"2.0\"\r,\"id\" :1 ,\"method\": \"x\" ,\"params\":{ \"arguments\" :{ } , \"name\" : \"n\" }\n}\n ",
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":"{}"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"","arguments":{}}}`,
	`{"":1}`,
	`{"jsonrpc":"","method":"","id":""}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"a":{"b":{"c":[[[{}]]]}}},"name":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":"\\"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a\\":"b"}}}`,
	`{"jsonrpc":"2.0","id":"\"","method":"x"}`,
	`{"jsonrpc":"2.0","result":{},"id":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}},"params":{"name":"y"}}`,
}

func reviewCompare(t *testing.T, body []byte) {
	t.Helper()
	gotM, gotOK := decodeMessage(body)
	wantM, wantOK := reviewOldDecode(body)
	if gotOK != wantOK {
		t.Fatalf("%q: ok %v, old %v", body, gotOK, wantOK)
	}
	if !gotOK {
		return
	}
	g, w := normal(*gotM), normal(*wantM)
	if !reflect.DeepEqual(g.paramsErr, w.paramsErr) {
		t.Fatalf("%q: paramsErr %+v, old %+v", body, g.paramsErr, w.paramsErr)
	}
	g.paramsErr, w.paramsErr = nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%q:\nnew %+v\nold %+v", body, g, w)
	}
	// The fast path's raw values alias body: they must be exactly the
	// value's bytes, nothing around them.
	if gotM.ID != nil && string(gotM.ID) != string(wantM.ID) {
		t.Fatalf("%q: id %q, old %q", body, gotM.ID, wantM.ID)
	}
}

func TestReviewFastDecodeSeeds(t *testing.T) {
	for _, s := range append(append([]string{}, reviewSeeds...), fastSeeds...) {
		reviewCompare(t, []byte(s))
		// TrimSpace as readMessage does
		reviewCompare(t, []byte(strings.TrimSpace(s)))
	}
}

// The fast path must not mutate body, nor leave raw values that share
// capacity beyond their length with other decoded fields such that an
// append to one rewrites another.
func TestReviewFastDecodeAliasing(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":"hi"}}}`)
	orig := string(body)
	m, ok := decodeMessage(body)
	if !ok {
		t.Fatal("not decoded")
	}
	if string(body) != orig {
		t.Fatal("body mutated")
	}
	id := append(m.ID, 'X') // a caller appending to the id
	_ = id
	if string(m.Params.Arguments) != `{"m":"hi"}` || string(body) != orig {
		t.Logf("append to msg.ID rewrote the body: %q (arguments %q)", body, m.Params.Arguments)
	}
}

func FuzzReviewDecodeMessage(f *testing.F) {
	for _, s := range append(append([]string{}, reviewSeeds...), fastSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		reviewCompare(t, body)
	})
}
