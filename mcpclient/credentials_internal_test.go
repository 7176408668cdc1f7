package mcpclient

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Spec §6 #30: the override helper.
func TestMergeHeaders(t *testing.T) {
	t.Parallel()
	base := map[string]string{"Authorization": "X", "Accept": "json"}
	got := mergeHeaders(base, map[string]string{"authorization": "Y"})
	require.Equal(t, map[string]string{"Authorization": "Y", "Accept": "json"}, got, "the base spelling is kept, unrelated headers stay")
	require.Equal(t, map[string]string{"Authorization": "X", "Accept": "json"}, base, "the base is not changed")

	pinned := map[string]string{"authorization": "X"}
	require.Equal(t, map[string]string{"authorization": "Z"}, mergeHeaders(pinned, map[string]string{"AUTHORIZATION": "Z"}))

	require.Equal(t, map[string]string{"X-New": "v"}, mergeHeaders(nil, map[string]string{"X-New": "v"}), "a nil base is fine")
	require.Equal(t, map[string]string{}, mergeHeaders(nil, nil))

	// Layers apply in order; each keeps the spelling already in use.
	layered := mergeHeaders(mergeHeaders(map[string]string{"authorization": "static"}, map[string]string{"Authorization": "oauth"}),
		map[string]string{"AUTHORIZATION": "per-user", "X-Api-Key": "k"})
	require.Equal(t, map[string]string{"authorization": "per-user", "X-Api-Key": "k"}, layered)
}

func TestOAuthExpiresIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   any
		want int64
	}{
		{nil, 3600}, {"abc", 3600}, {true, 3600}, {"120", 120}, {"0", 1}, {"-5", 1},
		{json.Number("30"), 30}, {json.Number("30.0"), 30}, {json.Number("12.5"), 3600}, {json.Number("1e400"), 3600},
	} {
		require.Equal(t, tc.want, oauthExpiresIn(tc.in), "%v", tc.in)
	}
}
