package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// MCP authorization against a real, certified and independent OpenID
// provider (issue 30): oidc-provider 9.13.3 (panva/node-oidc-provider,
// internal/testdata/npm/oidc_provider.mjs) with resource indicators and
// JWT access tokens, opaque tokens and introspection, dynamic client
// registration and key withdrawal, driven by the TypeScript SDK's own
// OAuth client as a host would.

const (
	opHostClient = "mcp-host"
	opRedirect   = "http://127.0.0.1:9/callback"
	opRSClient   = "mcpflow-rs"
	opRSSecret   = "introspection-s3cret-51c0"
)

type opEnv struct {
	op   *testenv.OIDCProvider
	base string
	logs *testenv.SyncBuffer
}

// startOPEnv runs oidc-provider and mcpflow (serve + worker) accepting its
// tokens: JWTs checked with its keys (refetched at least every second, so
// that a withdrawn key stops verifying within a second and a fetch), opaque
// ones by introspection; its client id is an audience (as for providers
// that put the client id in "aud"), and offline_access and openid are
// advertised beside the required mcp:tools.
func startOPEnv(t *testing.T) *opEnv {
	t.Helper()
	op := testenv.StartOIDCProvider(t, testenv.OIDCProviderOptions{
		PublicClient: opHostClient, RedirectURI: opRedirect,
		IntrospectionClient: opRSClient, IntrospectionSecret: opRSSecret,
		// Longer than jwks_max_age_seconds: mcpflow's bound wins.
		JWKSCacheControl: "public, max-age=600",
	})
	cfgPath := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\nworkspace: { root: ws }\n", demoTaskExt(demoHTTP(t)))
	raw, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	addr := regexp.MustCompile(`server: \{ addr: "([^"]+)"`).FindStringSubmatch(string(raw))[1]
	base := "http://" + addr
	cfg := strings.Replace(string(raw), "shutdown_timeout_seconds: 2 }", fmt.Sprintf("shutdown_timeout_seconds: 2, public_url: %q }", base), 1)
	cfg = strings.Replace(cfg, "  users: [", fmt.Sprintf(`  oidc:
    - name: op
      issuer: %q
      user_prefix: op.
      audiences: [%q]
      required_scopes: [mcp:tools]
      advertised_scopes: [openid, offline_access]
      jwks_min_refresh_seconds: 1
      jwks_max_age_seconds: 1
      introspection_client_id: %q
      introspection_client_secret: %q
  users: [`, op.Issuer, opHostClient, opRSClient, opRSSecret), 1)
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	logs := &testenv.SyncBuffer{}
	m := startMain(t, ModeDev, cfgPath, logs)
	require.Equal(t, base, m.URL())
	waitReady(t, m)
	return &opEnv{op: op, base: base, logs: logs}
}

// signIn runs the TypeScript SDK's OAuth client against mcpURL (client ""
// registers itself) and returns its steps and the tokens it got.
func (e *opEnv) signIn(t *testing.T, mcpURL, client string) ([]map[string]any, map[string]string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens.json")
	input, err := json.Marshal(map[string]any{"tokensFile": file})
	require.NoError(t, err)
	steps := testenv.RunOAuthClient(t, mcpURL, client, opRedirect, "oauth", string(input))
	raw, err := os.ReadFile(file)
	require.NoError(t, err, "%v", steps)
	var tokens map[string]string
	require.NoError(t, json.Unmarshal(raw, &tokens))
	require.NotEmpty(t, tokens["access_token"])
	return steps, tokens
}

// initialize posts an MCP initialize to mcpURL with token and returns the
// status and WWW-Authenticate.
func initialize(t *testing.T, mcpURL, token string) (int, string) {
	t.Helper()
	code, challenge, _ := send(t, "POST", mcpURL, token, initializeBody)
	return code, challenge
}

