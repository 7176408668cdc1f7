package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/internal/testsupport/testidp"
)

// MCP authorization with a real identity provider (issue 26): mcpflow as an
// OAuth 2.1 protected resource of internal/testsupport/testidp, an OpenID provider built
// on zitadel/oidc's OP, started on loopback by each test.

const (
	oidcHostClient   = "mcp-host" // the MCP hosts' pre-registered public client
	oidcExchangeID   = "mcpflow-exchange"
	oidcExchangeKey  = "exchange-secret-3b9f"
	oidcUserPrefix   = "idp."
	oidcUpstreamAud  = "https://upstream.example/mcp"
	oidcRequiredScop = "mcp:tools"
)

type oidcEnv struct {
	*taskEnv
	idp  *testidp.IdP
	base string // server.public_url
	logs *testenv.SyncBuffer
}

// startOIDCEnv runs mcpflow (serve + worker, durable tasks on) with the
// demo task server, static tokens and the test identity provider, whose
// "groups" claim makes admins and whose tokens need mcp:tools. The server
// "exchanged" is the demo server again, reached with a token exchanged
// for oidcUpstreamAud.
func startOIDCEnv(t *testing.T) *oidcEnv {
	t.Helper()
	idp := testidp.Start(t, testidp.Options{})
	idp.RegisterClient(testidp.Client{ID: oidcHostClient, RedirectURIs: []string{"http://127.0.0.1/callback", "http://127.0.0.1/oauth/callback"},
		GrantTypes: []string{testidp.GrantAuthorizationCode}})
	idp.RegisterClient(testidp.Client{ID: oidcExchangeID, Secret: oidcExchangeKey, GrantTypes: []string{testidp.GrantTokenExchange}})
	demo := demoHTTP(t)
	ext := fmt.Sprintf(`{"mcpServers": {
  "demo": {"type": "http", "url": %q, "tool_call_timeout": 10, %s},
  "exchanged": {"type": "http", "url": %q, "tool_call_timeout": 10,
    "oauth": {"grant_type": "token_exchange", "token_url": %q, "client_id": %q, "client_secret": %q, "audience": %q}}
}}`, demo, jobToolset, demo, idp.Issuer()+"/oauth/token", oidcExchangeID, oidcExchangeKey, oidcUpstreamAud)
	cfgPath := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, input_required_poll_interval_seconds: 5 }\nworkspace: { root: ws }\n", ext)
	raw, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	addr := regexp.MustCompile(`server: \{ addr: "([^"]+)"`).FindStringSubmatch(string(raw))[1]
	base := "http://" + addr
	cfg := strings.Replace(string(raw), "shutdown_timeout_seconds: 2 }", fmt.Sprintf("shutdown_timeout_seconds: 2, public_url: %q }", base), 1)
	cfg = strings.Replace(cfg, "  users: [", fmt.Sprintf(`  oidc:
    - name: testidp
      issuer: %q
      user_prefix: %q
      required_scopes: [%q]
      admin_claim: groups
      admin_values: [%q]
      jwks_min_refresh_seconds: 1
  users: [`, idp.Issuer(), oidcUserPrefix, oidcRequiredScop, testidp.AdminGroup), 1)
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	logs := &testenv.SyncBuffer{}
	m := startMain(t, ModeDev, cfgPath, logs)
	require.Equal(t, base, m.URL())
	return &oidcEnv{taskEnv: &taskEnv{m: waitReady(t, m)}, idp: idp, base: base, logs: logs}
}

// login signs user in at the provider for resource (the real authorization
// code flow with PKCE) and returns the access token.
func (e *oidcEnv) login(t *testing.T, user, resource string, scopes ...string) string {
	t.Helper()
	if scopes == nil {
		scopes = []string{oidcRequiredScop}
	}
	return e.idp.LoginAs(t, user, oidcHostClient, "http://127.0.0.1/callback", resource, scopes...)
}

