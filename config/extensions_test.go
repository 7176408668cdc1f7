package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var exampleEnv = mapEnv(map[string]string{
	"GITHUB_TOKEN":            "ghp_example",
	"MCP_OAUTH_CLIENT_ID":     "client-1",
	"MCP_OAUTH_CLIENT_SECRET": "client-secret-1",
	"SERVICE_TOKEN_ALICE":     "Bearer alice-token",
	"MCP_DISCOVERY_TOKEN":     "Bearer discovery",
	"tenant_id":               "must-not-be-used",
})

// loadJSON writes content to a temp extensions_config.json and loads it.
func loadJSON(t *testing.T, content string, env func(string) (string, bool)) (*Extensions, string, error) {
	t.Helper()
	path := writeFile(t, t.TempDir(), "extensions_config.json", content)
	ext, err := LoadExtensions(path, env)
	return ext, path, err
}

// serverJSON wraps one server object in a document.
func serverJSON(server string) string {
	return `{"mcpServers": {"demo": ` + server + `}}`
}

func TestLoadExtensionsSpecExample(t *testing.T) {
	t.Parallel()
	ext, err := LoadExtensions("testdata/extensions_example.json", exampleEnv)
	require.NoError(t, err)
	require.Empty(t, ext.Warnings)

	names := make([]string, len(ext.Servers))
	for i, s := range ext.Servers {
		names[i] = s.Name
	}
	require.Equal(t, []string{"github", "playwright", "postgres", "semantic-scholar", "secure-http", "shared-service", "tenant-gateway", "report-service"}, names)
	require.Equal(t, []string{"acme_mcp.audit:build_audit_interceptor"}, ext.MCPInterceptors)
	require.Equal(t, map[string]Skill{"writer": {Enabled: false}}, ext.Skills)
	require.Equal(t, 0, ext.Extra.Len())

	gh, ok := ext.Lookup("github")
	require.True(t, ok)
	require.True(t, gh.Enabled)
	require.Equal(t, TransportStdio, gh.Type)
	require.Equal(t, "npx", gh.Command)
	require.Equal(t, []string{"-y", "@modelcontextprotocol/server-github"}, gh.Args)
	require.Equal(t, map[string]string{"GITHUB_TOKEN": "ghp_example"}, gh.Env)
	require.Equal(t, 60.0, *gh.ToolCallTimeout)
	require.True(t, gh.ToolNamePrefix)
	require.Equal(t, Routing{Mode: RoutingOff}, gh.Routing)
	require.NoError(t, gh.ConnectionProblem())

	s2, _ := ext.Lookup("semantic-scholar")
	require.True(t, s2.Enabled)
	require.False(t, s2.ToolNamePrefix)
	require.Equal(t, DefaultSessionInitTimeout, *s2.SessionInitTimeout)
	require.Nil(t, s2.ToolCallTimeout)

	pg, _ := ext.Lookup("postgres")
	require.Equal(t, Routing{Mode: RoutingPrefer, Priority: 50, Keywords: []string{"orders", "SQL", "table"}}, pg.Routing)
	require.Equal(t, Routing{Mode: RoutingPrefer, Priority: 100, Keywords: []string{"query database"}}, pg.EffectiveRouting("query"))
	require.Equal(t, pg.Routing, pg.EffectiveRouting("other"))

	sec, _ := ext.Lookup("secure-http")
	require.Equal(t, TransportHTTP, sec.Type)
	tr, _ := sec.Extra.Get("transport")
	require.Equal(t, "http", tr)
	require.Equal(t, &OAuth{
		Enabled: true, TokenURL: "https://auth.example.com/oauth/token", GrantType: GrantClientCredentials,
		ClientID: "client-1", ClientSecret: "client-secret-1", Scope: "mcp.read",
		TokenField: "access_token", TokenTypeField: "token_type", ExpiresInField: "expires_in",
		DefaultTokenType: "Bearer", RefreshSkewSeconds: 60, Extra: NewObject(),
	}, sec.OAuth)

	shared, _ := ext.Lookup("shared-service")
	require.Equal(t, &UserAuth{
		Enabled: true, Header: "Authorization", OnMissing: OnMissingDeny, Extra: NewObject(),
		Users: map[string]string{"alice-user-id": "Bearer alice-token", "bob-user-id": ""}, // unset → ""
	}, shared.UserAuth)

	tenant, _ := ext.Lookup("tenant-gateway")
	require.Equal(t, map[string]string{"Authorization": "Bearer discovery"}, tenant.Headers)
	require.Equal(t, &HeadersFromContext{
		Enabled: true, OnMissing: OnMissingDeny, Extra: NewObject(),
		Headers: map[string]string{"X-Tenant-Id": "tenant_id", "Authorization": "tenant_token"},
	}, tenant.HeadersFromContext)

	rep, _ := ext.Lookup("report-service")
	require.Equal(t, []TaskToolset{
		{Name: "report-generation", SubmitTool: "submit_report", StatusTool: "get_report_status", CancelTool: "cancel_report"},
		{Name: "data-export", SubmitTool: "start_export", StatusTool: "get_export_status", CancelTool: "cancel_export"},
	}, rep.TaskToolsets)
	d, ok := rep.SessionInitTimeoutDuration()
	require.True(t, ok)
	require.Equal(t, 60*time.Second, d)
}

