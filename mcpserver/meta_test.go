package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestReadMetaIdempotencyKey: a tools/call's _meta["io.mcpflow/idempotency-key"]
// (both revisions read _meta here) becomes the call's idempotency key; one
// that is not a string, empty, too long or not printable ASCII is -32602.
func TestReadMetaIdempotencyKey(t *testing.T) {
	t.Parallel()
	var tc mcpflow.ToolCall
	require.Nil(t, readMeta(map[string]json.RawMessage{"io.mcpflow/idempotency-key": json.RawMessage(`"retry-7f3a"`)}, &tc))
	require.Equal(t, "retry-7f3a", tc.IdempotencyKey)
	tc = mcpflow.ToolCall{}
	require.Nil(t, readMeta(map[string]json.RawMessage{}, &tc))
	require.Empty(t, tc.IdempotencyKey)

	for _, c := range []struct {
		v   any
		msg string
	}{
		{7, `_meta["io.mcpflow/idempotency-key"] must be a string`},
		{"", `_meta["io.mcpflow/idempotency-key"] must be 1 to 255 characters long (got 0)`},
		{strings.Repeat("k", 256), `_meta["io.mcpflow/idempotency-key"] must be 1 to 255 characters long (got 256)`},
		{"a b", `_meta["io.mcpflow/idempotency-key"] must be printable ASCII without spaces (character 2 is not)`},
	} {
		v, _ := json.Marshal(c.v)
		err := readMeta(map[string]json.RawMessage{"io.mcpflow/idempotency-key": v}, &mcpflow.ToolCall{})
		require.NotNil(t, err, "%v", c.v)
		require.Equal(t, -32602, err.Code)
		require.Equal(t, c.msg, err.Message)
	}
}
