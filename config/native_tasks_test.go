package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// native_tasks: an mcpflow key (DeerFlow ignores it), a boolean that
// defaults to false.
func TestNativeTasksKey(t *testing.T) {
	t.Parallel()
	ext, _, err := loadJSON(t, `{"mcpServers": {
		"off": {"type": "http", "url": "http://a"},
		"on": {"type": "http", "url": "http://b", "native_tasks": true},
		"explicit": {"type": "http", "url": "http://c", "native_tasks": false}}}`, noEnv)
	require.NoError(t, err)
	byName := map[string]Server{}
	for _, s := range ext.Servers {
		byName[s.Name] = s
		require.Nil(t, s.Extra.Keys(), "%s: native_tasks is a declared key, not an extra", s.Name)
	}
	require.False(t, byName["off"].NativeTasks)
	require.True(t, byName["on"].NativeTasks)
	require.False(t, byName["explicit"].NativeTasks)

	for _, bad := range []struct{ value, got string }{{`1`, `1`}, {`"yes"`, `"yes"`}, {`null`, `null`}} {
		_, path, err := loadJSON(t, serverJSON(`{"native_tasks": `+bad.value+`}`), noEnv)
		require.EqualError(t, err, path+`: mcpServers.demo.native_tasks: must be a boolean (got `+bad.got+`)`)
	}
}

// The admin API shows native_tasks with its default, and a write that
// leaves it out (a DeerFlow client does not know it) keeps the stored
// value; a write that sends it changes it.
func TestAdminNativeTasks(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, `{"mcpServers": {
		"on": {"type": "http", "url": "http://b", "native_tasks": true},
		"off": {"type": "http", "url": "http://a"}}}`)
	v := getView(t, a)
	require.Equal(t, true, v["on"].(map[string]any)["native_tasks"])
	require.Equal(t, false, v["off"].(map[string]any)["native_tasks"], "the default is shown")

	require.NoError(t, put(t, a, map[string]any{
		"on":  map[string]any{"type": "http", "url": "http://b2"},
		"off": map[string]any{"type": "http", "url": "http://a", "native_tasks": true},
	}))
	require.Equal(t, true, storedServer(t, path, "on")["native_tasks"], "left out: kept")
	require.Equal(t, "http://b2", storedServer(t, path, "on")["url"])
	require.Equal(t, true, storedServer(t, path, "off")["native_tasks"], "sent: changed")

	v = getView(t, a)
	v["on"].(map[string]any)["native_tasks"] = false
	require.NoError(t, put(t, a, v))
	require.Equal(t, false, storedServer(t, path, "on")["native_tasks"])

	err := put(t, a, map[string]any{"on": map[string]any{"type": "http", "url": "http://b", "native_tasks": "yes"}})
	require.ErrorContains(t, err, "mcpServers.on.native_tasks: must be a boolean")
}
