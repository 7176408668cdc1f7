package route_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/mcpclient/route"
	"github.com/mcpflow/mcpflow/mcpclient/workspace"
)

// TestNeedsTranslationWheneverTranslateChanges: a result NeedsTranslation
// lets pass unread must be one Translate would leave as it is. A whole-value
// reference (a resource_link's or an embedded resource's uri) is resolved
// against the server's cwd without any '/' in it, so "note.txt" naming a
// file that was in the workspace before the call is translated; the only
// '/' of a 2026-07-28 answer is then in its _meta (serverInfo), which
// NeedsTranslation now skips, and the reference reaches the agent
// untranslated (before 4a909b3 the '/' in _meta made it translated).
func TestNeedsTranslationWheneverTranslateChanges(t *testing.T) {
	ws, err := workspace.Prepare(t.TempDir(), "alice", "t1")
	require.NoError(t, err)
	// A file from before the call (not written during it: the
	// bare-filename rule does not apply).
	note := filepath.Join(ws.Dir, "note.txt")
	require.NoError(t, os.WriteFile(note, []byte("hi"), 0o644))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(note, old, old))

	meta := `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"demo","version":"1"}}`
	for name, raw := range map[string]string{
		"resource_link, 2026 _meta":     `{` + meta + `,"content":[{"type":"resource_link","uri":"note.txt","name":"note"}]}`,
		"embedded resource, 2026 _meta": `{` + meta + `,"content":[{"type":"resource","resource":{"uri":"note.txt","text":"hi"}}]}`,
		// The same gap without any '/' at all (a 2025 answer, no
		// mimeType): it predates 4a909b3, which widened it to every
		// 2026-07-28 answer.
		"resource_link, no _meta": `{"content":[{"type":"resource_link","uri":"note.txt","name":"note"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			rt := route.New(nil, ws, ws.Dir)
			b := json.RawMessage(raw)
			res, err := mcp.ParseCallToolResult(&b)
			require.NoError(t, err)
			before, err := json.Marshal(res)
			require.NoError(t, err)
			rt.Translate(res, rt.Started())
			after, err := json.Marshal(res)
			require.NoError(t, err)
			require.NotEqual(t, string(before), string(after), "Translate rewrites the reference")
			require.Contains(t, string(after), workspace.VirtualRoot+"/workspace/note.txt")
			require.True(t, rt.NeedsTranslation([]byte(raw)), "a result Translate changes must not pass unread")
		})
	}
}
