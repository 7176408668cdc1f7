package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadServiceOIDC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeFile(t, dir, "config.yaml", `
server:
  public_url: https://mcpflow.example.com
auth:
  oidc:
    - name: keycloak
      issuer: https://kc.example.com/realms/agents
      audiences: [mcpflow]
      required_scopes: [mcp:tools]
      advertised_scopes: [offline_access]
      admin_claim: groups
      admin_values: [mcpflow-admins]
      user_prefix: kc.
    - name: entra
      issuer: https://login.microsoftonline.com/tid/v2.0
      user_prefix: entra.
      algorithms: [RS256]
      clock_skew_seconds: 30
      user_claim: oid
      admin_scope: mcpflow.admin
`)
	s, err := LoadService(file, mapEnv(nil))
	require.NoError(t, err)
	require.Equal(t, "https://mcpflow.example.com", s.Server.PublicURL)
	require.Len(t, s.Auth.OIDC, 2)
	kc, entra := s.Auth.OIDC[0], s.Auth.OIDC[1]
	require.Equal(t, OIDCProvider{
		Name: "keycloak", Issuer: "https://kc.example.com/realms/agents", Audiences: []string{"mcpflow"},
		UserPrefix:     "kc.",
		RequiredScopes: []string{"mcp:tools"}, AdvertisedScopes: []string{"offline_access"}, AdminClaim: "groups", AdminValues: []string{"mcpflow-admins"},
	}, kc, "unset keys stay zero: the verifier applies its defaults")
	require.Equal(t, []string{"RS256"}, entra.Algorithms)
	require.Equal(t, 30, entra.ClockSkewSeconds)
	require.Equal(t, "oid", entra.UserClaim)
	require.Equal(t, "mcpflow.admin", entra.AdminScope)

	// The environment holds the list as JSON and replaces the file's.
	s, err = LoadService(file, mapEnv(map[string]string{
		"MCPFLOW_AUTH_OIDC": `[{"name": "dex", "issuer": "http://127.0.0.1:5556/dex", "user_claim": "email"}]`,
	}))
	require.NoError(t, err)
	require.Len(t, s.Auth.OIDC, 1)
	require.Equal(t, "dex", s.Auth.OIDC[0].Name)
	require.Equal(t, "email", s.Auth.OIDC[0].UserClaim)
}

