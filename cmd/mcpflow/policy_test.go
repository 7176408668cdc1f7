package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/internal/testsupport/testidp"
)

// policyExt is the demo server (with a task toolset) under policies.
func policyExt(url, policies string) string {
	return fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 10,
  "task_toolsets": [{"name": "job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job"}]}},
 "policies": %s}`, url, policies)
}

const testPolicies = `{"default": "allow", "rules": [
  {"name": "no-env-for-alice", "effect": "deny", "tools": ["demo_env"], "when": "user.id == 'alice'"},
  {"name": "small-sums", "effect": "deny", "tools": ["demo_add"], "when": "args.a > 100"},
  {"name": "no-tasks-for-alice", "effect": "deny", "when": "tool.task && user.id == 'alice'"}]}`

func restToolNames(t *testing.T, m *Main, thread string) []string {
	t.Helper()
	code, body := get(t, m.URL()+"/api/threads/"+thread+"/tools", testUserToken)
	require.Equal(t, 200, code, body)
	var names []string
	for _, tl := range body["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	return names
}

// TestPoliciesEveryPath: a tool a policy hides is absent from the REST
// listing and both MCP revisions' tools/list, and a call of it is answered
// word for word as a call of a tool that does not exist; a call refused
// for its arguments names the rule and not the values; task tools follow
// their submit tool; editing the file's policies applies to the next
// request.
func TestPoliciesEveryPath(t *testing.T) {
	url := demoHTTP(t)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", policyExt(url, testPolicies))
	m := waitReady(t, startMain(t, ModeDev, cfg, nil))
	e := &taskEnv{m: m}

	// REST.
	names := restToolNames(t, m, "gov")
	require.Contains(t, names, "demo_echo")
	require.Contains(t, names, "demo_add")
	require.NotContains(t, names, "demo_env")
	require.NotContains(t, names, "demo_submit_job", "the task tool follows its submit tool")
	hiddenCode, hidden := e.post(t, "/api/threads/gov/tools/demo_env/call", `{"arguments": {}}`)
	unknownCode, unknown := e.post(t, "/api/threads/gov/tools/demo_nope/call", `{"arguments": {}}`)
	require.Equal(t, 404, hiddenCode, hidden)
	require.Equal(t, unknownCode, hiddenCode)
	require.Equal(t, strings.ReplaceAll(fmt.Sprint(unknown), "demo_nope", "demo_env"), fmt.Sprint(hidden))
	code, out := e.post(t, "/api/threads/gov/tools/demo_submit_job/call", `{"arguments": {"duration_seconds": 1}}`)
	require.Equal(t, 404, code, "a hidden task tool starts no task: %v", out)
	code, out = e.post(t, "/api/threads/gov/tools/demo_add/call", `{"arguments": {"a": 31337, "b": 1}}`)
	require.Equal(t, 403, code, out)
	require.Contains(t, fmt.Sprint(out), `policy rule "small-sums"`)
	require.NotContains(t, fmt.Sprint(out), "31337")
	code, out = e.post(t, "/api/threads/gov/tools/demo_add/call", `{"arguments": {"a": 2, "b": 3}}`)
	require.Equal(t, 200, code, out)
	// A key named twice could show the conditions one value and the server
	// the other: refused, without the values.
	code, out = e.post(t, "/api/threads/gov/tools/demo_add/call", `{"arguments": {"a": 2, "b": 3, "a": 31337}}`)
	require.Equal(t, 400, code, out)
	require.Contains(t, fmt.Sprint(out), `the key "a" twice`)
	require.NotContains(t, fmt.Sprint(out), "31337")

	// MCP 2025-11-25.
	c, _ := mcpGoClient(t, m.URL()+"/mcp/threads/gov", map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	listed, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	var mcpNames []string
	for _, tl := range listed.Tools {
		mcpNames = append(mcpNames, tl.Name)
	}
	require.Contains(t, mcpNames, "demo_echo")
	require.NotContains(t, mcpNames, "demo_env")
	require.NotContains(t, mcpNames, "demo_submit_job")
	callMCP := func(name string, args map[string]any) (*mcp.CallToolResult, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		return c.CallTool(ctx, req)
	}
	_, hiddenErr := callMCP("demo_env", map[string]any{})
	_, unknownErr := callMCP("demo_nope", map[string]any{})
	require.Error(t, hiddenErr)
	require.Equal(t, strings.ReplaceAll(unknownErr.Error(), "demo_nope", "demo_env"), hiddenErr.Error())
	res, err := callMCP("demo_add", map[string]any{"a": 31337, "b": 1})
	require.NoError(t, err)
	require.True(t, res.IsError)
	text := res.Content[0].(mcp.TextContent).Text
	require.Contains(t, text, `policy rule "small-sums"`)
	require.NotContains(t, text, "31337")

	// MCP 2026-07-28.
	r26 := &rpc2026{url: m.URL() + "/mcp/threads/gov", token: testUserToken}
	var names26 []string
	for _, tl := range r26.call(t, "tools/list", "", map[string]any{})["tools"].([]any) {
		names26 = append(names26, tl.(map[string]any)["name"].(string))
	}
	require.Contains(t, names26, "demo_echo")
	require.NotContains(t, names26, "demo_env")
	require.NotContains(t, names26, "demo_submit_job")
	answer := func(name string) string {
		resp := r26.request(t, ctx, "tools/call", name, map[string]any{"name": name, "arguments": map[string]any{}})
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		delete(out, "id")
		return fmt.Sprint(resp.StatusCode, out)
	}
	require.Equal(t, strings.ReplaceAll(answer("demo_nope"), "demo_nope", "demo_env"), answer("demo_env"))
	resp := r26.request(t, ctx, "tools/call", "demo_add", map[string]any{"name": "demo_add", "arguments": json.RawMessage(`{"a": 2, "b": 3, "a": 31337}`)})
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(body), `the key \"a\" twice`)
	require.Contains(t, string(body), `"isError":true`)
	require.NotContains(t, string(body), "31337")

	// The policies change with the file: without the rules, everything is
	// listed again.
	extPath := filepath.Join(filepath.Dir(cfg), "extensions_config.json")
	require.NoError(t, os.WriteFile(extPath, []byte(policyExt(url, `{"default": "allow"}`)), 0o600))
	require.Eventually(t, func() bool {
		names := restToolNames(t, m, "gov")
		return slices.Contains(names, "demo_env") && slices.Contains(names, "demo_submit_job")
	}, 30*time.Second, 200*time.Millisecond)
}