func TestLoadExtensionsEmpty(t *testing.T) {
	t.Parallel()
	ext, err := LoadExtensions("", noEnv)
	require.NoError(t, err)
	require.Empty(t, ext.Servers)
	require.Empty(t, ext.Skills)
	raw, err := ext.Raw().MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, "{}", string(raw))

	ext, _, err = loadJSON(t, `{}`, noEnv)
	require.NoError(t, err)
	require.Empty(t, ext.Servers)

	_, err = LoadExtensions(filepath.Join(t.TempDir(), "missing.json"), noEnv)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestResolveEnvScenario39(t *testing.T) {
	t.Parallel()
	env := mapEnv(map[string]string{"MCP_TOKEN": "secret", "EMPTY": ""})
	in := []any{"--token", "$MCP_TOKEN", map[string]any{"nested": []any{"$MCP_TOKEN", "$MISSING"}}}
	require.Equal(t, []any{"--token", "secret", map[string]any{"nested": []any{"secret", ""}}}, ResolveEnv(in, env))
	// tuples (fixed string lists) likewise
	require.Equal(t, []string{"--token", "secret", ""}, ResolveEnv([]string{"--token", "$MCP_TOKEN", "$MISSING"}, env))
	// non-strings unchanged, no inline interpolation, set-but-empty is ""
	for _, v := range []any{nil, true, json.Number("5"), 3.5, "Bearer $MCP_TOKEN", "plain", "x$MCP_TOKEN"} {
		require.Equal(t, v, ResolveEnv(v, env))
	}
	require.Equal(t, "", ResolveEnv("$EMPTY", env))
	require.Equal(t, "", ResolveEnv("$", env))
	// ordered objects: keys never resolved, order kept, input untouched
	obj := NewObject()
	obj.Set("$MCP_TOKEN", "$MCP_TOKEN")
	obj.Set("a", []any{"$MCP_TOKEN"})
	got := ResolveEnv(obj, env).(*Object)
	require.Equal(t, []string{"$MCP_TOKEN", "a"}, got.Keys())
	v, _ := got.Get("$MCP_TOKEN")
	require.Equal(t, "secret", v)
	v, _ = obj.Get("$MCP_TOKEN")
	require.Equal(t, "$MCP_TOKEN", v)

	// through the loader
	ext, _, err := loadJSON(t, serverJSON(`{"command": "npx", "args": ["--token", "$MCP_TOKEN", "$MISSING", "Bearer $MCP_TOKEN"], "env": {"A": "$MCP_TOKEN"}}`), env)
	require.NoError(t, err)
	require.Equal(t, []string{"--token", "secret", "", "Bearer $MCP_TOKEN"}, ext.Servers[0].Args)
	require.Equal(t, map[string]string{"A": "secret"}, ext.Servers[0].Env)
	arg, _ := ext.Raw().Root.vals["mcpServers"].(*Object).vals["demo"].(*Object).Get("args")
	require.Equal(t, []any{"--token", "$MCP_TOKEN", "$MISSING", "Bearer $MCP_TOKEN"}, arg)
}

func TestHeadersFromContextValuesNotResolved(t *testing.T) {
	t.Parallel()
	env := mapEnv(map[string]string{"TENANT": "resolved!", "MODE": "passthrough", "ALICE": "Bearer a"})
	ext, _, err := loadJSON(t, serverJSON(`{"type": "http", "url": "https://x/mcp",
		"headers_from_context": {"headers": {"X-Tenant": "$TENANT"}, "on_missing": "$MODE", "note": "$TENANT"},
		"user_auth": {"users": {"alice": "$ALICE"}}}`), env)
	require.NoError(t, err)
	s := ext.Servers[0]
	require.Equal(t, map[string]string{"X-Tenant": "$TENANT"}, s.HeadersFromContext.Headers)
	require.Equal(t, OnMissingPassthrough, s.HeadersFromContext.OnMissing) // other keys resolve
	note, _ := s.HeadersFromContext.Extra.Get("note")
	require.Equal(t, "resolved!", note)
	require.Equal(t, map[string]string{"alice": "Bearer a"}, s.UserAuth.Users)
}