func TestOIDCProviderCertified(t *testing.T) {
	e := startOPEnv(t)
	require.Contains(t, e.logs.String(), fmt.Sprintf(`msg="identity provider configured" provider=op issuer=%s audiences=[%s] user_prefix=op.`, e.op.Issuer, opHostClient))

	// A host that registers itself (RFC 7591) signs in for a thread's
	// URL: a JWT access token for that resource, and, offline_access
	// being advertised, a refresh token.
	jwtURL := e.base + "/mcp/threads/op-jwt"
	steps, tokens := e.signIn(t, jwtURL, "")
	unauth := testenv.Step(steps, "unauthorized")
	require.Equal(t, fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp/threads/op-jwt", scope="mcp:tools openid offline_access"`, e.base),
		unauth["wwwAuthenticate"], "%v", steps)
	reg := testenv.Step(steps, "registration")
	require.NotNil(t, reg, "%v", steps)
	require.NotEmpty(t, reg["clientId"])
	require.Equal(t, "none", reg["tokenEndpointAuthMethod"])
	authz := testenv.Step(steps, "authorize")
	require.Equal(t, jwtURL, authz["resource"], "%v", authz)
	require.ElementsMatch(t, []string{"mcp:tools", "openid", "offline_access"}, strings.Fields(authz["scope"].(string)))
	tok := testenv.Step(steps, "token")
	require.Equal(t, true, tok["refreshToken"], "offline_access gets a refresh token: %v", tok)
	claims := tok["claims"].(map[string]any)
	require.Equal(t, e.op.Issuer, claims["iss"])
	require.Equal(t, jwtURL, claims["aud"])
	require.Equal(t, "alice", claims["sub"])
	require.Contains(t, strings.Fields(claims["scope"].(string)), "mcp:tools")
	require.Contains(t, testenv.Step(steps, "tools/list")["tools"], "demo_submit_job", "%v", steps)
	// The token is for that thread only.
	code, challenge := initialize(t, e.base+"/mcp/threads/other", tokens["access_token"])
	require.Equal(t, 401, code)
	require.Contains(t, challenge, `error="invalid_token"`)

	// The pre-registered client's ID token (aud = its client id, which is
	// an accepted audience; no at_hash, c_hash nor typ) is no access
	// token: 401 invalid_token, not 403.
	_, hostTokens := e.signIn(t, jwtURL, opHostClient)
	require.NotEmpty(t, hostTokens["id_token"])
	code, challenge = initialize(t, jwtURL, hostTokens["id_token"])
	require.Equal(t, 401, code, challenge)
	require.Contains(t, challenge, `error="invalid_token"`)
	require.Contains(t, e.logs.String(), `reason="invalid access token: token type (provider op)"`)

	// For a resource it issues opaque tokens for, the token is checked by
	// introspection.
	opaqueURL := e.base + "/mcp/threads/opaque-1"
	steps, opaque := e.signIn(t, opaqueURL, "")
	require.Nil(t, testenv.Step(steps, "token")["claims"], "not a JWT: %v", steps)
	require.Contains(t, testenv.Step(steps, "tools/list")["tools"], "demo_submit_job", "%v", steps)
	code, _ = initialize(t, e.base+"/mcp/threads/opaque-2", opaque["access_token"])
	require.Equal(t, 401, code, "the introspection answer's aud is checked")

	// The provider rotates its key and withdraws the old one: a token it
	// signed (verified, and cached) stops verifying within
	// jwks_max_age_seconds (1) and a fetch, though the key set says
	// max-age=600; a token of the new key verifies.
	old := tokens["access_token"]
	code, _ = initialize(t, jwtURL, old)
	require.Equal(t, 200, code)
	oldKID := e.op.Keys(t).Signing
	newKID := e.op.Rotate(t)
	e.op.Withdraw(t, oldKID)
	require.Equal(t, []string{newKID}, e.op.Keys(t).Published)
	require.Eventually(t, func() bool {
		code, _ := initialize(t, jwtURL, old)
		return code == 401
	}, 30*time.Second, 100*time.Millisecond, "a withdrawn key stops verifying")
	require.Contains(t, e.logs.String(), `reason="invalid access token: signature (provider op)"`)
	steps, _ = e.signIn(t, jwtURL, opHostClient)
	require.Contains(t, testenv.Step(steps, "tools/list")["tools"], "demo_submit_job", "%v", steps)

	// Nothing the provider issued, nor the introspection secret, reached
	// the log.
	for _, secret := range []string{old, hostTokens["id_token"], opaque["access_token"], tokens["refresh_token"], opRSSecret} {
		require.NotContains(t, e.logs.String(), secret)
	}
}
