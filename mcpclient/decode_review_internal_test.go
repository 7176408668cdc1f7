package mcpclient

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Review: decodeResult against json.Unmarshal on repeated and mistyped
// members (each wrong type ends the scan, so these hold), and a block's
// bytes being its own after readResult.
func TestReviewDecodeResultEdges(t *testing.T) {
	for _, s := range []string{
		`{"content":5,"content":[{}]}`,
		`{"content":[{}],"isError":"x","isError":true}`,
		`{"content":[{}],"isError":true,"isError":null}`,
		`{"content":[{}],"content":null}`,
		`{"content":[],"structuredContent":null}`,
		`{"Content":[{}],"content":[{"a":1}]}`,
		`null`, `[]`, ` {"content" : [ {} , {"b":[1,"]"]} ] } `,
	} {
		var want resultParts
		wantErr := json.Unmarshal([]byte(s), &want)
		got, err := decodeResult(json.RawMessage(s))
		if (wantErr == nil) != (err == nil) || err == nil && !reflect.DeepEqual(want, got) {
			t.Errorf("%s: json.Unmarshal %+v %v, decodeResult %+v %v", s, want, wantErr, got, err)
		}
	}
}