func TestTransportAlias(t *testing.T) {
	t.Parallel()
	tests := []struct {
		server        string
		want          string
		wantTransport any // raw transport extra, nil when absent
	}{
		{`{"transport": "sse", "url": "http://x"}`, TransportSSE, "sse"},
		{`{"transport": "http"}`, TransportHTTP, "http"},
		{`{"transport": "stdio", "command": "npx"}`, TransportStdio, "stdio"},
		{`{"type": "http", "transport": "sse"}`, TransportHTTP, "sse"},
		{`{}`, TransportStdio, nil},
		{`{"type": "", "transport": "sse"}`, TransportSSE, "sse"},
		{`{"type": null, "transport": "http"}`, TransportHTTP, "http"},
		{`{"transport": ""}`, TransportStdio, ""},
		{`{"transport": null}`, TransportStdio, nil},
		{`{"transport": false}`, TransportStdio, false},
		{`{"transport": 0}`, TransportStdio, json.Number("0")},
	}
	for _, tc := range tests {
		t.Run(tc.server, func(t *testing.T) {
			t.Parallel()
			ext, _, err := loadJSON(t, serverJSON(tc.server), noEnv)
			require.NoError(t, err)
			s := ext.Servers[0]
			require.Equal(t, tc.want, s.Type)
			tr, ok := s.Extra.Get("transport")
			require.Equal(t, tc.wantTransport, tr)
			require.Equal(t, strings.Contains(tc.server, `"transport"`), ok)
			require.Equal(t, strings.Contains(tc.server, `"transport"`), s.Extra.Len() == 1)
		})
	}

	bad := []struct{ server, want string }{
		{`{"type": "ws"}`, `mcpServers.demo.type: unsupported transport type "ws"; expected "stdio", "sse" or "http"`},
		{`{"type": "HTTP", "url": "http://x"}`, `mcpServers.demo.type: unsupported transport type "HTTP"; expected "stdio", "sse" or "http"`},
		{`{"transport": "streamable-http"}`, `mcpServers.demo.type: unsupported transport type "streamable-http" (from transport); expected "stdio", "sse" or "http"`},
		{`{"type": 5}`, `mcpServers.demo.type: must be a string (got 5)`},
		{`{"transport": true}`, `mcpServers.demo.transport: must be a string (got true)`},
	}
	for _, tc := range bad {
		t.Run(tc.server, func(t *testing.T) {
			t.Parallel()
			_, path, err := loadJSON(t, serverJSON(tc.server), noEnv)
			require.EqualError(t, err, path+": "+tc.want)
		})
	}
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"tool_call_timeout", "session_init_timeout"} {
		for _, tc := range []struct{ raw, got string }{
			{"NaN", "NaN"},
			{"Infinity", "Infinity"},
			{"-Infinity", "-Infinity"},
			{"0", "0"},
			{"0.0", "0.0"},
			{"-1", "-1"},
			{"true", "true"},
			{"false", "false"},
			{`"5"`, `"5"`},
			{"1e400", "1e400"},
			{"[]", "an array"},
			{"{}", "an object"},
		} {
			t.Run(key+"="+tc.raw, func(t *testing.T) {
				t.Parallel()
				_, path, err := loadJSON(t, serverJSON(`{"command": "npx", "`+key+`": `+tc.raw+`}`), noEnv)
				require.EqualError(t, err, fmt.Sprintf("%s: mcpServers.demo.%s: must be a finite number greater than 0 (got %s)", path, key, tc.got))
				var fe *FieldError
				require.ErrorAs(t, err, &fe)
				require.Equal(t, "mcpServers.demo."+key, fe.Field)
			})
		}
	}

	ext, _, err := loadJSON(t, `{"mcpServers": {
		"absent": {"command": "a"},
		"null": {"command": "a", "session_init_timeout": null, "tool_call_timeout": null},
		"set": {"command": "a", "session_init_timeout": 12.5, "tool_call_timeout": 0.25}}}`, noEnv)
	require.NoError(t, err)
	absent, null, set := ext.Servers[0], ext.Servers[1], ext.Servers[2]
	require.Equal(t, 60.0, *absent.SessionInitTimeout)
	require.Nil(t, absent.ToolCallTimeout)
	require.Nil(t, null.SessionInitTimeout) // explicit null = no bound
	require.Nil(t, null.ToolCallTimeout)
	_, bounded := null.SessionInitTimeoutDuration()
	require.False(t, bounded)
	_, bounded = null.ToolCallTimeoutDuration()
	require.False(t, bounded)
	d, _ := set.SessionInitTimeoutDuration()
	require.Equal(t, 12500*time.Millisecond, d)
	d, _ = set.ToolCallTimeoutDuration()
	require.Equal(t, 250*time.Millisecond, d)
}

func TestTaskToolsets(t *testing.T) {
	t.Parallel()
	toolset := func(name, submit, status, cancel string) string {
		return fmt.Sprintf(`{"name": %q, "submit_tool": %q, "status_tool": %q, "cancel_tool": %q}`, name, submit, status, cancel)
	}
	doc := func(server string, toolsets ...string) string {
		return fmt.Sprintf(`{"mcpServers": {%q: {"type": "http", "url": "http://x", "task_toolsets": [%s]}}}`, server, strings.Join(toolsets, ","))
	}
	tests := []struct {
		name, doc, want string
	}{
		{"same tool in two roles of one toolset", doc("s", toolset("a", "x", "x", "c")),
			"mcpServers.s.task_toolsets[0].status_tool: MCP task tool 'x' must be unique across task_toolsets and roles; it is configured as both a.submit_tool and a.status_tool"},
		{"same tool across toolsets", doc("s", toolset("a", "s1", "st1", "c1"), toolset("b", "s2", "st2", "st1")),
			"mcpServers.s.task_toolsets[1].cancel_tool: MCP task tool 'st1' must be unique across task_toolsets and roles; it is configured as both a.status_tool and b.cancel_tool"},
		{"blank name", doc("s", toolset("  ", "a", "b", "c")), "mcpServers.s.task_toolsets[0].name: MCP task toolset name must not be empty"},
		{"empty name", doc("s", toolset("", "a", "b", "c")), "mcpServers.s.task_toolsets[0].name: MCP task toolset name must not be empty"},
		{"long name", doc("s", toolset(strings.Repeat("n", 256), "a", "b", "c")), "mcpServers.s.task_toolsets[0].name: must be at most 255 characters (got 256)"},
		{"empty role", doc("s", toolset("a", "a", "", "c")), "mcpServers.s.task_toolsets[0].status_tool: must not be empty"},
		{"missing role", doc("s", `{"name": "a", "submit_tool": "a", "status_tool": "b"}`), "mcpServers.s.task_toolsets[0].cancel_tool: is required"},
		{"extra key", doc("s", `{"name": "a", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c", "poll": 5}`),
			"mcpServers.s.task_toolsets[0].poll: unknown key (task_toolsets entries allow only name, submit_tool, status_tool, cancel_tool and input_tool)"},
		{"not a list", `{"mcpServers": {"s": {"task_toolsets": {}}}}`, "mcpServers.s.task_toolsets: must be a list of objects (got an object)"},
		{"empty input tool", doc("s", `{"name": "a", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c", "input_tool": ""}`),
			"mcpServers.s.task_toolsets[0].input_tool: must not be empty"},
		{"blank input tool", doc("s", `{"name": "a", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c", "input_tool": "  "}`),
			"mcpServers.s.task_toolsets[0].input_tool: must not be empty"},
		{"null input tool", doc("s", `{"name": "a", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c", "input_tool": null}`),
			"mcpServers.s.task_toolsets[0].input_tool: must be a string (got null)"},
		{"input tool not a string", doc("s", `{"name": "a", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c", "input_tool": 5}`),
			"mcpServers.s.task_toolsets[0].input_tool: must be a string (got a number)"},
		{"input tool in another role", doc("s", `{"name": "a", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c", "input_tool": "b"}`),
			"mcpServers.s.task_toolsets[0].input_tool: MCP task tool 'b' must be unique across task_toolsets and roles; it is configured as both a.status_tool and a.input_tool"},
		{"input tool across toolsets", doc("s", `{"name": "a", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c", "input_tool": "i"}`, toolset("b", "i", "e", "f")),
			"mcpServers.s.task_toolsets[1].submit_tool: MCP task tool 'i' must be unique across task_toolsets and roles; it is configured as both a.input_tool and b.submit_tool"},
		{"blank server name", doc("  ", toolset("a", "a", "b", "c")), "mcpServers.  : MCP task server name must contain 1 to 128 characters"},
		{"long server name", doc(strings.Repeat("s", 129), toolset("a", "a", "b", "c")), "mcpServers." + strings.Repeat("s", 129) + ": MCP task server name must contain 1 to 128 characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, path, err := loadJSON(t, tc.doc, noEnv)
			require.EqualError(t, err, path+": "+tc.want)
		})
	}

	ext, _, err := loadJSON(t, doc(strings.Repeat("s", 128), toolset(strings.Repeat("n", 255), "a", "b", "c"), toolset("é", "d", "e", "f")), noEnv)
	require.NoError(t, err)
	require.Len(t, ext.Servers[0].TaskToolsets, 2)
	require.Empty(t, ext.Servers[0].TaskToolsets[0].InputTool, "input_tool is optional")
	require.Equal(t, []string{"b", "c"}, ext.Servers[0].TaskToolsets[0].HiddenTools())

	// input_tool (an mcpflow extension) names the tool that takes answers;
	// it is hidden from agents like the status and cancel tools.
	ext, _, err = loadJSON(t, doc("s", `{"name": "a", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c", "input_tool": "answer"}`), noEnv)
	require.NoError(t, err)
	ts := ext.Servers[0].TaskToolsets[0]
	require.Equal(t, TaskToolset{Name: "a", SubmitTool: "a", StatusTool: "b", CancelTool: "c", InputTool: "answer"}, ts)
	require.Equal(t, []string{"b", "c", "answer"}, ts.HiddenTools())
	require.Equal(t, []string{"a", "b", "c", "answer"}, ts.Tools())
	// A blank name is fine without toolsets.
	_, _, err = loadJSON(t, `{"mcpServers": {" ": {"command": "x"}}}`, noEnv)
	require.NoError(t, err)
}

