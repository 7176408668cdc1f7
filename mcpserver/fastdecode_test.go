package mcpserver

import (
	"encoding/json"
	"reflect"
	"testing"
)

var fastSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
	` { "jsonrpc" : "2.0" , "id" : "a-1" , "method" : "tools/call" , "params" : { "arguments" : { "x" : [1, {"y": "}"}], "z": "\"" } , "name" : "t" } } `,
	`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"c"}}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":1}}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"\u0065cho","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":5,"Method":"tools/call","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":6,"method":"tools/call","method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5}}`,
	`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"é","arguments":null}}`,
	`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":[]}`,
	`{"id":{"a":1},"result":{}}`,
	`[]`, `{}`, `"x"`, `{"jsonrpc":2}`,
	`{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"echo","arguments":{"m":"/"},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"a":1,"a":2, "b" : [ ] }}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"a":1},"_meta":{"b":2}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"\u0061":1}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_META":{"a":1}}}`,
}

// FuzzFastMessage: where fastMessage decodes a message, it is what
// json.Unmarshal makes of it.
func FuzzFastMessage(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		var fast message
		if !fastMessage(body, &fast) {
			return
		}
		var want message
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("fast path took %q, which encoding/json refuses: %v", body, err)
		}
		if !reflect.DeepEqual(normal(fast), normal(want)) {
			t.Fatalf("%q:\nfast %+v\nwant %+v", body, fast, want)
		}
	})
}

// normal makes empty and nil raw values alike, as only their bytes matter.
func normal(m message) message {
	if len(m.ID) == 0 {
		m.ID = nil
	}
	if len(m.Params.Arguments) == 0 {
		m.Params.Arguments = nil
	}
	return m
}

// The common requests take the fast path; the others are left to
// encoding/json.
func TestFastMessageTakes(t *testing.T) {
	fast := map[int]bool{0: true, 1: true, 2: true, 3: true, 5: true, 14: true, 17: true, 18: true, 19: true}
	for i, s := range fastSeeds {
		var m message
		got := json.Valid([]byte(s)) && fastMessage([]byte(s), &m)
		if got != fast[i] {
			t.Errorf("%s: fast path %v, want %v", s, got, fast[i])
		}
	}
	var m message
	fastMessage([]byte(fastSeeds[0]), &m)
	if m.JSONRPC != "2.0" || string(m.ID) != "1" || m.Method != "tools/call" || m.Params.Name == nil || *m.Params.Name != "echo" ||
		string(m.Params.Arguments) != `{"message":"hi"}` {
		t.Errorf("decoded %+v", m)
	}
}

func BenchmarkDecodeMessage(b *testing.B) {
	body := []byte(fastSeeds[0])
	for b.Loop() {
		if _, ok := decodeMessage(body); !ok {
			b.Fatal("not decoded")
		}
	}
}