// send makes one request with token and returns the status, the
// WWW-Authenticate header and the body.
func send(t *testing.T, method, url, token, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

const initializeBody = `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}`

// TestOIDCTypeScriptSDKClient: the official TypeScript SDK's OAuth client,
// an MCP host independent of mcpflow, meets the 401, discovers mcpflow's
// Protected Resource Metadata and the provider, signs in (authorization
// code + PKCE, resource = the thread's MCP URL), connects with the token
// and runs a durable task to its result; the task is the signed-in user's.
func TestOIDCTypeScriptSDKClient(t *testing.T) {
	e := startOIDCEnv(t)
	mcpURL := e.base + "/mcp/threads/oidc-ts"
	steps := testenv.RunOAuthClient(t, mcpURL, oidcHostClient, "http://127.0.0.1:9/callback", "oauth",
		`{"tool": "demo_submit_job", "arguments": {"duration_seconds": 1}}`)

	unauth := testenv.Step(steps, "unauthorized")
	require.EqualValues(t, 401, unauth["status"], "%v", steps)
	require.Equal(t, fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp/threads/oidc-ts", scope="mcp:tools"`, e.base), unauth["wwwAuthenticate"])
	disc := testenv.Step(steps, "discovery")
	require.Equal(t, e.base+"/.well-known/oauth-protected-resource/mcp/threads/oidc-ts", disc["resourceMetadataUrl"], "%v", disc)
	require.Equal(t, mcpURL, disc["resourceMetadata"].(map[string]any)["resource"])
	require.Equal(t, []any{e.idp.Issuer()}, disc["resourceMetadata"].(map[string]any)["authorization_servers"])
	authz := testenv.Step(steps, "authorize")
	require.Equal(t, mcpURL, authz["resource"], "%v", authz)
	require.Equal(t, "S256", authz["pkce"].(map[string]any)["method"])
	require.Equal(t, true, authz["pkce"].(map[string]any)["challengeMatchesVerifier"])
	claims := testenv.Step(steps, "token")["claims"].(map[string]any)
	require.Equal(t, testidp.Alice, claims["sub"])
	require.Contains(t, claims["aud"], mcpURL)
	require.Contains(t, testenv.Step(steps, "tools/list")["tools"], "demo_submit_job")
	require.Equal(t, "task", testenv.Step(steps, "call")["kind"], "%v", steps)
	outcome := testenv.Step(steps, "outcome")
	require.Equal(t, "completed", outcome["status"], "%v", steps)

	// The task belongs to the signed-in user (prefixed id), on REST too,
	// with a token for mcpflow itself.
	tok := e.login(t, testidp.Alice, e.base)
	code, body := get(t, e.base+"/api/threads/oidc-ts/mcp-tasks", tok)
	require.Equal(t, 200, code, "%v", body)
	tasks := body["tasks"].([]any)
	require.Len(t, tasks, 1)
	require.Equal(t, "completed", tasks[0].(map[string]any)["status"])
	// Bob, signed in at the same provider, does not see alice's thread.
	code, _ = get(t, e.base+"/api/threads/oidc-ts/mcp-tasks", e.login(t, testidp.Bob, e.base))
	require.Equal(t, 404, code)
	// Nothing the provider issued reached the log.
	require.NotContains(t, e.logs.String(), tok)
}

// TestOIDCInspectorCLI: the MCP Inspector's CLI discovers authorization
// from mcpflow's 401, signs in at the provider with the pre-registered
// client and lists the tools.
func TestOIDCInspectorCLI(t *testing.T) {
	e := startOIDCEnv(t)
	mcpURL := e.base + "/mcp"
	var authURL *url.URL
	res := testenv.RunInspectorCLI(t, testenv.InspectorOptions{
		URL: mcpURL, ClientID: oidcHostClient, CallbackURL: "http://127.0.0.1:0/oauth/callback",
		Authorize: func(u string) {
			var err error
			authURL, err = url.Parse(u)
			require.NoError(t, err)
			resp, err := http.Get(u) // the browser: the provider's login redirects to the Inspector's callback
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode)
		},
		Timeout: 90 * time.Second,
	})
	require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr)
	require.NotNil(t, authURL, "the Inspector printed no authorization URL: %s", res.Stderr)
	require.True(t, strings.HasPrefix(authURL.String(), e.idp.Issuer()+"/"), authURL.String())
	q := authURL.Query()
	require.Equal(t, mcpURL, q.Get("resource"))
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.Equal(t, oidcHostClient, q.Get("client_id"))
	require.Contains(t, strings.Fields(q.Get("scope")), oidcRequiredScop)
	var names []string
	for _, tl := range res.Result(t)["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	require.Contains(t, names, "demo_submit_job")
}

// TestOIDCBadTokens: every kind of bad token is refused with 401
// invalid_token and the same message, on the REST API and on the MCP
// endpoint; the log names the reason and never the token. A good token
// made the same way passes, so each case fails for its own reason.
func TestOIDCBadTokens(t *testing.T) {
	e := startOIDCEnv(t)
	mine := e.base + "/mcp/threads/mine"
	valid := func(aud ...string) map[string]any {
		c := e.idp.Claims(testidp.Alice, aud...)
		c["scope"] = oidcRequiredScop
		return c
	}
	with := func(c map[string]any, k string, v any) map[string]any { c[k] = v; return c }
	now := time.Now()

	good := e.idp.Forge(t, testidp.ForgeSigned, valid(mine))
	code, _, body := send(t, "POST", mine, good, initializeBody)
	require.Equal(t, 200, code, body)

	cases := []struct {
		name, token string
	}{
		{"wrong audience", e.idp.Forge(t, testidp.ForgeSigned, valid("https://other.example/mcp"))},
		{"token for another thread", e.idp.Forge(t, testidp.ForgeSigned, valid(e.base+"/mcp/threads/other"))},
		{"token for the provider's client only", e.idp.Forge(t, testidp.ForgeSigned, valid(oidcHostClient))},
		{"wrong issuer", e.idp.Forge(t, testidp.ForgeSigned, with(valid(mine), "iss", "https://evil.example"))},
		{"issuer with a trailing slash", e.idp.Forge(t, testidp.ForgeSigned, with(valid(mine), "iss", e.idp.Issuer()+"/"))},
		{"expired", e.idp.Forge(t, testidp.ForgeSigned, with(valid(mine), "exp", now.Add(-10*time.Minute).Unix()))},
		{"no expiry", e.idp.Forge(t, testidp.ForgeSigned, func() map[string]any { c := valid(mine); delete(c, "exp"); return c }())},
		{"not yet valid", e.idp.Forge(t, testidp.ForgeSigned, with(valid(mine), "nbf", now.Add(10*time.Minute).Unix()))},
		{"alg none", e.idp.Forge(t, testidp.ForgeAlgNone, valid(mine))},
		{"HS256 keyed with the public key (PEM)", e.idp.Forge(t, testidp.ForgeHS256PublicKeyPEM, valid(mine))},
		{"HS256 keyed with the public key (DER)", e.idp.Forge(t, testidp.ForgeHS256PublicKeyDER, valid(mine))},
		{"unknown kid", e.idp.Forge(t, testidp.ForgeUnknownKID, valid(mine))},
		{"tampered payload", e.idp.Forge(t, testidp.ForgeTamperedPayload, valid(mine))},
		{"tampered signature", e.idp.Forge(t, testidp.ForgeTamperedSignature, valid(mine))},
		{"no user claim", e.idp.Forge(t, testidp.ForgeSigned, with(valid(mine), "sub", ""))},
		{"not a JWT", "opaque-token-" + strings.Repeat("x", 20)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, target := range []struct{ method, url, body string }{
				{"POST", mine, initializeBody},
				{"GET", e.base + "/api/threads/mine/tools", ""},
			} {
				code, challenge, body := send(t, target.method, target.url, tc.token, target.body)
				require.Equal(t, 401, code, "%s %s: %s", target.method, target.url, body)
				require.Contains(t, challenge, `error="invalid_token"`)
				require.Contains(t, challenge, `resource_metadata="`+e.base+"/.well-known/oauth-protected-resource")
				want := `{"error": {"code": "unauthenticated", "message": "invalid bearer token"}}`
				if target.url == mine {
					want = `{"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "invalid bearer token", "data": {"code": "unauthenticated"}}}`
				}
				require.JSONEq(t, want, body)
			}
			require.NotContains(t, e.logs.String(), tc.token)
		})
	}
	require.Contains(t, e.logs.String(), "access token refused")

	// A valid token without the required scope: 403 insufficient_scope.
	noScope := e.idp.Forge(t, testidp.ForgeSigned, e.idp.Claims(testidp.Alice, mine))
	code, challenge, body := send(t, "POST", mine, noScope, initializeBody)
	require.Equal(t, 403, code, body)
	require.Equal(t, fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp/threads/mine", scope="mcp:tools", error="insufficient_scope"`, e.base), challenge)

	// Admins come from the groups claim: carol manages the configuration,
	// alice may not.
	code, _ = get(t, e.base+"/api/mcp/config", e.login(t, testidp.Carol, e.base))
	require.Equal(t, 200, code)
	code, _ = get(t, e.base+"/api/mcp/config", e.login(t, testidp.Alice, e.base))
	require.Equal(t, 403, code)
	// Static tokens keep working beside the provider.
	code, _ = get(t, e.base+"/api/mcp/config", testAdminToken)
	require.Equal(t, 200, code)
	code, _ = get(t, e.base+"/api/threads/static/tools", testUserToken)
	require.Equal(t, 200, code)
}

// TestOIDCKeyRotation: the provider rotates its signing key mid-test;
// tokens of the new key are accepted after one fetch of its keys, tokens
// of the old key still are while it is published, and a flood of tokens
// with unknown key ids does not make mcpflow hammer the provider.
func TestOIDCKeyRotation(t *testing.T) {
	e := startOIDCEnv(t)
	before := e.login(t, testidp.Alice, e.base)
	code, _ := get(t, e.base+"/api/threads/rot/tools", before)
	require.Equal(t, 200, code)
	hits := e.idp.JWKSHits()

	e.idp.Rotate()
	after := e.login(t, testidp.Alice, e.base)
	hBefore, _ := testidp.Decode(t, before)
	hAfter, _ := testidp.Decode(t, after)
	require.NotEqual(t, hBefore["kid"], hAfter["kid"])
	// A key published within jwks_min_refresh_seconds of the last fetch
	// is taken once that second has passed.
	require.Eventually(t, func() bool {
		code, _ := get(t, e.base+"/api/threads/rot/tools", after)
		return code == 200
	}, 10*time.Second, 200*time.Millisecond)
	require.Greater(t, e.idp.JWKSHits(), hits, "the new key was fetched")
	code, _ = get(t, e.base+"/api/threads/rot/tools", before)
	require.Equal(t, 200, code, "the old key is still published")

	hits = e.idp.JWKSHits()
	for range 50 {
		code, _ := get(t, e.base+"/api/threads/rot/tools", e.idp.Forge(t, testidp.ForgeUnknownKID, e.idp.Claims(testidp.Alice, e.base)))
		require.Equal(t, 401, code)
	}
	// jwks_min_refresh_seconds is 1: 50 requests in well under a few
	// seconds fetch the keys a handful of times at most, not 50.
	require.LessOrEqual(t, e.idp.JWKSHits()-hits, int64(10))
}

// TestOIDCTokenExchange: a server configured with the token-exchange grant
// gets, for a signed-in caller, a token the provider exchanged for the
// server's audience (RFC 8693), never the caller's own token; a caller
// with a static token is refused for it with a tool error.
func TestOIDCTokenExchange(t *testing.T) {
	e := startOIDCEnv(t)
	tok := e.login(t, testidp.Alice, e.base)
	code, _, body := send(t, "POST", e.base+"/api/threads/tx/tools/exchanged_headers/call", tok, `{"arguments": {}}`)
	require.Equal(t, 200, code, body)
	require.NotContains(t, body, tok, "the caller's token went upstream")
	var out struct {
		Structured struct {
			Headers map[string][]string `json:"headers"`
		} `json:"structured_content"`
		IsError bool `json:"is_error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.False(t, out.IsError, body)
	authz := out.Structured.Headers["Authorization"]
	require.Len(t, authz, 1, body)
	exchanged, ok := strings.CutPrefix(authz[0], "Bearer ")
	require.True(t, ok, authz[0])
	_, claims := testidp.Decode(t, exchanged)
	require.Equal(t, testidp.Alice, claims["sub"])
	require.Contains(t, claims["aud"], oidcUpstreamAud)
	require.NotContains(t, claims["aud"], e.base)

	// The server's tools are listed for the signed-in user (with their
	// exchanged token), not for a static user, whose listing says why.
	code, _, body = send(t, "GET", e.base+"/api/threads/tx/tools", tok, "")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"name":"exchanged_headers"`)
	code, _, body = send(t, "GET", e.base+"/api/threads/tx2/tools", testUserToken, "")
	require.Equal(t, 200, code, body)
	require.NotContains(t, body, `"name":"exchanged_headers"`)
	require.Contains(t, body, `{"server":"exchanged","reason":"its credential is exchanged per caller (RFC 8693): its tools are listed for callers signed in with the identity provider only"}`)

	// A static user has no token to exchange.
	code, _, body = send(t, "POST", e.base+"/api/threads/tx2/tools/exchanged_headers/call", testUserToken, `{"arguments": {}}`)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"is_error":true`)
	require.Contains(t, body, "needs a caller signed in with the identity provider")
	require.NotContains(t, e.logs.String(), tok)
	require.NotContains(t, e.logs.String(), exchanged)
	require.NotContains(t, e.logs.String(), oidcExchangeKey)
}

// TestOIDCTokenStaysOutOfHistory: a durable task a signed-in user starts
// runs to its end as that user, and neither the access token nor its
// signature appears in the workflow's Temporal history or in the log.
func TestOIDCTokenStaysOutOfHistory(t *testing.T) {
	e := startOIDCEnv(t)
	tok := e.login(t, testidp.Alice, e.base)
	code, _, body := send(t, "POST", e.base+"/api/threads/hist/tools/demo_submit_job/call", tok, `{"arguments": {"duration_seconds": 1}}`)
	require.Equal(t, 200, code, body)
	var out struct {
		Structured struct {
			TaskID string `json:"task_id"`
		} `json:"structured_content"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.NotEmpty(t, out.Structured.TaskID, body)
	require.Eventually(t, func() bool {
		_, detail := get(t, e.base+"/api/threads/hist/mcp-tasks/"+out.Structured.TaskID, tok)
		return detail["status"] == "completed"
	}, 60*time.Second, 200*time.Millisecond)
	hist := historyBytes(t, out.Structured.TaskID)
	require.Contains(t, string(hist), oidcUserPrefix+testidp.Alice, "the task runs as the signed-in user")
	sig := tok[strings.LastIndex(tok, ".")+1:]
	require.NotContains(t, string(hist), sig)
	require.NotContains(t, string(hist), tok[:strings.LastIndex(tok, ".")])
	require.NotContains(t, e.logs.String(), sig)
}

// TestOIDCModernClient: the 2026-07-28 revision (stateless) at the same
// URLs takes the same tokens: the TypeScript SDK v2 client with the Tasks
// extension, holding a token the provider issued for the thread's MCP URL,
// runs a durable task to its result; without a token it gets the
// challenge naming the metadata.
func TestOIDCModernClient(t *testing.T) {
	testenv.Node2026(t)
	e := startOIDCEnv(t)
	mcpURL := e.base + "/mcp/threads/oidc-2026"
	code, challenge, _ := send(t, "POST", mcpURL, "", `{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}`)
	require.Equal(t, 401, code)
	require.Equal(t, fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp/threads/oidc-2026", scope="mcp:tools"`, e.base), challenge)

	tok := e.login(t, testidp.Bob, mcpURL)
	steps := testenv.RunMCP2026Client(t, mcpURL, tok, "task", `{"tool": "demo_submit_job", "arguments": {"duration_seconds": 1}}`)
	require.Equal(t, "task", testenv.Step(steps, "call")["kind"], "%v", steps)
	require.Equal(t, "completed", testenv.Step(steps, "outcome")["status"], "%v", steps)
	// The same token is for that thread only.
	code, challenge, _ = send(t, "POST", e.base+"/mcp/threads/elsewhere", tok, `{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}`)
	require.Equal(t, 401, code)
	require.Contains(t, challenge, `error="invalid_token"`)
}

// A scope a provider advertises but does not require (offline_access, for
// a refresh token) is in the metadata and the challenges with the required
// ones, so that a host asks for it (MCP scope selection takes the
// challenge's scope), while tokens without it still pass (issue 30). Each
// provider is logged at start.
func TestOAuthResourceAdvertisesScopes(t *testing.T) {
	cfg := config.DefaultService()
	cfg.Server.PublicURL = "http://127.0.0.1:8080"
	// Nothing listens there: the background discovery fails at once.
	cfg.Auth.OIDC = []config.OIDCProvider{
		{Name: "kc", Issuer: "http://127.0.0.1:1/realms/a", UserPrefix: "kc.", RequiredScopes: []string{"mcp:tools"}, AdvertisedScopes: []string{"offline_access", "mcp:tools"}},
		{Name: "okta", Issuer: "http://127.0.0.1:1/okta", UserPrefix: "okta.", RequiredScopes: []string{"mcp:tools"}, AdvertisedScopes: []string{"offline_access", "openid"}},
	}
	logs := &testenv.SyncBuffer{}
	o, err := oauthResource(t.Context(), &cfg, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	require.Equal(t, []string{"mcp:tools", "offline_access", "openid"}, o.Scopes)
	require.Contains(t, logs.String(), `msg="identity provider configured" provider=kc issuer=http://127.0.0.1:1/realms/a audiences=[] user_prefix=kc.`)
	require.Contains(t, logs.String(), `msg="identity provider configured" provider=okta issuer=http://127.0.0.1:1/okta`)
}
