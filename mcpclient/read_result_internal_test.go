package mcpclient

import (
	"encoding/json"
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