func TestRouting(t *testing.T) {
	t.Parallel()
	ext, _, err := loadJSON(t, serverJSON(`{"command": "x",
		"routing": {"mode": "prefer", "priority": 150, "keywords": ["a"]},
		"tools": {
			"low": {"routing": {"priority": -5}},
			"off": {"routing": {"mode": "off"}, "note": "extra"},
			"kw": {"routing": {"keywords": []}},
			"float": {"routing": {"priority": 7.0}},
			"none": {"label": "no routing"}
		}}`), noEnv)
	require.NoError(t, err)
	require.Equal(t, []string{
		"mcpServers.demo.routing.priority: MCP routing priority 150 is above 100; clamping to 100.",
		"mcpServers.demo.tools.low.routing.priority: MCP routing priority -5 is below 0; clamping to 0.",
	}, ext.Warnings)
	s := ext.Servers[0]
	require.Equal(t, Routing{Mode: RoutingPrefer, Priority: 100, Keywords: []string{"a"}}, s.Routing)
	require.Equal(t, Routing{Mode: RoutingPrefer, Priority: 0, Keywords: []string{"a"}}, s.EffectiveRouting("low"))
	require.Equal(t, Routing{Mode: RoutingOff, Priority: 100, Keywords: []string{"a"}}, s.EffectiveRouting("off"))
	require.Equal(t, Routing{Mode: RoutingPrefer, Priority: 100, Keywords: []string{}}, s.EffectiveRouting("kw"))
	require.Equal(t, 7, s.EffectiveRouting("float").Priority)
	require.Equal(t, s.Routing, s.EffectiveRouting("none"))
	require.Nil(t, s.Tools["none"].Routing)
	label, _ := s.Tools["none"].Extra.Get("label")
	require.Equal(t, "no routing", label)
	note, _ := s.Tools["off"].Extra.Get("note")
	require.Equal(t, "extra", note)

	bad := []struct{ server, want string }{
		{`{"routing": {"mode": "prefer", "weight": 1}}`, "mcpServers.demo.routing.weight: unknown key (routing allows only mode, priority and keywords)"},
		{`{"tools": {"t": {"routing": {"boost": 1}}}}`, "mcpServers.demo.tools.t.routing.boost: unknown key (routing allows only mode, priority and keywords)"},
		{`{"routing": {"mode": "always"}}`, `mcpServers.demo.routing.mode: must be "off" or "prefer" (got "always")`},
		{`{"routing": {"priority": 1.5}}`, `mcpServers.demo.routing.priority: must be an integer (got 1.5)`},
		{`{"routing": {"priority": "5"}}`, `mcpServers.demo.routing.priority: must be an integer (got "5")`},
		{`{"routing": {"keywords": "sql"}}`, `mcpServers.demo.routing.keywords: must be a list of strings (got a string)`},
		{`{"routing": null}`, `mcpServers.demo.routing: must be an object (got null)`},
		{`{"tools": {"t": null}}`, `mcpServers.demo.tools.t: must be an object (got null)`},
	}
	for _, tc := range bad {
		_, path, err := loadJSON(t, serverJSON(tc.server), noEnv)
		require.EqualError(t, err, path+": "+tc.want, tc.server)
	}
}

