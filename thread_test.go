package mcpflow

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultThreadID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "default@alice", DefaultThreadID("alice"))
	require.Equal(t, "default@a@example.com", DefaultThreadID("a@example.com"))
	long := strings.Repeat("u", 64)
	id := DefaultThreadID(long)
	require.Len(t, id, len("default@")+32)
	require.NoError(t, ValidateID("thread_id", id))
	require.NoError(t, ValidateID("thread_id", DefaultThreadID(strings.Repeat("v", 56))))
	require.NotEqual(t, id, DefaultThreadID(strings.Repeat("w", 64)))

	require.False(t, ReservedThreadID("default@alice", "alice"))
	require.True(t, ReservedThreadID("default@alice", "bob"))
	require.True(t, ReservedThreadID("default@", "bob"))
	require.False(t, ReservedThreadID("default", "bob"), "plain 'default' is an ordinary id")
	require.False(t, ReservedThreadID("t1", "bob"))
	require.False(t, ReservedThreadID(id, long))
	require.True(t, ReservedThreadID(id, "alice"))
}
