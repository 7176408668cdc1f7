package stdiopipe

import (
	"encoding/json"
	"reflect"
	"testing"
)

var incomingSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
	` { "jsonrpc" : "2.0" , "id" : "a\"b" , "result" : { "s" : "}]\\\"{[" , "n" : [1, 2.5e3, -0, true, false, null] } } `,
	`{"result":[],"id":7}`,
	`{"jsonrpc":"2.0","id":null,"method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
	`{"jsonrpc":"2.0","id":3,"method":"roots/list","params":{}}`,
	`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found"}}`,
	`{"jsonrpc":"2.0","id":"x","error":null,"result":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"t\u00e9st"}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\xffb\"}",
	`{"jsonrpc":"2.0","i\u0064":1,"result":{"a":1}}`,
	`{"jsonrpc":"2.0","ID":1,"Result":{"a":1}}`,
	`{"id":1,"result":{"a":1},"result":{"b":2}}`,
	`{"jsonrpc":"2.0","id":1,"method":5,"method":null,"result":{"content":[]}}`,
	`{"id":1,"error":{"code":1},"error":{"message":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"reſult":{"a":1}}`,
	`{"id":1,"method":5}`,
	`{"id":1,"method":null,"result":true}`,
	`{}`, `[]`, `5`, `{"id":1,"result":{"a":}`,
}

// decodeIncoming reads what json.Unmarshal reads, and fails where it
// fails.
func TestDecodeIncomingMatchesEncodingJSON(t *testing.T) {
	for _, line := range incomingSeeds {
		checkIncoming(t, []byte(line))
	}
}

func FuzzDecodeIncoming(f *testing.F) {
	for _, s := range incomingSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkIncoming(t, line) })
}

func checkIncoming(t *testing.T, line []byte) {
	t.Helper()
	var want incoming
	wantErr := json.Unmarshal(line, &want)
	got, err := decodeIncoming(append([]byte(nil), line...))
	if (wantErr == nil) != (err == nil) {
		t.Fatalf("%q: json.Unmarshal error %v, ours %v", line, wantErr, err)
	}
	if err == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\njson.Unmarshal %+v\nours           %+v", line, want, got)
	}
}

// go test -bench DecodeIncoming ./mcpclient/stdiopipe: the scan against
// json.Unmarshal of an echo call's answer line.
func BenchmarkDecodeIncoming(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":"mcpflow-12","result":{"content":[{"type":"text","text":"Echo: hello"}],"isError":false}}`)
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeIncoming(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var m incoming
			if err := json.Unmarshal(line, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
