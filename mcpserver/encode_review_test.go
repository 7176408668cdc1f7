package mcpserver

import (
	"encoding/json"
	"testing"
)

// Holds: encodeResponse decodes to json.Marshal's value (or fails with it) for
// odd ids, blocks with CR/tab whitespace, invalid UTF-8, lone surrogates,
// duplicate keys and U+2028 or "<", on both revisions.
func TestReviewEncodeResponseEdgeCases(t *testing.T) {
	blocks := []string{"{\"t\":\"\xff\xfe\"}", "{\"t\":\"\xed\xa0\x80\"}", "\r{\"a\"\t:\r1}\r", `{"a":1,"a":2}`, "{\"t\":\"\u2028<\"}", `1e999`, `-0`, `"\ud800"`}
	ids := []string{`1`, ` 1 `, `"\u2028"`, `1e400`, `null`, `[1]`}
	for _, id := range ids {
		for _, bl := range blocks {
			for _, sc := range []json.RawMessage{nil, json.RawMessage(bl)} {
				res := callToolResult{Content: []json.RawMessage{json.RawMessage(bl)}}
				if sc != nil {
					res.StructuredContent = sc
				}
				for _, result := range []any{res, modernCallResult{callToolResult: res, ResultType: resultComplete}} {
					r := newResponse(json.RawMessage(id), result, nil)
					want, werr := json.Marshal(r)
					got, gerr := encodeResponse(r)
					if (werr == nil) != (gerr == nil) {
						t.Errorf("err mismatch %q %q: %v %v", id, bl, werr, gerr)
						continue
					}
					if werr != nil {
						continue
					}
					var w, g any
					e1 := json.Unmarshal(want, &w)
					e2 := json.Unmarshal(got, &g)
					wb, _ := json.Marshal(w)
					gb, _ := json.Marshal(g)
					if (e1 == nil) != (e2 == nil) || string(wb) != string(gb) {
						t.Errorf("diff %q %q:\n%q %v\n%q %v", id, bl, want, e1, got, e2)
					}
				}
			}
		}
	}
}