// TestPolicyRefusedFile: a policy whose condition does not compile stops
// mcpflow from starting, with where and what.
func TestPolicyRefusedFile(t *testing.T) {
	url := demoHTTP(t)
	bad := `{"rules": [{"name": "typo", "effect": "deny", "when": "user.groups.exists(g, g == 'ops'"}]}`
	cfg := writeConfig(t, "", policyExt(url, bad))
	m := &Main{Mode: ModeDev, ConfigPath: cfg, Env: noEnv}
	err := m.Open(context.Background())
	if err == nil {
		_ = m.Close(context.Background())
	}
	require.ErrorContains(t, err, "policies.rules[0].when: line 1, column 33: Syntax error")
}

// TestPolicyIdentityClaims: a real provider's tokens decide by their
// claims and scopes. Default deny; carol's groups claim holds the admin
// group, alice's token has none; a static token's user has neither claims
// nor a provider.
func TestPolicyIdentityClaims(t *testing.T) {
	e := startOIDCEnv(t)
	path := e.m.MCP.ExtensionsPath()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	var pol any
	require.NoError(t, json.Unmarshal([]byte(`{"default": "deny", "rules": [
  {"name": "echo-for-all", "effect": "allow", "tools": ["demo_echo"]},
  {"name": "add-for-signed-in", "effect": "allow", "tools": ["demo_add"], "when": "user.provider == 'testidp' && '`+oidcRequiredScop+`' in user.scopes"},
  {"name": "admins-everything", "effect": "allow", "servers": ["demo"], "when": "has(user.claims.groups) && '`+testidp.AdminGroup+`' in user.claims.groups"}]}`), &pol))
	doc["policies"] = pol
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o600))

	names := func(token string) []string {
		t.Helper()
		code, _, body := send(t, "GET", e.m.URL()+"/api/threads/claims/tools", token, "")
		require.Equal(t, 200, code, body)
		var out struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &out))
		var n []string
		for _, tl := range out.Tools {
			if strings.HasPrefix(tl.Name, "demo_") {
				n = append(n, tl.Name)
			}
		}
		slices.Sort(n)
		return n
	}
	require.Eventually(t, func() bool { return slices.Equal(names(testUserToken), []string{"demo_echo"}) },
		30*time.Second, 200*time.Millisecond, "the static token's user sees only demo_echo")
	resource := e.base
	require.Equal(t, []string{"demo_add", "demo_echo"}, names(e.login(t, testidp.Alice, resource)))
	carol := names(e.login(t, testidp.Carol, resource))
	require.Contains(t, carol, "demo_env")
	require.Contains(t, carol, "demo_submit_job")
}

