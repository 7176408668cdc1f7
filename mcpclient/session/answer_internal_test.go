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
		{`{"content":[]}`, true},
		{`{"content":[],"structuredContent":{"resultType":"task"}}`, true},
		{`{"resultType":"complete","structuredContent":{"resultType":"task"}}`, true},
		{`{"content":[{"type":"text","text":"\"resultType\":\"task\""}],"resultType":"complete"}`, true},
		{`{"content":[],"x":"resultType","taskId":"t"}`, true},
		{`{"content":[],"resultType":"task","taskId":"t"}`, false},
		{`{"content":[],"resultType":"input_required"}`, false},
		{`{"content":[],"resultType":"completed"}`, false},
		{`{"ResultType":"task","taskId":"t","structuredContent":{"resultType":"complete"}}`, false},
		{`{"result\u0054ype":"task","taskId":"t"}`, false},
		{`{"resultType":"complete","resulttype":"task","taskId":"t"}`, false},
		{`{"content":[],"resultType":"complete","taskId":5}`, false},
		{`{"content":[],"resultType":"complete"`, false},
		{`["resultType"]`, false},
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
