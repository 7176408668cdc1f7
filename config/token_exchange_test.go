package config

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The token-exchange grant (RFC 8693): the URN and its short alias load
// (the alias as the URN), with audience, scope, resource and optional
// client authentication.
func TestOAuthTokenExchangeAccepted(t *testing.T) {
	t.Parallel()
	for _, grant := range []string{GrantTokenExchange, "token_exchange"} {
		ext, _, err := loadJSON(t, serverJSON(`{"type": "http", "url": "http://x/mcp", "oauth": {
			"token_url": "https://idp.example/token", "grant_type": "`+grant+`", "client_id": "gw", "client_secret": "$CS",
			"audience": "https://mcp.example", "scope": "mcp.read", "extra_token_params": {"resource": "https://mcp.example/mcp"}}}`),
			mapEnv(map[string]string{"CS": "gw-secret"}))
		require.NoError(t, err, grant)
		require.Equal(t, &OAuth{
			Enabled: true, TokenURL: "https://idp.example/token", GrantType: GrantTokenExchange,
			ClientID: "gw", ClientSecret: "gw-secret", Audience: "https://mcp.example", Scope: "mcp.read",
			TokenField: "access_token", TokenTypeField: "token_type", ExpiresInField: "expires_in",
			DefaultTokenType: "Bearer", RefreshSkewSeconds: 60,
			ExtraTokenParams: map[string]string{"resource": "https://mcp.example/mcp"}, Extra: NewObject(),
		}, ext.Servers[0].OAuth, grant)
	}

	// Client authentication is optional; sse works like http; a null
	// or empty refresh_token is no refresh token.
	for _, server := range []string{
		`{"type": "sse", "url": "http://x/sse", "oauth": {"token_url": "http://127.0.0.1:8080/token", "grant_type": "token_exchange", "audience": "a"}}`,
		`{"transport": "http", "url": "http://x/mcp", "oauth": {"token_url": "https://idp/token", "grant_type": "token_exchange", "refresh_token": null}}`,
		`{"type": "http", "url": "http://x/mcp", "oauth": {"token_url": "https://idp/token", "grant_type": "token_exchange", "refresh_token": ""}}`,
	} {
		ext, _, err := loadJSON(t, serverJSON(server), noEnv)
		require.NoError(t, err, server)
		o := ext.Servers[0].OAuth
		require.Equal(t, GrantTokenExchange, o.GrantType)
		require.Empty(t, o.ClientID)
		require.Empty(t, o.ClientSecret)
	}
}