func TestHeaderRules(t *testing.T) {
	t.Parallel()
	bad := []struct{ server, want string }{
		{`{"type": "http", "url": "u", "headers": {"Authorization": "a", "authorization": "b"}}`,
			"mcpServers.demo.headers: headers maps the same HTTP header under two spellings ('Authorization' and 'authorization'); header names are case-insensitive"},
		{`{"type": "http", "url": "u", "headers_from_context": {"headers": {"X-Tenant": "t", "x-tenant": "u"}}}`,
			"mcpServers.demo.headers_from_context.headers: headers_from_context.headers maps the same HTTP header under two spellings ('X-Tenant' and 'x-tenant'); header names are case-insensitive, so keep only one"},
		{`{"headers_from_context": {"headers": {" ": "t"}}}`,
			"mcpServers.demo.headers_from_context.headers: headers_from_context.headers must not contain a blank header name"},
		{`{"headers_from_context": {"headers": {"X-T": " "}}}`,
			"mcpServers.demo.headers_from_context.headers.X-T: headers_from_context.headers['X-T'] must name a non-blank secret key from config.context.secrets"},
		{`{"headers_from_context": {"headers": {"X-T": 5}}}`,
			"mcpServers.demo.headers_from_context.headers.X-T: headers_from_context.headers['X-T'] must name a non-blank secret key from config.context.secrets"},
		{`{"headers_from_context": {"on_missing": "allow"}}`,
			`mcpServers.demo.headers_from_context.on_missing: must be "deny" or "passthrough" (got "allow")`},
		{`{"user_auth": {"header": ""}}`, "mcpServers.demo.user_auth.header: user_auth.header must not be empty"},
		{`{"user_auth": {"header": "   "}}`, "mcpServers.demo.user_auth.header: user_auth.header must not be empty"},
		{`{"user_auth": {"header": "\t"}}`, "mcpServers.demo.user_auth.header: user_auth.header must not be empty"},
		{`{"user_auth": {"on_missing": "DENY"}}`, `mcpServers.demo.user_auth.on_missing: must be "deny" or "passthrough" (got "DENY")`},
		{`{"user_auth": {"users": {"u1": 5}}}`, `mcpServers.demo.user_auth.users.u1: must be a string (got a number)`},
		{`{"headers": {"X": "$SECRET_NUMBER", "Y": 5}}`, `mcpServers.demo.headers.Y: must be a string (got a number)`},
	}
	for _, tc := range bad {
		_, path, err := loadJSON(t, serverJSON(tc.server), noEnv)
		require.EqualError(t, err, path+": "+tc.want, tc.server)
	}

	// a header that is only an env placeholder resolving to a line-broken
	// value loads, but the server has a connection problem that never echoes it
	env := mapEnv(map[string]string{"TOKEN": "Bearer abc\r\nX-Injected: yes"})
	ext, _, err := loadJSON(t, serverJSON(`{"type": "sse", "url": "http://x", "headers": {"Authorization": "$TOKEN"}}`), env)
	require.NoError(t, err)
	problem := ext.Servers[0].ConnectionProblem()
	require.EqualError(t, problem, "MCP server 'demo' header 'Authorization' contains a line break or another forbidden control character")
	require.ErrorIs(t, problem, ErrHeaderControl)
	require.NotContains(t, problem.Error(), "abc")
}

func TestOAuthBlock(t *testing.T) {
	t.Parallel()
	ext, _, err := loadJSON(t, serverJSON(`{"type": "http", "url": "http://x", "oauth": {
		"token_url": "https://auth/token", "grant_type": "refresh_token", "refresh_token": "$RT",
		"refresh_skew_seconds": -30, "extra_token_params": {"resource": "r"}, "vendor": {"x": 1}, "enabled": false}}`),
		mapEnv(map[string]string{"RT": "rt-1"}))
	require.NoError(t, err)
	o := ext.Servers[0].OAuth
	require.False(t, o.Enabled)
	require.Equal(t, GrantRefreshToken, o.GrantType)
	require.Equal(t, "rt-1", o.RefreshToken)
	require.Equal(t, 0, o.RefreshSkewSeconds)
	require.Equal(t, map[string]string{"resource": "r"}, o.ExtraTokenParams)
	require.Equal(t, []string{"vendor"}, o.Extra.Keys())

	ext, _, err = loadJSON(t, serverJSON(`{"oauth": null}`), noEnv)
	require.NoError(t, err)
	require.Nil(t, ext.Servers[0].OAuth)

	bad := []struct{ server, want string }{
		{`{"oauth": {}}`, "mcpServers.demo.oauth.token_url: is required"},
		{`{"oauth": {"token_url": "u", "grant_type": "password"}}`, `mcpServers.demo.oauth.grant_type: must be "client_credentials", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange" or "token_exchange" (got "password")`},
		{`{"oauth": {"token_url": "u", "refresh_skew_seconds": 1.5}}`, `mcpServers.demo.oauth.refresh_skew_seconds: must be an integer (got 1.5)`},
		{`{"oauth": {"token_url": "u", "client_secret": 12345}}`, `mcpServers.demo.oauth.client_secret: must be a string (got a number)`},
		{`{"oauth": "yes"}`, `mcpServers.demo.oauth: must be an object (got a string)`},
	}
	for _, tc := range bad {
		_, path, err := loadJSON(t, serverJSON(tc.server), noEnv)
		require.EqualError(t, err, path+": "+tc.want, tc.server)
	}
}