func TestLoadServiceOIDCErrors(t *testing.T) {
	t.Parallel()
	const base = "server: { public_url: \"https://m.example.com\" }\n"
	tests := []struct {
		name, yaml string
		env        map[string]string
		want       string
	}{
		{"public url with path", "server: { public_url: \"https://m.example.com/mcp\" }\n", nil, `server.public_url: must be an origin like https://mcpflow.example.com (scheme://host[:port], no path) (got "https://m.example.com/mcp")`},
		{"public url http", "server: { public_url: \"http://m.example.com\" }\n", nil, `server.public_url: must be https (http only for a loopback host) (got "http://m.example.com")`},
		{"public url upper case", "server: { public_url: \"https://MCPFlow.example.com\" }\n", nil, `server.public_url: must be written as clients normalise it: a lower-case host and no default port (got "https://MCPFlow.example.com")`},
		{"public url default port", "server: { public_url: \"https://m.example.com:443\" }\n", nil, `server.public_url: must be written as clients normalise it`},
		{"no public url", "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\" } ] }\n", nil, "auth.oidc: needs server.public_url"},
		{"name", base + "auth: { oidc: [ { name: \"a b\", issuer: \"https://i.example.com\" } ] }\n", nil, `auth.oidc[0].name: must be 1 to 64 characters`},
		{"duplicate name", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\" }, { name: a, issuer: \"https://j.example.com\" } ] }\n", nil, `auth.oidc[1].name: duplicate provider name "a" (also auth.oidc[0])`},
		{"issuer http", base + "auth: { oidc: [ { name: a, issuer: \"http://i.example.com\" } ] }\n", nil, `auth.oidc[0].issuer: must be the provider's https issuer URL`},
		{"issuer relative", base + "auth: { oidc: [ { name: a, issuer: \"/realms/x\" } ] }\n", nil, `auth.oidc[0].issuer: must be the provider's https issuer URL`},
		{"hs256", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", algorithms: [RS256, HS256] } ] }\n", nil, `auth.oidc[0].algorithms[1]: must be one of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA (got "HS256")`},
		{"none", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", algorithms: [none] } ] }\n", nil, `auth.oidc[0].algorithms[0]: must be one of`},
		{"skew", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", clock_skew_seconds: 301 } ] }\n", nil, `auth.oidc[0].clock_skew_seconds: must be between 1 and 300, or 0 for the default of 60 (got 301)`},
		{"refresh", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", jwks_min_refresh_seconds: 3601 } ] }\n", nil, `auth.oidc[0].jwks_min_refresh_seconds: must be between 1 and 3600, or 0 for the default of 10 (got 3601)`},
		{"admin both", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", admin_scope: x, admin_claim: groups, admin_values: [g] } ] }\n", nil, `auth.oidc[0]: set admin_scope or admin_claim, not both`},
		{"admin values", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", admin_claim: groups } ] }\n", nil, `auth.oidc[0].admin_values: must list the values`},
		{"admin claim", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", admin_values: [g] } ] }\n", nil, `auth.oidc[0].admin_claim: must name the claim`},
		{"scope with space", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", required_scopes: [\"a b\"] } ] }\n", nil, `auth.oidc[0].required_scopes[0]: must be one scope`},
		{"prefix", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", user_prefix: \"a:\" } ] }\n", nil, `auth.oidc[0].user_prefix: must be 1 to 30 characters`},
		{"jwks url", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", jwks_url: \"http://i.example.com/keys\" } ] }\n", nil, `auth.oidc[0].jwks_url: must be an https URL`},
		{"unknown key", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", client_secret: s } ] }\n", nil, `auth.oidc[0].client_secret: unknown key`},
		{"env not json", base, map[string]string{"MCPFLOW_AUTH_OIDC": "{"}, `env MCPFLOW_AUTH_OIDC: must be a JSON list`},
		{"env not a list", base, map[string]string{"MCPFLOW_AUTH_OIDC": `{"name": "a"}`}, `env MCPFLOW_AUTH_OIDC: auth.oidc: must be a list (got a mapping)`},
		{"env unknown key", base, map[string]string{"MCPFLOW_AUTH_OIDC": `[{"name": "a", "issuer": "https://i.example.com", "x": 1}]`}, `env MCPFLOW_AUTH_OIDC: auth.oidc[0].x: unknown key (line 1)`},
		{"providers share ids", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\" }, { name: b, issuer: \"https://j.example.com\", user_prefix: b. } ] }\n", nil,
			`auth.oidc[0].user_prefix: "" lets its users have the ids of auth.oidc[1] ("b", user_prefix "b."): a user "x" there is user "b.x" here; give each provider a user_prefix that does not start another's (e.g. "a."), or set share_user_ids: true on both`},
		{"same prefix", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", user_prefix: p. }, { name: b, issuer: \"https://j.example.com\", user_prefix: p. } ] }\n", nil,
			`auth.oidc[1].user_prefix: "p." lets its users have the ids of auth.oidc[0]`},
		{"one side shares", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", share_user_ids: true }, { name: b, issuer: \"https://j.example.com\", user_prefix: b. } ] }\n", nil,
			`auth.oidc[0].user_prefix: "" lets its users have the ids of auth.oidc[1]`},
		{"static user", base + "auth: { users: [ { id: alice, token: t0k3n-alice-0123456789 } ], oidc: [ { name: a, issuer: \"https://i.example.com\" } ] }\n", nil,
			`auth.oidc[0].user_prefix: "" lets a user of provider "a" have the id of static user "alice" (auth.users[0]): they would be one user; give the provider a user_prefix no static user id starts with (e.g. "a."), or set share_user_ids: true if that is meant`},
		{"static user with the prefix", base + "auth: { users: [ { id: kc.alice, token: t0k3n-alice-0123456789 } ], oidc: [ { name: a, issuer: \"https://i.example.com\", user_prefix: kc. } ] }\n", nil,
			`have the id of static user "kc.alice"`},
		{"audiences without scopes", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", audiences: [mcp-host] } ] }\n", nil,
			`auth.oidc[0].audiences: need required_scopes: an audience that is a client id is also the audience of that client's ID tokens`},
		{"advertised scope with space", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", advertised_scopes: [\"a b\"] } ] }\n", nil, `auth.oidc[0].advertised_scopes[0]: must be one scope`},
		{"max age", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", jwks_max_age_seconds: 86401 } ] }\n", nil, `auth.oidc[0].jwks_max_age_seconds: must be between 1 and 86400, or 0 for the default of 300 (got 86401)`},
		{"max age under min refresh", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", jwks_max_age_seconds: 5 } ] }\n", nil, `auth.oidc[0].jwks_max_age_seconds: must be at least jwks_min_refresh_seconds (10) (got 5)`},
		{"introspection without secret", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", introspection_client_id: rs } ] }\n", nil, `auth.oidc[0].introspection_client_secret: must be set with introspection_client_id`},
		{"introspection without id", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", introspection_client_secret: s3cr3t } ] }\n", nil, `auth.oidc[0].introspection_client_id: must be set with introspection_client_secret`},
		{"introspect jwts alone", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", introspect_jwts: true } ] }\n", nil, `auth.oidc[0].introspect_jwts: needs introspection_client_id`},
		{"introspection url http", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", introspection_client_id: rs, introspection_client_secret: s3cr3t, introspection_url: \"http://i.example.com/introspect\" } ] }\n", nil, `auth.oidc[0].introspection_url: must be an https URL`},
		{"introspection cache", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", introspection_client_id: rs, introspection_client_secret: s3cr3t, introspection_cache_seconds: 3601 } ] }\n", nil, `auth.oidc[0].introspection_cache_seconds: must be between 1 and 3600`},
		{"two introspecting", base + "auth: { oidc: [ { name: a, issuer: \"https://i.example.com\", user_prefix: a., introspection_client_id: rs, introspection_client_secret: s3cr3t }, { name: b, issuer: \"https://j.example.com\", user_prefix: b., introspection_client_id: rs, introspection_client_secret: s3cr3t } ] }\n", nil, `auth.oidc[1].introspection_client_id: introspection is configured for auth.oidc[0] too: at most one provider may introspect tokens`},
		{"env bad entry", base, map[string]string{"MCPFLOW_AUTH_OIDC": `[{"name": "a", "issuer": "https://i.example.com", "algorithms": ["HS256"]}]`}, `auth.oidc[0].algorithms[0]: must be one of`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := writeFile(t, t.TempDir(), "config.yaml", tc.yaml)
			_, err := LoadService(file, mapEnv(tc.env))
			require.Error(t, err)
			require.Contains(t, strings.ReplaceAll(err.Error(), file, "FILE"), tc.want)
		})
	}
	// A loopback issuer and public URL may be http (tests, make dev).
	file := writeFile(t, t.TempDir(), "config.yaml", "server: { public_url: \"http://127.0.0.1:8080\" }\nauth: { oidc: [ { name: a, issuer: \"http://localhost:5556\" } ] }\n")
	_, err := LoadService(filepath.Clean(file), mapEnv(nil))
	require.NoError(t, err)

	// Shared ids when the operator says so; disjoint prefixes need nothing.
	for _, yaml := range []string{
		base + "auth: { users: [ { id: alice, token: t0k3n-alice-0123456789 } ], oidc: [ { name: a, issuer: \"https://i.example.com\", share_user_ids: true }, { name: b, issuer: \"https://j.example.com\", share_user_ids: true } ] }\n",
		base + "auth: { users: [ { id: alice, token: t0k3n-alice-0123456789 } ], oidc: [ { name: a, issuer: \"https://i.example.com\", user_prefix: a. }, { name: b, issuer: \"https://j.example.com\", user_prefix: b. } ] }\n",
	} {
		_, err := LoadService(writeFile(t, t.TempDir(), "config.yaml", yaml), mapEnv(nil))
		require.NoError(t, err, yaml)
	}
}
