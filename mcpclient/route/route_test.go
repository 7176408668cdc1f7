package route_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/mcpclient/route"
	"github.com/mcpflow/mcpflow/mcpclient/workspace"
)

// A stdio result is read for paths only when it may hold one: a '/' (or
// its JSON escape) or a resource outside its _meta, or a bare filename of
// a file the call wrote. Any other
// result, and every result of another route, passes through unread.
func TestNeedsTranslation(t *testing.T) {
	ws, err := workspace.Prepare(t.TempDir(), "alice", "t1")
	require.NoError(t, err)
	plain := []byte(`{"content":[{"type":"text","text":"Wrote note.txt"}]}`)

	require.False(t, route.New(nil, nil, "").NeedsTranslation([]byte(`{"content":[{"type":"text","text":"/etc/x"}]}`)), "not a stdio route")

	rt := route.New(nil, ws, ws.Dir)
	require.False(t, rt.NeedsTranslation(plain), "no path, nothing written")
	require.True(t, rt.NeedsTranslation([]byte(`{"content":[{"type":"text","text":"see ./note.txt"}]}`)))
	require.True(t, rt.NeedsTranslation([]byte(`{"content":[{"type":"text","text":"see .\u002fnote.txt"}]}`)), "an escaped '/'")

	// A 2026-07-28 answer names its server under a key with a '/' in
	// _meta, which translation leaves alone; a '/' anywhere else counts.
	meta := `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"demo","version":"1"}}`
	require.False(t, rt.NeedsTranslation([]byte(`{`+meta+`,"content":[{"type":"text","text":"hello"}],"resultType":"complete"}`)), "a '/' in _meta only")
	require.False(t, rt.NeedsTranslation([]byte(` { "content" : [] , `+meta+` } `)), "spaces around the members")
	require.True(t, rt.NeedsTranslation([]byte(`{`+meta+`,"content":[{"type":"text","text":"see ./note.txt"}]}`)), "a path in content")
	require.True(t, rt.NeedsTranslation([]byte(`{`+meta+`,"content":[{"type":"text","text":"see .\u002fnote.txt"}]}`)), "an escaped '/' in content")
	require.True(t, rt.NeedsTranslation([]byte(`{"content":[],"_meta":{},"structuredContent":{"p":"/x"}}`)), "a '/' in another member")
	require.True(t, rt.NeedsTranslation([]byte(`{"_met\u0061":{"k":"/x"},"content":[]}`)), "a name with an escape: all of it counts")
	require.True(t, rt.NeedsTranslation([]byte(`{"_META":{"k":"/x"},"content":[]}`)), "only _meta as spelt is skipped")
	require.True(t, rt.NeedsTranslation([]byte(`["/x"]`)), "not an object: all of it counts")

	// A file written during the call: its bare name is translated.
	require.NoError(t, os.WriteFile(filepath.Join(ws.Dir, "note.txt"), []byte("hi"), 0o644))
	require.Eventually(t, func() bool { return rt.NeedsTranslation(plain) }, 5*time.Second, 10*time.Millisecond)
}