// TestPolicyAdminAPI: an admin reads and replaces the policies over the
// API; a condition that does not compile is refused with its position and
// changes nothing; the change is logged with who made it and applies to
// the next request; a user may not touch them.
func TestPolicyAdminAPI(t *testing.T) {
	url := demoHTTP(t)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true }\n", policyExt(url, `{"default": "allow"}`))
	logs := &testenv.SyncBuffer{}
	m := startMain(t, ModeDev, cfg, logs)
	put := func(token, body string) (int, string) {
		code, _, out := send(t, "PUT", m.URL()+"/api/mcp/policies", token, body)
		return code, out
	}
	require.Contains(t, restToolNames(t, m, "adm"), "demo_env")

	code, out := put(testUserToken, `{"policies": null}`)
	require.Equal(t, 403, code, out)
	code, out = put(testAdminToken, `{"policies": {"rules": [{"name": "x", "effect": "deny", "when": "tool.name = 'demo_env'"}]}}`)
	require.Equal(t, 400, code, out)
	require.Contains(t, out, "policies.rules[0].when: line 1, column 11: Syntax error")
	code, out = put(testAdminToken, `{"policy": {}}`)
	require.Equal(t, 400, code, out)
	require.Contains(t, restToolNames(t, m, "adm"), "demo_env", "a refused write changed the policies")

	code, out = put(testAdminToken, `{"policies": {"rules": [{"name": "no-env", "effect": "deny", "tools": ["demo_env"]}]}}`)
	require.Equal(t, 200, code, out)
	require.JSONEq(t, `{"policies": {"rules": [{"name": "no-env", "effect": "deny", "tools": ["demo_env"]}]}}`, out)
	require.NotContains(t, restToolNames(t, m, "adm"), "demo_env")
	code, body := get(t, m.URL()+"/api/mcp/policies", testAdminToken)
	require.Equal(t, 200, code)
	require.Equal(t, "no-env", body["policies"].(map[string]any)["rules"].([]any)[0].(map[string]any)["name"])
	require.Contains(t, logs.String(), "MCP policies changed")
	require.Contains(t, logs.String(), `after [\"no-env\"]`)
	require.Contains(t, logs.String(), "actor=\"admin sha256:")

	code, out = put(testAdminToken, `{"policies": null}`)
	require.Equal(t, 200, code, out)
	require.JSONEq(t, `{"policies": null}`, out)
	require.Contains(t, restToolNames(t, m, "adm"), "demo_env")
}

