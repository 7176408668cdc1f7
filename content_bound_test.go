package mcpflow

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func textBlock(t *testing.T, s string) json.RawMessage {
	b, err := StrictJSON(map[string]string{"type": "text", "text": s})
	require.NoError(t, err)
	return b
}

// TestToolResultBound: a result within the bound is left alone; one over
// it keeps its blocks in order while they fit, cuts the text block that
// does not (at a character boundary), drops what follows and the
// structured content, and says so in a last text block; the whole stays
// within the bound.
func TestToolResultBound(t *testing.T) {
	small := &ToolResult{Content: []json.RawMessage{textBlock(t, "hi")}}
	require.False(t, small.Bound(100, 2048))
	require.Len(t, small.Content, 1)

	big := strings.Repeat("é<", 1500) // 4500 bytes, 2 of them escaped-prone
	img := json.RawMessage(`{"type":"image","data":"` + strings.Repeat("A", 3000) + `","mimeType":"image/png"}`)
	r := &ToolResult{Content: []json.RawMessage{textBlock(t, "first"), textBlock(t, big), img}, StructuredContent: map[string]any{"n": 1}, IsError: true}
	require.True(t, r.Bound(9000, 2048))
	require.True(t, r.IsError, "the result's error flag stays")
	require.Nil(t, r.StructuredContent)
	require.Len(t, r.Content, 3, "first, the cut text, the notice")
	require.JSONEq(t, string(textBlock(t, "first")), string(r.Content[0]))
	var cut struct{ Type, Text string }
	require.NoError(t, json.Unmarshal(r.Content[1], &cut))
	require.Equal(t, "text", cut.Type)
	require.True(t, strings.HasPrefix(big, cut.Text) && len(cut.Text) > 500 && len(cut.Text) < len(big), "cut at a character boundary: %d bytes", len(cut.Text))
	var notice struct{ Text string }
	require.NoError(t, json.Unmarshal(r.Content[2], &notice))
	require.Equal(t, "[mcpflow: the server's result (9000 bytes) was cut to fit server.max_content_bytes (2048): 1 of 3 content blocks kept whole; structuredContent dropped]", notice.Text)
	b, err := StrictJSON(map[string]any{"content": r.Content, "isError": true})
	require.NoError(t, err)
	require.LessOrEqual(t, len(b), 2048)

	// A first block that is not text and does not fit is dropped.
	r = &ToolResult{Content: []json.RawMessage{img}}
	require.True(t, r.Bound(len(img)+20, 1024))
	require.Len(t, r.Content, 1)
	require.Contains(t, string(r.Content[0]), "0 of 1 content blocks kept whole")

	// No bound, and an input_required answer, are left alone.
	r = &ToolResult{Content: []json.RawMessage{img}}
	require.False(t, r.Bound(1<<30, 0))
	r = &ToolResult{InputRequired: json.RawMessage(`{}`)}
	require.False(t, r.Bound(1<<30, 1024))
}

// TestBoundResourceRead: contents over the bound are cut as tool results
// are, a blob is dropped rather than cut, a notice item names the URI,
// _meta says how large the server's answer was, and the server's own
// _meta keys stay.
func TestBoundResourceRead(t *testing.T) {
	in := json.RawMessage(`{"contents":[{"uri":"x://a","text":"short"}]}`)
	require.Equal(t, string(in), string(BoundResourceRead(in, "x://a", 1024)))

	text := strings.Repeat("ab\n", 2000)
	raw, err := StrictJSON(map[string]any{"_meta": map[string]any{"k": "v"}, "contents": []any{
		map[string]any{"uri": "x://a", "mimeType": "text/plain", "text": text},
		map[string]any{"uri": "x://a", "blob": strings.Repeat("QUJD", 500)},
	}})
	require.NoError(t, err)
	out := BoundResourceRead(raw, "x://a", 2048)
	require.LessOrEqual(t, len(out), 2048)
	var res struct {
		Meta     map[string]json.RawMessage `json:"_meta"`
		Contents []map[string]string        `json:"contents"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	require.JSONEq(t, `"v"`, string(res.Meta["k"]))
	require.JSONEq(t, `{"serverBytes":`+itoa(len(raw))+`,"limitBytes":2048}`, string(res.Meta["io.mcpflow/truncated"]))
	require.Len(t, res.Contents, 2, "the cut text and the notice; the blob is dropped")
	require.True(t, strings.HasPrefix(text, res.Contents[0]["text"]) && res.Contents[0]["text"] != "")
	require.Equal(t, "text/plain", res.Contents[0]["mimeType"])
	require.Equal(t, "x://a", res.Contents[1]["uri"])
	require.Contains(t, res.Contents[1]["text"], "0 of 2 contents kept whole")

	require.Equal(t, "not json", string(BoundResourceRead(json.RawMessage("not json"), "x://a", 4)), "unreadable: as it is")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
