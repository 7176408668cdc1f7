package session

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// completeAnswer agrees with decoding the answer: where it says complete,
// the top-level resultType is "complete" or absent.
func TestCompleteAnswer(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		fast bool
	}{
		{`{"content":[],"resultType":"complete"}`, true},
		{` { "resultType" : "complete" , "content":[]}`, true},
		{`{"content":[],"structuredContent":{"resultType":"complete"}}`, true},
		{`{"content":[],"resultType":"task","taskId":"t"}`, false},
		{`{"content":[],"resultType":"input_required"}`, false},
		{`{"resultType":"complete","structuredContent":{"resultType":"task"}}`, false},
		{`{"content":[{"type":"text","text":"\"resultType\":\"task\""}],"resultType":"complete"}`, true},
		{`{"content":[],"x":"resultType"}`, false},
		{`{"content":[],"resultType":"completed"}`, false},
		{`["resultType"]`, false},
		{`{"content":[]}`, false},
	} {
		got := completeAnswer([]byte(tc.raw))
		require.Equal(t, tc.fast, got, tc.raw)
		if got {
			var probe struct {
				ResultType *string `json:"resultType"`
			}
			require.NoError(t, json.Unmarshal([]byte(tc.raw), &probe))
			require.True(t, probe.ResultType == nil || *probe.ResultType == "complete", tc.raw)
		}
	}
}