// TestVirtualServer: /mcp/v/{name} shows its tools only, by its names and
// descriptions, on both revisions; the policies apply on top (a tool they
// hide stays hidden); a tool's own name, or a tool outside the view, is
// unknown there; an unknown virtual server is 404.
func TestVirtualServer(t *testing.T) {
	url := demoHTTP(t)
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q}},
 "policies": {"rules": [{"name": "no-env", "effect": "deny", "tools": ["demo_env"]}]},
 "virtualServers": {"research": {"description": "What the research agent needs", "tools": [
   {"tool": "demo_echo", "name": "say", "description": "Say it back"}, {"tool": "demo_add"}, {"tool": "demo_env"}]}}}`, url)
	m := startMain(t, ModeServe, writeConfig(t, "", ext), nil)

	c, _ := mcpGoClient(t, m.URL()+"/mcp/v/research/threads/vt", map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	listed, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name)
		if tl.Name == "say" {
			require.Equal(t, "Say it back", tl.Description)
		}
	}
	require.Equal(t, []string{"say", "demo_add"}, names)
	call := func(name string) (*mcp.CallToolResult, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, map[string]any{"message": "hi", "a": 1, "b": 2}
		return c.CallTool(ctx, req)
	}
	res, err := call("say")
	require.NoError(t, err)
	require.Equal(t, "hi", res.Content[0].(mcp.TextContent).Text)
	_, unknownErr := call("nope")
	require.Error(t, unknownErr)
	for _, name := range []string{"demo_echo", "demo_env", "demo_slow"} {
		_, err := call(name)
		require.Error(t, err, name)
		require.Equal(t, strings.ReplaceAll(unknownErr.Error(), "nope", name), err.Error())
	}

	r26 := &rpc2026{url: m.URL() + "/mcp/v/research", token: testUserToken}
	var names26 []string
	for _, tl := range r26.call(t, "tools/list", "", map[string]any{})["tools"].([]any) {
		names26 = append(names26, tl.(map[string]any)["name"].(string))
	}
	require.Equal(t, []string{"say", "demo_add"}, names26)

	code, _, body := send(t, "POST", m.URL()+"/mcp/v/nope", testUserToken, initializeBody)
	require.Equal(t, 404, code, body)
	require.Contains(t, body, "virtual server not found")
	require.Contains(t, restToolNames(t, m, "vt"), "demo_slow", "the REST listing is not a virtual server's")

	// An admin publishes another one, and is told where a bad one is wrong.
	code, _, body = send(t, "PUT", m.URL()+"/api/mcp/virtual-servers", testAdminToken,
		`{"virtualServers": {"ops": {"tools": [{"tool": "demo_slow", "name": "wait"}, {"tool": "demo_echo", "name": "wait"}]}}}`)
	require.Equal(t, 400, code, body)
	require.Contains(t, body, `virtualServers.ops.tools[1]: \"wait\" names another tool of the virtual server too`)
	code, _, body = send(t, "PUT", m.URL()+"/api/mcp/virtual-servers", testUserToken, `{"virtualServers": null}`)
	require.Equal(t, 403, code, body)
	code, _, body = send(t, "PUT", m.URL()+"/api/mcp/virtual-servers", testAdminToken,
		`{"virtualServers": {"ops": {"tools": [{"tool": "demo_slow", "name": "wait"}]}}}`)
	require.Equal(t, 200, code, body)
	ops := &rpc2026{url: m.URL() + "/mcp/v/ops", token: testUserToken}
	var opsNames []string
	for _, tl := range ops.call(t, "tools/list", "", map[string]any{})["tools"].([]any) {
		opsNames = append(opsNames, tl.(map[string]any)["name"].(string))
	}
	require.Equal(t, []string{"wait"}, opsNames)
	code, _, body = send(t, "POST", m.URL()+"/mcp/v/research", testUserToken, initializeBody)
	require.Equal(t, 404, code, "research was replaced: %s", body)
	code, got := get(t, m.URL()+"/api/mcp/virtual-servers", testAdminToken)
	require.Equal(t, 200, code)
	require.Contains(t, got["virtualServers"], "ops")
}