func TestServerFieldErrors(t *testing.T) {
	t.Parallel()
	bad := []struct{ doc, want string }{
		{`{"mcpServers": []}`, "mcpServers: must be an object (got an array)"},
		{`{"mcpServers": {"demo": "npx"}}`, "mcpServers.demo: must be an object (got a string)"},
		{serverJSON(`{"enabled": "yes"}`), `mcpServers.demo.enabled: must be a boolean (got "yes")`},
		{serverJSON(`{"args": ["a", 1]}`), `mcpServers.demo.args[1]: must be a string (got a number)`},
		{serverJSON(`{"env": {"K": null}}`), `mcpServers.demo.env.K: must be a string (got null)`},
		{serverJSON(`{"description": null}`), `mcpServers.demo.description: must be a string (got null)`},
		{serverJSON(`{"tool_name_prefix": 1}`), `mcpServers.demo.tool_name_prefix: must be a boolean (got 1)`},
		{serverJSON(`{"cwd": 3}`), `mcpServers.demo.cwd: must be a string (got a number)`},
		{`{"skills": {"w": {"enabled": "no"}}}`, `skills.w.enabled: must be a boolean (got "no")`},
		{`{"middlewares": "a:B"}`, `middlewares: must be a list of strings (got a string)`},
	}
	for _, tc := range bad {
		_, path, err := loadJSON(t, tc.doc, noEnv)
		require.EqualError(t, err, path+": "+tc.want, tc.doc)
	}

	ext, _, err := loadJSON(t, `{"mcpServers": {"a": {"command": null, "url": null, "cwd": null, "enabled": false}},
		"skills": {"s": {}, "t": {"enabled": false, "x": 1}}, "middlewares": ["m:C"]}`, noEnv)
	require.NoError(t, err)
	require.False(t, ext.Servers[0].Enabled)
	require.Equal(t, map[string]Skill{"s": {Enabled: true}, "t": {Enabled: false}}, ext.Skills)
	require.Equal(t, []string{"m:C"}, ext.Middlewares)
}

func TestMCPInterceptors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw      string
		want     []string
		warnings []string
	}{
		{`"a.b:c"`, []string{"a.b:c"}, nil},
		{`["a:b", 5, "c:d"]`, []string{"a:b", "c:d"}, []string{"mcpInterceptors[1]: ignoring entry that is a number, not a string"}},
		{`{"a": 1}`, nil, []string{"mcpInterceptors: expected a list of strings or a string, got an object; ignoring it"}},
		{`null`, nil, nil},
	}
	for _, tc := range tests {
		ext, _, err := loadJSON(t, `{"mcpInterceptors": `+tc.raw+`}`, noEnv)
		require.NoError(t, err)
		require.Equal(t, tc.want, ext.MCPInterceptors, tc.raw)
		require.Equal(t, tc.warnings, ext.Warnings, tc.raw)
		require.Equal(t, 0, ext.Extra.Len())
	}
}

func TestConnectionProblem(t *testing.T) {
	t.Parallel()
	tests := []struct{ server, want string }{
		{`{"type": "stdio"}`, "MCP server 'demo' with stdio transport requires 'command' field"},
		{`{"command": ""}`, "MCP server 'demo' with stdio transport requires 'command' field"},
		{`{"type": "http"}`, "MCP server 'demo' with http transport requires 'url' field"},
		{`{"transport": "sse", "url": null}`, "MCP server 'demo' with sse transport requires 'url' field"},
		{`{"type": "http", "url": "u", "headers": {"A": "ok", "B": " leading"}}`, "MCP server 'demo' header 'B' has leading or trailing whitespace"},
		{`{"type": "http", "url": "u", "headers": {"X": "café"}}`, "MCP server 'demo' header 'X' contains characters outside ASCII"},
		{`{"command": "npx", "headers": {"X": "bad\n"}}`, ""}, // stdio never sends headers
		{`{"type": "http", "url": "u", "headers": {"A": "Bearer abc\tdef"}}`, ""},
	}
	for _, tc := range tests {
		ext, _, err := loadJSON(t, serverJSON(tc.server), noEnv)
		require.NoError(t, err, tc.server)
		problem := ext.Servers[0].ConnectionProblem()
		if tc.want == "" {
			require.NoError(t, problem, tc.server)
			continue
		}
		require.EqualError(t, problem, tc.want, tc.server)
	}
}

func TestCheckHeaderValue(t *testing.T) {
	t.Parallel()
	flagged := []struct {
		v    string
		want error
	}{
		{"Bearer x\n", ErrHeaderControl},
		{"x\r", ErrHeaderControl},
		{"a\r\nX-Injected: b", ErrHeaderControl},
		{"a\x00b", ErrHeaderControl},
		{"a\x0bb", ErrHeaderControl},
		{"a\x0cb", ErrHeaderControl},
		{" leading", ErrHeaderWhitespace},
		{"trailing ", ErrHeaderWhitespace},
		{"trailing\t", ErrHeaderWhitespace},
		{"\tleading", ErrHeaderWhitespace},
		{"café", ErrHeaderNonASCII},
		{"Привет", ErrHeaderNonASCII},
	}
	for _, tc := range flagged {
		err := CheckHeaderValue(tc.v)
		require.ErrorIs(t, err, tc.want, "%q", tc.v)
		require.Equal(t, tc.want.Error(), err.Error()) // never the value
	}
	require.Equal(t, "contains characters outside ASCII", ErrHeaderNonASCII.Error())
	require.Equal(t, "contains a line break or another forbidden control character", ErrHeaderControl.Error())
	require.Equal(t, "has leading or trailing whitespace", ErrHeaderWhitespace.Error())
	for _, v := range []string{"Bearer sk-token", "Bearer abc\tdef", "two words", "a\x7fb", ""} {
		require.NoError(t, CheckHeaderValue(v), "%q", v)
	}
}

func TestLooksSecret(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"refreshToken", "api_key", "apiKey", "APIKey", "X-Api-Key", "access_key", "client_secret",
		"clientSecret", "token", "password", "PASSWD", "db_password_file", "credentials", "Authorization", "bearer", "secret", "my.secret.value", "private_key", "GITHUB_TOKEN"} {
		require.True(t, LooksSecret(k), k)
	}
	for _, k := range []string{"cwd", "customFlag", "tokenizer", "secretariat", "safe", "endpoint", "authorizer", "key", "description", ""} {
		require.False(t, LooksSecret(k), k)
	}
}

