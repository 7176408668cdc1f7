package credential

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/config"
)

// Spec §6 #30: the override helper.
func TestMergeHeaders(t *testing.T) {
	t.Parallel()
	base := map[string]string{"Authorization": "X", "Accept": "json"}
	got := MergeHeaders(base, map[string]string{"authorization": "Y"})
	require.Equal(t, map[string]string{"Authorization": "Y", "Accept": "json"}, got, "the base spelling is kept, unrelated headers stay")
	require.Equal(t, map[string]string{"Authorization": "X", "Accept": "json"}, base, "the base is not changed")

	pinned := map[string]string{"authorization": "X"}
	require.Equal(t, map[string]string{"authorization": "Z"}, MergeHeaders(pinned, map[string]string{"AUTHORIZATION": "Z"}))

	require.Equal(t, map[string]string{"X-New": "v"}, MergeHeaders(nil, map[string]string{"X-New": "v"}), "a nil base is fine")
	require.Equal(t, map[string]string{}, MergeHeaders(nil, nil))

	// Layers apply in order; each keeps the spelling already in use.
	layered := MergeHeaders(MergeHeaders(map[string]string{"authorization": "static"}, map[string]string{"Authorization": "oauth"}),
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

// Token responses: JSON whatever the label says, form-encoded bodies as a
// fallback, anything else an error.
func TestOAuthFields(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"application/json", "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", ""} {
		got, err := oauthFields(ct, []byte(`{"access_token":"a=b","expires_in":30}`))
		require.NoError(t, err, ct)
		require.Equal(t, "a=b", got["access_token"], ct)
		require.Equal(t, json.Number("30"), got["expires_in"], ct)
	}
	for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain"} {
		got, err := oauthFields(ct, []byte("access_token=tok&token_type=bearer"))
		require.NoError(t, err, ct)
		require.Equal(t, map[string]any{"access_token": "tok", "token_type": "bearer"}, got, ct)
	}
	for _, tc := range []struct{ ct, body string }{
		{"application/json", "access_token=tok"}, {"application/json", "null"}, {"application/json", `["x"]`},
		{"text/plain", ""}, {"text/html", "<html>"},
	} {
		_, err := oauthFields(tc.ct, []byte(tc.body))
		require.Error(t, err, "%s %q", tc.ct, tc.body)
	}
}

// An edit elsewhere in an oauth block keeps the rotated refresh token (the
// configured one may already be spent); a new refresh_token in the config
// replaces it.
func TestOAuthEditKeepsRotatedRefreshToken(t *testing.T) {
	t.Parallel()
	var o oauthTokens
	cfg := &config.OAuth{Enabled: true, TokenURL: "http://127.0.0.1:1/token", GrantType: config.GrantRefreshToken, RefreshToken: "seed", Scope: "a"}
	first := o.source("s", cfg)
	rotated := "rotated-1"
	o.sources["s"].src.refresh.Store(&rotated)

	edited := *cfg
	edited.Scope = "b"
	require.NotSame(t, first, o.source("s", &edited), "an edited block gets a fresh cache")
	require.Equal(t, "rotated-1", *o.sources["s"].src.refresh.Load())

	reseeded := edited
	reseeded.RefreshToken = "new-seed"
	o.source("s", &reseeded)
	require.Equal(t, "new-seed", *o.sources["s"].src.refresh.Load())
}
