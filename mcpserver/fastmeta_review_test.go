package mcpserver

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFastMetaAsUnmarshal: params._meta as the fast decode reads it is
// what json.Unmarshal makes of it, for the spellings a member walk can
// get wrong (values holding brackets, quotes and escapes, whitespace
// inside and around values, an empty name, a name met twice, raw bytes
// that are not UTF-8, _meta before name, _meta inside arguments); anything
// it cannot read the same (a non-ASCII or escaped name, a case variant, a
// second _meta, not an object) is left to encoding/json.
func TestFastMetaAsUnmarshal(t *testing.T) {
	const pre = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`
	for _, tc := range []struct {
		params string
		fast   bool
	}{
		{`{"_meta":{"a":"}\"{","b":[{"]":"["}],"c":"\\","d":"\u00e9\ud83d\ude00"},"name":"e","arguments":{}}`, true},
		{`{"name":"e","_meta": { "a" : { "x" : [ 1 , 2.5e-3 ] } , "b" :null , "c":true } }`, true},
		{`{"name":"e","_meta":{"":1,"a b":2,"io.x/y":{"z":-0}}}`, true},
		{`{"name":"e","_meta":{"a":1,"b":2,"a":{"z":3}}}`, true},
		{`{"name":"e","_meta":{ }}`, true},
		{"{\"name\":\"e\",\"_meta\":{\"a\":\"\xff\xfe\",\"b\":\"\xc3\"}}", true},
		{`{"name":"e","arguments":{"_meta":{"a":1}},"_meta":{"a":2}}`, true},
		{`{"name":"e","_meta":{"é":1}}`, false},
		{`{"name":"e","_meta":{"a\/b":1}}`, false},
		{`{"name":"e","_meta":{"a":1},"_Meta":{"b":2}}`, false},
		{`{"name":"e","_meta":{"a":1},"_meta":null}`, false},
		{`{"name":"e","_meta":{"a":1},"_meta":{"b":2}}`, false},
		{`{"name":"e","_meta":[]}`, false},
		{`{"name":"e","_meta":"x"}`, false},
	} {
		body := []byte(pre + tc.params + `}`)
		require.True(t, json.Valid(body), "%s", body)
		var fast message
		got := fastMessage(body, &fast)
		require.Equal(t, tc.fast, got, "%s", body)
		if !got {
			continue
		}
		var want message
		require.NoError(t, json.Unmarshal(body, &want), "%s", body)
		require.True(t, reflect.DeepEqual(normal(fast), normal(want)), "%s:\nfast %+v\nwant %+v", body, fast, want)
	}
}