func TestInvalidJSON(t *testing.T) {
	t.Parallel()
	tests := []struct{ doc, detail string }{
		{"{\n  \"a\": }", "2:8: invalid character '}' looking for beginning of value"},
		{"", "1:1: unexpected end of input, expected a value"},
		{`{"a": 1,}`, `1:9: invalid character '}' looking for beginning of object key string`},
		{`{"a": 1} x`, "1:10: invalid character 'x' after top-level value"},
		{`{"a": "é` + "\n" + `"}`, "1:9: invalid control character in string"},
		{`{"a": nan}`, "1:7: invalid character 'n' looking for beginning of value"},
		{`{"a": 01}`, "1:8: invalid character '1' after object key:value pair"},
		{`{"a": "\x"}`, "1:7: invalid escape sequence in string"},
		{`{"a": "unterminated`, "1:7: unterminated string"},
	}
	for _, tc := range tests {
		_, path, err := loadJSON(t, tc.doc, noEnv)
		require.EqualError(t, err, "Extensions config file at "+path+" is not valid JSON: "+tc.detail, tc.doc)
		var se *SyntaxError
		require.ErrorAs(t, err, &se)
	}

	_, path, err := loadJSON(t, `[1]`, noEnv)
	require.EqualError(t, err, path+": top level must be a JSON object (got an array)")

	// NaN tokens parse so validation can name their field; in strings they are text.
	_, path, err = loadJSON(t, serverJSON(`{"command": "NaN", "description": "Infinity", "tool_call_timeout": NaN}`), noEnv)
	require.EqualError(t, err, path+": mcpServers.demo.tool_call_timeout: must be a finite number greater than 0 (got NaN)")
	_, path, err = loadJSON(t, `{"mcpServers": {}, "x": [Infinity, -Infinity]}`, noEnv)
	require.NoError(t, err, path)
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	env := mapEnv(map[string]string{"GITHUB_TOKEN": "ghp_1", "WORKDIR": "/srv/w", "MCP_OAUTH_CLIENT_SECRET": "cs"})
	original, err := os.ReadFile("testdata/roundtrip.json")
	require.NoError(t, err)
	ext1, err := ParseExtensions(original, "roundtrip.json", env)
	require.NoError(t, err)

	out, err := ext1.Raw().MarshalJSON()
	require.NoError(t, err)
	// The fixture is in Python's json.dump(indent=2) layout, so the bytes match.
	require.Equal(t, string(original), string(out))

	dir := t.TempDir()
	path := writeFile(t, dir, "extensions_config.json", string(out))
	ext2, err := LoadExtensions(path, env)
	require.NoError(t, err)
	require.Equal(t, ext1, ext2)

	// What survived, explicitly.
	require.Equal(t, []string{"$schemaNote", "customTopLevel"}, ext2.Extra.Keys())
	custom, _ := ext2.Extra.Get("customTopLevel")
	require.Equal(t, []string{"z", "a", "empty", "emptyList"}, custom.(*Object).Keys())
	gh, _ := ext2.Lookup("github")
	require.Equal(t, "/srv/w", gh.Cwd)
	require.Equal(t, []string{"customFlag", "nested"}, gh.Extra.Keys())
	sec, _ := ext2.Lookup("secure-http")
	require.Equal(t, []string{"transport"}, sec.Extra.Keys())
	require.Equal(t, []string{"vendor_hint"}, sec.OAuth.Extra.Keys())
	require.Equal(t, "cs", sec.OAuth.ClientSecret)
	pg, _ := ext2.Lookup("postgres")
	require.Nil(t, pg.SessionInitTimeout)
	require.Equal(t, []string{"x-note"}, pg.Tools["query"].Extra.Keys())
	rep, _ := ext2.Lookup("report-service")
	require.Equal(t, "Reports <&> é中 \"quoted\"\n", rep.Description)
	require.Equal(t, "report-service", ext2.Servers[0].Name)

	text := string(out)
	for _, placeholder := range []string{`"$GITHUB_TOKEN"`, `"$WORKDIR"`, `"$MCP_OAUTH_CLIENT_SECRET"`, `"$NESTED_TOKEN"`, `"$ORG_KEY"`} {
		require.Contains(t, text, placeholder)
	}
	require.NotContains(t, text, "ghp_1")

	// A writer edits the raw form and writes it back; only that changes.
	raw := ext2.Raw()
	servers, _ := raw.Root.Get("mcpServers")
	srv, _ := servers.(*Object).Get("playwright")
	srv.(*Object).Set("enabled", false)
	edited, err := raw.MarshalJSON()
	require.NoError(t, err)
	ext3, err := ParseExtensions(edited, "edited", env)
	require.NoError(t, err)
	pw, _ := ext3.Lookup("playwright")
	require.False(t, pw.Enabled)
	pw2, _ := ext2.Lookup("playwright")
	require.True(t, pw2.Enabled) // Raw() is a copy
	require.Equal(t, strings.Count(string(original), "\n"), strings.Count(string(edited), "\n"))

	// json.Marshal of the document is the compact form of the same thing.
	compact, err := json.Marshal(raw)
	require.NoError(t, err)
	var a, b any
	require.NoError(t, json.Unmarshal(compact, &a))
	require.NoError(t, json.Unmarshal(edited, &b))
	require.Equal(t, b, a)
}

