package mcpflow

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// DefaultMaxContentBytes is server.max_content_bytes' default: what an
// ordinary tool result or a resource read may pass to its caller.
const DefaultMaxContentBytes = 8 << 20

// contentNoticeRoom is what the notice of a cut and the JSON around the
// kept blocks may take of the bound.
const contentNoticeRoom = 512

// cutBlocks keeps blocks in order within budget bytes (each as encoded):
// the first that does not fit is cut when it carries text (its "text",
// at a character boundary, to what fits), or dropped; every later one is
// dropped. It returns the blocks kept and how many of them were cut or
// dropped in all.
func cutBlocks(blocks []json.RawMessage, budget int) ([]json.RawMessage, int) {
	out := make([]json.RawMessage, 0, len(blocks))
	for i, b := range blocks {
		if len(b) <= budget {
			out = append(out, b)
			budget -= len(b) + 1
			continue
		}
		if cut, ok := cutText(b, budget); ok {
			out = append(out, cut)
		}
		return out, len(blocks) - i
	}
	return out, 0
}

// cutText returns block with its "text" cut so that the block's encoding
// fits in budget bytes; false when block has no text or nothing of it fits.
func cutText(block json.RawMessage, budget int) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(block, &m) != nil {
		return nil, false
	}
	var text string
	if raw, ok := m["text"]; !ok || json.Unmarshal(raw, &text) != nil {
		return nil, false
	}
	delete(m, "text")
	rest, err := StrictJSON(m)
	if err != nil {
		return nil, false
	}
	room := budget - len(rest) - len(`,"text":""`)
	for room > 0 {
		cut := cutUTF8(text, room)
		enc, err := StrictJSON(cut)
		if err != nil {
			return nil, false
		}
		if len(enc) <= room+2 {
			m["text"] = enc
			b, err := StrictJSON(m)
			return b, err == nil && cut != ""
		}
		room -= (len(enc) - 2 - room) + 1 // escapes took more: cut more
	}
	return nil, false
}

// cutUTF8 is s cut to at most n bytes at a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// BoundToolResult cuts an ordinary tool result whose server answer was
// serverBytes long, when that is over limit bytes: content blocks are kept
// in order while they fit (the first that does not is cut if it is text,
// else dropped), structuredContent is dropped, and a last text block says
// so, for the agent to see. It reports whether it cut. limit ≤ 0: none.
func (r *ToolResult) Bound(serverBytes, limit int) bool {
	if limit <= 0 || serverBytes <= limit || r == nil || len(r.InputRequired) > 0 {
		return false
	}
	kept, dropped := cutBlocks(r.Content, limit-contentNoticeRoom)
	structured := ""
	if r.StructuredContent != nil {
		structured = "; structuredContent dropped"
	}
	notice, _ := StrictJSON(map[string]string{"type": "text", "text": fmt.Sprintf(
		"[mcpflow: the server's result (%d bytes) was cut to fit server.max_content_bytes (%d): %d of %d content blocks kept whole%s]",
		serverBytes, limit, len(r.Content)-dropped, len(r.Content), structured)})
	r.Content, r.StructuredContent = append(kept, notice), nil
	return true
}

// BoundResourceRead cuts a resources/read result over limit bytes: its
// contents are kept in order while they fit (the first that does not is
// cut if it is text, else dropped, as a blob cut short is no longer the
// resource), a last text item for uri says so, and _meta
// "io.mcpflow/truncated" holds the sizes. A result within limit (or
// limit ≤ 0, or one that does not read as a result) is returned as it is.
func BoundResourceRead(raw json.RawMessage, uri string, limit int) json.RawMessage {
	if limit <= 0 || len(raw) <= limit {
		return raw
	}
	var res map[string]json.RawMessage
	var contents []json.RawMessage
	if json.Unmarshal(raw, &res) != nil || json.Unmarshal(res["contents"], &contents) != nil {
		return raw
	}
	kept, dropped := cutBlocks(contents, limit-contentNoticeRoom-len(uri))
	notice, _ := StrictJSON(map[string]string{"uri": uri, "mimeType": "text/plain", "text": fmt.Sprintf(
		"[mcpflow: the server's result (%d bytes) was cut to fit server.max_content_bytes (%d): %d of %d contents kept whole]",
		len(raw), limit, len(contents)-dropped, len(contents))})
	res["contents"], _ = StrictJSON(append(kept, notice))
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(res["_meta"], &meta)
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta["io.mcpflow/truncated"], _ = json.Marshal(map[string]int{"serverBytes": len(raw), "limitBytes": limit})
	res["_meta"], _ = json.Marshal(meta)
	out, err := StrictJSON(res)
	if err != nil {
		return raw
	}
	return out
}
