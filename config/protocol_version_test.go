package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// protocol_version: an mcpflow key (DeerFlow ignores it) that pins a
// server's MCP revision; absent or null is the newest the server offers.
func TestProtocolVersionKey(t *testing.T) {
	t.Parallel()
	ext, _, err := loadJSON(t, `{"mcpServers": {
		"newest": {"type": "http", "url": "http://a"},
		"null": {"type": "http", "url": "http://a", "protocol_version": null},
		"old": {"type": "http", "url": "http://b", "protocol_version": "2025-11-25"},
		"new": {"command": "x", "protocol_version": "2026-07-28"},
		"sse": {"type": "sse", "url": "http://c", "protocol_version": "2025-11-25"}}}`, noEnv)
	require.NoError(t, err)
	got := map[string]string{}
	for _, s := range ext.Servers {
		got[s.Name] = s.ProtocolVersion
		require.Nil(t, s.Extra.Keys(), "%s: protocol_version is a declared key, not an extra", s.Name)
	}
	require.Equal(t, map[string]string{"newest": "", "null": "", "old": "2025-11-25", "new": "2026-07-28", "sse": "2025-11-25"}, got)

	for _, bad := range []struct{ server, want string }{
		{`{"type": "http", "url": "http://a", "protocol_version": "2025-06-18"}`, `mcpServers.demo.protocol_version: must be "2026-07-28" or "2025-11-25" (got "2025-06-18")`},
		{`{"type": "http", "url": "http://a", "protocol_version": "newest"}`, `mcpServers.demo.protocol_version: must be "2026-07-28" or "2025-11-25" (got "newest")`},
		{`{"type": "http", "url": "http://a", "protocol_version": 2026}`, `mcpServers.demo.protocol_version: must be "2026-07-28" or "2025-11-25" (got 2026)`},
		{`{"type": "sse", "url": "http://a", "protocol_version": "2026-07-28"}`, `mcpServers.demo.protocol_version: the sse transport (HTTP+SSE) ends at 2025-11-25: use type "http" to speak 2026-07-28`},
	} {
		_, path, err := loadJSON(t, serverJSON(bad.server), noEnv)
		require.EqualError(t, err, path+": "+bad.want)
	}
}

// The admin API shows protocol_version with its default (null), a write
// that leaves it out (a DeerFlow client does not know it) keeps the stored
// value, one that sends it changes it, and an unknown revision is refused
// with its path.
func TestAdminProtocolVersion(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, `{"mcpServers": {
		"old": {"type": "http", "url": "http://b", "protocol_version": "2025-11-25"},
		"newest": {"type": "http", "url": "http://a"}}}`)
	v := getView(t, a)
	require.Equal(t, "2025-11-25", v["old"].(map[string]any)["protocol_version"])
	require.Contains(t, v["newest"].(map[string]any), "protocol_version")
	require.Nil(t, v["newest"].(map[string]any)["protocol_version"], "the default is shown as null")

	require.NoError(t, put(t, a, map[string]any{
		"old":    map[string]any{"type": "http", "url": "http://b2"},
		"newest": map[string]any{"type": "http", "url": "http://a", "protocol_version": "2026-07-28"},
	}))
	require.Equal(t, "2025-11-25", storedServer(t, path, "old")["protocol_version"], "left out: kept")
	require.Equal(t, "http://b2", storedServer(t, path, "old")["url"])
	require.Equal(t, "2026-07-28", storedServer(t, path, "newest")["protocol_version"], "sent: changed")

	// The view sent back as it is: null stays the default.
	v = getView(t, a)
	v["old"].(map[string]any)["protocol_version"] = nil
	require.NoError(t, put(t, a, v))
	ext, err := LoadExtensions(path, noEnv)
	require.NoError(t, err)
	s, _ := ext.Lookup("old")
	require.Empty(t, s.ProtocolVersion)

	err = put(t, a, map[string]any{"old": map[string]any{"type": "http", "url": "http://b", "protocol_version": "2024-11-05"}})
	require.ErrorContains(t, err, `mcpServers.old.protocol_version: must be "2026-07-28" or "2025-11-25" (got "2024-11-05")`)
}

// forward_roots: an mcpflow key for http servers only (false by default),
// shown by the admin API and kept by a write that leaves it out.
func TestForwardRootsKey(t *testing.T) {
	t.Parallel()
	ext, _, err := loadJSON(t, `{"mcpServers": {
		"off": {"type": "http", "url": "http://a"},
		"on": {"type": "http", "url": "http://b", "forward_roots": true}}}`, noEnv)
	require.NoError(t, err)
	got := map[string]bool{}
	for _, s := range ext.Servers {
		got[s.Name] = s.ForwardRoots
		require.Nil(t, s.Extra.Keys(), "%s: forward_roots is a declared key", s.Name)
	}
	require.Equal(t, map[string]bool{"off": false, "on": true}, got)
	for _, bad := range []struct{ server, want string }{
		{`{"command": "x", "forward_roots": true}`, `mcpServers.demo.forward_roots: applies to type "http" servers only: a stdio server runs on mcpflow's host, where a caller's roots would name this host's files, and the sse transport cannot ask the caller`},
		{`{"type": "sse", "url": "http://a", "forward_roots": true}`, `mcpServers.demo.forward_roots: applies to type "http" servers only: a stdio server runs on mcpflow's host, where a caller's roots would name this host's files, and the sse transport cannot ask the caller`},
		{`{"type": "http", "url": "http://a", "forward_roots": "yes"}`, `mcpServers.demo.forward_roots: must be a boolean (got "yes")`},
	} {
		_, path, err := loadJSON(t, serverJSON(bad.server), noEnv)
		require.EqualError(t, err, path+": "+bad.want)
	}
	_, _, err = loadJSON(t, serverJSON(`{"command": "x", "forward_roots": false}`), noEnv)
	require.NoError(t, err, "false is the default on any transport")

	a, path := newAdmin(t, `{"mcpServers": {"on": {"type": "http", "url": "http://b", "forward_roots": true}, "off": {"type": "http", "url": "http://a"}}}`)
	v := getView(t, a)
	require.Equal(t, true, v["on"].(map[string]any)["forward_roots"])
	require.Equal(t, false, v["off"].(map[string]any)["forward_roots"], "the default is shown")
	require.NoError(t, put(t, a, map[string]any{
		"on":  map[string]any{"type": "http", "url": "http://b2"},
		"off": map[string]any{"type": "http", "url": "http://a"},
	}))
	require.Equal(t, true, storedServer(t, path, "on")["forward_roots"], "left out: kept")
}