// TestPolicyChangeKeepsRunningTasks: a durable task started before a
// policy hid its tool stays its owner's to follow and cancel.
func TestPolicyChangeKeepsRunningTasks(t *testing.T) {
	url := demoHTTP(t)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", policyExt(url, `{"default": "allow"}`))
	m := waitReady(t, startMain(t, ModeDev, cfg, nil))
	e := &taskEnv{m: m}
	id := e.submit(t, "keep", "demo_submit_job", `{"duration_seconds": 300}`)
	code, _, body := send(t, "PUT", m.URL()+"/api/mcp/policies", testAdminToken,
		`{"policies": {"rules": [{"name": "no-jobs", "effect": "deny", "tools": ["demo_submit_job"]}]}}`)
	require.Equal(t, 200, code, body)
	require.NotContains(t, restToolNames(t, m, "keep"), "demo_submit_job")
	code, d := get(t, m.URL()+"/api/threads/keep/mcp-tasks/"+id, testUserToken)
	require.Equal(t, 200, code, d)
	code, out := e.post(t, "/api/threads/keep/mcp-tasks/"+id+"/cancel", "")
	require.Equal(t, 202, code, out)
	e.waitStatus(t, "keep", id, "cancelled")
	code, out = e.post(t, "/api/threads/keep/tools/demo_submit_job/call", `{"arguments": {"duration_seconds": 1}}`)
	require.Equal(t, 404, code, "a new task of the hidden tool: %v", out)
}

// TestGovernanceStdio: a stdio server's tools are governed like an HTTP
// server's: hidden from the listing and answered as unknown, refused for
// their arguments with the rule's name, limited, and audited with the
// server's name.
func TestGovernanceStdio(t *testing.T) {
	bin := testenv.Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp")
	ext := fmt.Sprintf(`{"mcpServers": {"local": {"type": "stdio", "command": %q, "args": ["--transport", "stdio"]}},
 "policies": {"rules": [{"name": "no-env", "effect": "deny", "tools": ["local_env"]},
   {"name": "short-echo", "effect": "deny", "tools": ["local_echo"], "when": "size(args.message) > 10"}],
  "limits": [{"name": "adds", "tools": ["local_add"], "daily": 2}]}}`, bin)
	cfg := writeConfig(t, "audit: { enabled: true, flush_interval_ms: 20 }\nworkspace: { root: ws }\n", ext)
	m := startMain(t, ModeServe, cfg, nil)
	e := &taskEnv{m: m}
	names := restToolNames(t, m, "stdio")
	require.Contains(t, names, "local_echo")
	require.NotContains(t, names, "local_env")
	code, out := e.post(t, "/api/threads/stdio/tools/local_env/call", `{"arguments": {}}`)
	require.Equal(t, 404, code, out)
	code, out = e.post(t, "/api/threads/stdio/tools/local_echo/call", `{"arguments": {"message": "far too long a message"}}`)
	require.Equal(t, 403, code, out)
	require.Contains(t, fmt.Sprint(out), `policy rule "short-echo"`)
	code, out = e.post(t, "/api/threads/stdio/tools/local_echo/call", `{"arguments": {"message": "short"}}`)
	require.Equal(t, 200, code, out)
	for i, want := range []int{200, 200, 429} {
		code, out = e.post(t, "/api/threads/stdio/tools/local_add/call", `{"arguments": {"a": 1, "b": 2}}`)
		require.Equal(t, want, code, "add %d: %v", i, out)
	}
	require.Eventually(t, func() bool {
		_, b := get(t, m.URL()+"/api/audit?limit=1000", testAdminToken)
		recs, _ := b["records"].([]any)
		if len(recs) != 6 {
			return false
		}
		for _, r := range recs {
			if r.(map[string]any)["server"] != "local" {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "six calls, each audited with its stdio server")
}
