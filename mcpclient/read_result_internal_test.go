package mcpclient

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// An upstream result passes through with its content blocks as the server
// wrote them; one mcpflow cannot read is an error that names what is
// wrong and never quotes the result.
func TestReadResult(t *testing.T) {
	unreadable := func(err error) error { return err }
	res, err := readResult(json.RawMessage(`{"content":[{"type":"text","text":"a/b","x-extra":1}],"structuredContent":{"n":9007199254740993},"isError":true}`), unreadable)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"text","text":"a/b","x-extra":1}`, string(res.Content[0]), "blocks as written")
	require.Equal(t, map[string]any{"n": json.Number("9007199254740993")}, res.StructuredContent)
	require.True(t, res.IsError)

	res, err = readResult(json.RawMessage(`{"content":[]}`), unreadable)
	require.NoError(t, err)
	require.Empty(t, res.Content)
	require.Nil(t, res.StructuredContent)

	for raw, want := range map[string]string{
		`{}`:                            "content is missing",
		`{"content":[1]}`:               "content block 0 is not an object",
		`{"content":[{},"secret-xyz"]}`: "content block 1 is not an object",
		`{"content":"secret-xyz"}`:      "cannot unmarshal string",
		`{"content":[],"isError":"y"}`:  "cannot unmarshal string",
	} {
		_, err := readResult(json.RawMessage(raw), unreadable)
		require.Error(t, err, raw)
		require.Contains(t, err.Error(), want, raw)
		require.NotContains(t, err.Error(), "secret-xyz", raw)
	}
}

var resultSeeds = []string{
	`{"content":[{"type":"text","text":"a/b"}],"structuredContent":{"n":9007199254740993},"isError":true}`,
	`{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"demo"}},"resultType":"complete"}`,
	` { "content" : [ {"type":"text","text":"]}\"["} , 5 , "s" ] , "isError" : false } `,
	`{"content":null}`, `{"content":[1],"content":null}`, `{"content":null,"content":[{}]}`,
	`{"content":[],"isError":true,"isError":null}`, `{"content":[],"isError":"y"}`, `{"content":"x"}`,
	`{"Content":[{}]}`, `{"content":[],"ISERROR":true}`, `{"content":[],"structuredcontent":{"a":1}}`,
	`{"c\u006fntent":[{}]}`, `{"cοntent":[{}]}`, `{"content":[],"structuredContent":null}`,
	`{"content":[],"structuredContent":[1,2]}`, `{}`, `[]`, `null`, `{"content":[{}]`, `{"content":[{},]}`,
}

// decodeResult reads what json.Unmarshal reads, and fails where it fails.
func TestDecodeResultMatchesEncodingJSON(t *testing.T) {
	for _, raw := range resultSeeds {
		checkDecodeResult(t, []byte(raw))
	}
}

func FuzzDecodeResult(f *testing.F) {
	for _, s := range resultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecodeResult(t, raw) })
}

func checkDecodeResult(t *testing.T, raw []byte) {
	t.Helper()
	var want resultParts
	wantErr := json.Unmarshal(raw, &want)
	got, err := decodeResult(raw)
	if (wantErr == nil) != (err == nil) {
		t.Fatalf("%q: json.Unmarshal error %v, ours %v", raw, wantErr, err)
	}
	if err == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\njson.Unmarshal %+v\nours           %+v", raw, want, got)
	}
}