func TestOAuthTokenExchangeRefused(t *testing.T) {
	t.Parallel()
	bad := []struct{ server, want string }{
		{`{"type": "http", "url": "http://x", "oauth": {"grant_type": "token_exchange"}}`,
			"mcpServers.demo.oauth.token_url: is required"},
		{`{"type": "http", "url": "http://x", "oauth": {"token_url": "", "grant_type": "token_exchange"}}`,
			"mcpServers.demo.oauth.token_url: the token-exchange grant sends callers' access tokens to token_url: it must be an absolute https URL (http only for a loopback host)"},
		{`{"type": "http", "url": "http://x", "oauth": {"token_url": "https://idp/token", "grant_type": "token_exchange"}, "task_toolsets": [{"name": "job", "submit_tool": "s", "status_tool": "g", "cancel_tool": "c"}]}`,
			"mcpServers.demo.task_toolsets: cannot be used with oauth.grant_type token_exchange: a durable task's steps run later without the caller, so there is no caller token to exchange for them"},
		{`{"type": "http", "url": "http://x", "oauth": {"token_url": "https://idp/token", "grant_type": "token_exchange"}, "native_tasks": true}`,
			"mcpServers.demo.native_tasks: cannot be used with oauth.grant_type token_exchange: a durable task's steps run later without the caller, so there is no caller token to exchange for them"},
		{`{"type": "http", "url": "http://x", "oauth": {"token_url": "http://idp.example.com/token", "grant_type": "token_exchange"}}`,
			"mcpServers.demo.oauth.token_url: the token-exchange grant sends callers' access tokens to token_url: it must be an absolute https URL (http only for a loopback host)"},
		{`{"type": "http", "url": "http://x", "oauth": {"token_url": "/token", "grant_type": "token_exchange"}}`,
			"mcpServers.demo.oauth.token_url: the token-exchange grant sends callers' access tokens to token_url: it must be an absolute https URL (http only for a loopback host)"},
		{`{"type": "http", "url": "http://x", "oauth": {"token_url": "https://idp/token", "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "refresh_token": "$RT"}}`,
			`mcpServers.demo.oauth.refresh_token: must not be set with the token-exchange grant: the subject token is always the signed-in caller's access token (remove it; through the admin API send "" to clear it)`},
		{`{"command": "npx", "args": ["srv"], "oauth": {"token_url": "https://idp/token", "grant_type": "token_exchange"}}`,
			"mcpServers.demo.oauth.grant_type: the token-exchange grant applies to sse/http MCP servers only: a stdio server's pooled process is shared, while an exchanged token belongs to one caller"},
		{`{"type": "stdio", "command": "npx", "enabled": false, "oauth": {"enabled": false, "token_url": "https://idp/token", "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange"}}`,
			"mcpServers.demo.oauth.grant_type: the token-exchange grant applies to sse/http MCP servers only: a stdio server's pooled process is shared, while an exchanged token belongs to one caller"},
		{`{"type": "http", "url": "http://x", "oauth": {"token_url": "https://idp/token", "grant_type": "Token_Exchange"}}`,
			`mcpServers.demo.oauth.grant_type: must be "client_credentials", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange" or "token_exchange" (got "Token_Exchange")`},
	}
	env := mapEnv(map[string]string{"RT": "rt-secret-value"})
	for _, tc := range bad {
		_, path, err := loadJSON(t, serverJSON(tc.server), env)
		require.EqualError(t, err, path+": "+tc.want, tc.server)
		require.NotContains(t, err.Error(), "rt-secret-value")
	}
}

// The admin API masks a token-exchange block like the others: the client
// secret is null, extra_token_params values are "***"; it refuses a
// token-exchange block on a stdio server and keeps the alias as written.
func TestAdminTokenExchangeBlock(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, `{"mcpServers": {"x": {"type": "http", "url": "http://127.0.0.1:9/mcp",
		"oauth": {"token_url": "https://idp/token", "grant_type": "token_exchange", "client_id": "gw",
			"client_secret": "gw-secret-stored", "audience": "https://mcp", "extra_token_params": {"resource": "https://mcp/r"},
			"actorToken": "actor-secret"}}}}`)
	v := getView(t, a)
	o := v["x"].(map[string]any)["oauth"].(map[string]any)
	require.Equal(t, "token_exchange", o["grant_type"])
	require.Equal(t, "https://mcp", o["audience"])
	require.Nil(t, o["client_secret"])
	require.Nil(t, o["refresh_token"])
	require.Equal(t, map[string]any{"resource": "***"}, o["extra_token_params"])
	require.Equal(t, "***", o["actorToken"])
	b, err := a.MCPConfig(context.Background())
	require.NoError(t, err)
	require.NotContains(t, string(b), "gw-secret-stored")
	require.NotContains(t, string(b), "actor-secret")

	// A GET → PUT round trip keeps the stored secrets.
	require.NoError(t, put(t, a, v))
	stored := storedServer(t, path, "x")["oauth"].(map[string]any)
	require.Equal(t, "gw-secret-stored", stored["client_secret"])
	require.Equal(t, "actor-secret", stored["actorToken"])

	stdio := map[string]any{"s": map[string]any{"type": "stdio", "command": "npx", "args": []any{"srv"},
		"oauth": map[string]any{"token_url": "https://idp/token", "grant_type": GrantTokenExchange}}}
	err = put(t, a, stdio)
	require.ErrorContains(t, err, "the token-exchange grant applies to sse/http MCP servers only")
}
