package streamhttp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeMessage reads what encoding/json reads, for the messages servers
// send (and a few they should not).
func TestDecodeMessageMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		` { "jsonrpc" : "2.0" , "id" : "a\"b" , "result" : { "s" : "}]\\\"{[" , "n" : [1, 2.5e3, -0, true, false, null] } } `,
		`{"result":[],"id":7}`,
		`{"jsonrpc":"2.0","id":null,"method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"?"}}`,
		`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found","data":{"m":"no/such"}}}`,
		`{"jsonrpc":"2.0","id":"x","error":"cursor_invalid"}`,
		`{"jsonrpc":"2.0","id":"x","error":null,"result":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"t\u00e9st","result":1}`,
		`{"jsonrpc":"2.0","i\u0064":1,"result":{"a":1}}`,
		`{"id":1,"result":{"a":1},"result":{"b":2}}`,
		`{"jsonrpc":"2.0","id":1,"method":5,"method":null,"result":{}}`, // the first method's type error fails the message
		`{"id":1,"error":{"code":1},"error":{"message":"m"}}`,           // the two errors merge
		`{"jsonrpc":"2.0","id":1,"reſult":{"a":1}}`,                     // encoding/json folds ſ to s
		`{}`,
		`[]`,
		`{"id":1,"method":5}`,
		`{"id":1,"error":{"code":"x"}}`,
		`{"jsonrpc":"2.0","ID":1,"Result":{"a":1}}`, // encoding/json matches names in any case
		`{"jsonrpc":"2.0","id":1,"METHOD":"x","Error":null}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\xffb\"}", // invalid UTF-8: encoding/json writes U+FFFD
	} {
		got, gotErr := decodeMessage([]byte(msg))
		want, wantErr := decodeSlow([]byte(msg))
		if wantErr != nil {
			require.Error(t, gotErr, msg)
			continue
		}
		require.NoError(t, gotErr, msg)
		require.Equal(t, want, got, msg)
	}
	_, err := decodeMessage([]byte(`{"id":1,"result":{"a":}`))
	require.Error(t, err)
}