func TestObject(t *testing.T) {
	t.Parallel()
	var body struct {
		Servers *Object `json:"mcp_servers"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"mcp_servers": {"b": 1, "a": {"y": 2, "x": 3}, "b": 4}}`), &body))
	require.Equal(t, []string{"b", "a"}, body.Servers.Keys()) // first position, last value
	v, _ := body.Servers.Get("b")
	require.Equal(t, json.Number("4"), v)

	o := NewObject()
	o.Set("k1", 1)
	o.Set("k2", map[string]any{"z": 1, "a": 2})
	o.Set("k3", []any{})
	o.Set("k1", "one")
	o.Delete("k2")
	o.Delete("nope")
	o.Set("k2", NewObject())
	require.Equal(t, []string{"k1", "k3", "k2"}, o.Keys())
	require.True(t, o.Has("k3"))
	b, err := json.Marshal(o)
	require.NoError(t, err)
	require.Equal(t, `{"k1":"one","k3":[],"k2":{}}`, string(b))

	o.Set("m", map[string]any{"z": 1, "a": []int{1}})
	doc := &RawDocument{Root: o}
	out, err := doc.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, "{\n  \"k1\": \"one\",\n  \"k3\": [],\n  \"k2\": {},\n  \"m\": {\n    \"a\": [\n      1\n    ],\n    \"z\": 1\n  }\n}", string(out))

	c := o.Clone()
	c.Set("k1", "changed")
	v, _ = o.Get("k1")
	require.Equal(t, "one", v)

	require.Error(t, json.Unmarshal([]byte(`{"mcp_servers": [1]}`), &body))
	var nilObj *Object
	require.Equal(t, 0, nilObj.Len())
	require.Nil(t, nilObj.Keys())
}

func TestLocate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	explicit := writeFile(t, dir, "explicit.json", "{}")
	envFile := writeFile(t, dir, "env.json", "{}")
	deerFile := writeFile(t, dir, "deer.json", "{}")
	missing := filepath.Join(dir, "missing.json")

	both := t.TempDir()
	writeFile(t, both, "mcp_config.json", "{}")
	preferred := writeFile(t, both, "extensions_config.json", "{}")
	legacyOnly := t.TempDir()
	legacy := writeFile(t, legacyOnly, "mcp_config.json", "{}")
	empty := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(empty, "extensions_config.json"), 0o700)) // a directory is not a config

	tests := []struct {
		name     string
		explicit string
		dir      string
		env      map[string]string
		want     string
		wantErr  string
	}{
		{name: "explicit wins over env", explicit: explicit, dir: both, env: map[string]string{EnvExtensionsConfigPath: envFile}, want: explicit},
		{name: "explicit missing is loud", explicit: missing, dir: both, wantErr: "extensions config file specified by extensions_config not found at " + missing + ": file does not exist"},
		{name: "mcpflow env", dir: both, env: map[string]string{EnvExtensionsConfigPath: envFile, EnvDeerFlowExtensionsConfigPath: deerFile}, want: envFile},
		{name: "deer flow env", dir: both, env: map[string]string{EnvExtensionsConfigPath: "", EnvDeerFlowExtensionsConfigPath: deerFile}, want: deerFile},
		{name: "env missing is loud", dir: both, env: map[string]string{EnvDeerFlowExtensionsConfigPath: missing}, wantErr: "extensions config file specified by environment variable DEER_FLOW_EXTENSIONS_CONFIG_PATH not found at " + missing + ": file does not exist"},
		{name: "search prefers extensions_config.json", dir: both, want: preferred},
		{name: "search finds legacy mcp_config.json", dir: legacyOnly, want: legacy},
		{name: "search finding nothing is no config", dir: empty, want: ""},
		{name: "explicit directory", explicit: dir, wantErr: "extensions config file specified by extensions_config at " + dir + " is a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Locate(tc.explicit, tc.dir, mapEnv(tc.env))
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				if strings.Contains(tc.wantErr, "not found") {
					require.ErrorIs(t, err, os.ErrNotExist)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestLocateWorkingDirectory is not parallel: it changes the working directory.
func TestLocateWorkingDirectory(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	got, err := Locate("", "", noEnv)
	require.NoError(t, err)
	require.Equal(t, "", got)

	writeFile(t, wd, "mcp_config.json", "{}")
	got, err = Locate("", t.TempDir(), noEnv) // dir first, then cwd
	require.NoError(t, err)
	require.Equal(t, filepath.Join(wd, "mcp_config.json"), got)
}

func TestFileSignature(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, dir, "extensions_config.json", `{"a": 1}`)
	mtime := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, os.Chtimes(path, mtime, mtime))

	s1, err := FileSignature(path)
	require.NoError(t, err)
	require.Equal(t, path, s1.Path)
	require.Equal(t, int64(8), s1.Size)
	require.True(t, s1.ModTime.Equal(mtime))
	require.Len(t, s1.SHA256, 64)
	again, err := FileSignature(path)
	require.NoError(t, err)
	require.True(t, s1.Equal(again))
	require.False(t, s1.IsZero())

	// Same size, same mtime, different content: detected.
	require.NoError(t, os.WriteFile(path, []byte(`{"a": 2}`), 0o600))
	require.NoError(t, os.Chtimes(path, mtime, mtime))
	s2, err := FileSignature(path)
	require.NoError(t, err)
	require.Equal(t, s1.Size, s2.Size)
	require.True(t, s1.ModTime.Equal(s2.ModTime))
	require.NotEqual(t, s1.SHA256, s2.SHA256)
	require.False(t, s1.Equal(s2))

	// Symlinks are followed; relative paths made absolute.
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(path, link))
	s3, err := FileSignature(link)
	require.NoError(t, err)
	require.True(t, s2.Equal(s3))

	_, err = FileSignature(filepath.Join(dir, "missing.json"))
	require.True(t, errors.Is(err, os.ErrNotExist))
	_, err = FileSignature(dir)
	require.Error(t, err)
	require.True(t, Signature{}.IsZero())
}
