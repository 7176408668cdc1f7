package mcpflow_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestKeyedTaskID: the id of a keyed submit is a task id, the same for
// the same (user, thread, key) and different when any of them differs
// (fields cannot run into each other).
func TestKeyedTaskID(t *testing.T) {
	t.Parallel()
	id := mcpflow.KeyedTaskID("alice", "t1", "k")
	require.True(t, mcpflow.ValidTaskID(id), id)
	require.Equal(t, id, mcpflow.KeyedTaskID("alice", "t1", "k"))
	seen := map[string]bool{id: true}
	for _, other := range [][3]string{{"bob", "t1", "k"}, {"alice", "t2", "k"}, {"alice", "t1", "k2"}, {"alicet", "1", "k"}, {"alice", "t1k", ""}} {
		o := mcpflow.KeyedTaskID(other[0], other[1], other[2])
		require.False(t, seen[o], "%v", other)
		seen[o] = true
	}
}

func TestIdempotencyKeyProblem(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "8e03978e-40d5-43e8-bc93-6894a57f9324", `"quoted"`, strings.Repeat("~", 255)} {
		require.Empty(t, mcpflow.IdempotencyKeyProblem(ok), ok)
	}
	require.Equal(t, "must be 1 to 255 characters long (got 0)", mcpflow.IdempotencyKeyProblem(""))
	require.Equal(t, "must be 1 to 255 characters long (got 256)", mcpflow.IdempotencyKeyProblem(strings.Repeat("a", 256)))
	require.Equal(t, "must be printable ASCII without spaces (character 2 is not)", mcpflow.IdempotencyKeyProblem("a\tb"))
	require.Equal(t, "must be printable ASCII without spaces (character 1 is not)", mcpflow.IdempotencyKeyProblem(" a"))
}

// TestSubmitRequestHash: the same server, tool and arguments hash alike
// whatever the order of the keys; any difference changes the hash.
func TestSubmitRequestHash(t *testing.T) {
	t.Parallel()
	hash := func(server, tool, args string) string {
		t.Helper()
		a, err := mcpflow.DecodeArguments(json.RawMessage(args))
		require.NoError(t, err)
		h, err := mcpflow.SubmitRequestHash(server, tool, a)
		require.NoError(t, err)
		return h
	}
	h := hash("demo", "demo_submit_job", `{"a": 1, "b": {"y": 2, "x": [1, 2]}}`)
	require.Equal(t, h, hash("demo", "demo_submit_job", `{"b": {"x": [1, 2], "y": 2}, "a": 1}`))
	require.NotEqual(t, h, hash("demo", "demo_submit_job", `{"a": 2, "b": {"y": 2, "x": [1, 2]}}`))
	require.NotEqual(t, h, hash("demo", "demo_other", `{"a": 1, "b": {"y": 2, "x": [1, 2]}}`))
	require.NotEqual(t, h, hash("other", "demo_submit_job", `{"a": 1, "b": {"y": 2, "x": [1, 2]}}`))
	empty, err := mcpflow.SubmitRequestHash("demo", "demo_submit_job", nil)
	require.NoError(t, err)
	require.Equal(t, empty, hash("demo", "demo_submit_job", `{}`))
}
