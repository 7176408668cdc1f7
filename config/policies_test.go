package config

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/policy"
)

func TestPolicies(t *testing.T) {
	t.Parallel()
	ext, _, err := loadJSON(t, `{"mcpServers": {}, "policies": {"default": "deny", "server_defaults": {"docs": "allow"},
		"rules": [{"name": "ops-only", "effect": "allow", "servers": ["db"], "tools": ["db_*"], "when": "user.admin"}]}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := ext.PolicyConfig
	if c == nil || c.Default != policy.Deny || c.ServerDefaults["docs"] != policy.Allow || len(c.Rules) != 1 ||
		c.Rules[0].Name != "ops-only" || c.Rules[0].When != "user.admin" || c.Rules[0].Tools[0] != "db_*" {
		t.Fatalf("decoded %+v", c)
	}
	db := &mcpflow.Tool{Name: "db_query", Server: "db"}
	if d := ext.Policies.Visible(policy.Input{UserID: "u", Tool: db}); !d.Hidden {
		t.Errorf("a user sees db_query: %+v", d)
	}
	if d := ext.Policies.Visible(policy.Input{Caller: &mcpflow.Caller{Admin: true}, Tool: db}); d.Hidden {
		t.Errorf("an admin does not see db_query: %+v", d)
	}
	if d := ext.Policies.Visible(policy.Input{UserID: "u", Tool: &mcpflow.Tool{Name: "docs_read", Server: "docs"}}); d.Hidden {
		t.Errorf("server default allow: %+v", d)
	}

	// No block, or null: no policies, and the key is not an extra.
	for _, doc := range []string{`{"mcpServers": {}}`, `{"mcpServers": {}, "policies": null}`} {
		ext, _, err := loadJSON(t, doc, nil)
		if err != nil || ext.Policies != nil || ext.PolicyConfig != nil || ext.Extra.Has("policies") {
			t.Fatalf("%s: %v %+v", doc, err, ext)
		}
	}
}

func TestPoliciesRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ policies, want string }{
		{`[]`, "policies: must be an object (got an array)"},
		{`{"default": "block"}`, `policies.default: must be "allow" or "deny" (got "block")`},
		{`{"rules": {}}`, "policies.rules: must be a list of rules (got an object)"},
		{`{"rules": [{"effect": "deny"}]}`, "policies.rules[0].name: is required"},
		{`{"rules": [{"name": "a"}]}`, "policies.rules[0].effect: is required"},
		{`{"rules": [{"name": "a", "effect": "deny", "tool": ["x"]}]}`, "policies.rules[0].tool: unknown key (a rule allows only name, effect, servers, tools, when, approvers and approval_timeout_seconds)"},
		{`{"rules": [{"name": "a", "effect": "deny", "servers": "db"}]}`, "policies.rules[0].servers: must be a list of strings (got a string)"},
		{`{"rules": [{"name": "a", "effect": "deny", "when": "user.groups.exists(g, g == 'ops'"}]}`, "policies.rules[0].when: line 1, column 33: Syntax error: missing"},
		{`{"rules": [{"name": "a", "effect": "deny", "when": "usr.admin"}]}`, "policies.rules[0].when: line 1, column 1: undeclared reference to 'usr'"},
		{`{"server_defaults": {"db": "maybe"}}`, `policies.server_defaults.db: must be "allow" or "deny"`},
		{`{"rules": [{"name": "a", "effect": "approve"}]}`, `policies.rules[0].approvers: an approve rule needs approvers`},
		{`{"rules": [{"name": "a", "effect": "approve", "approvers": ["group:ops"], "approval_timeout_seconds": "1h"}]}`, `policies.rules[0].approval_timeout_seconds: must be`},
		{`{"rules": [{"name": "a", "effect": "approve", "approvers": ["ops"]}]}`, `policies.rules[0].approvers[0]: must be "group:<name>" or "user:<id>" (got "ops")`},
		{`{"rule": []}`, "policies.rule: unknown key (policies allows only default, server_defaults, rules, limits and audit_arguments)"},
	} {
		_, _, err := loadJSON(t, `{"mcpServers": {}, "policies": `+tc.policies+`}`, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want …%s…", tc.policies, err, tc.want)
		}
	}
}

// TestPoliciesDocExample: the example of "Who may call what" in the
// operator guide loads and decides as the guide says.
func TestPoliciesDocExample(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(md), "## Who may call what")
	_, block, ok2 := strings.Cut(sec, "```json\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("no JSON example under ## Who may call what")
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(block), &doc); err != nil {
		t.Fatalf("the example is not JSON: %v", err)
	}
	ext, _, err := loadJSON(t, `{"mcpServers": {}, "policies": `+string(doc["policies"])+`}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := ext.Policies
	ops := &mcpflow.Caller{UserID: "op", Provider: "idp", Claims: map[string]json.RawMessage{"groups": json.RawMessage(`["ops"]`)}}
	dev := &mcpflow.Caller{UserID: "dev", Provider: "idp", Claims: map[string]json.RawMessage{"groups": json.RawMessage(`["dev"]`)}}
	read := &mcpflow.Tool{Name: "files_read_file", Server: "files", Annotations: json.RawMessage(`{"readOnlyHint": true}`)}
	drop := &mcpflow.Tool{Name: "db_drop_table", Server: "db"}
	write := &mcpflow.Tool{Name: "files_write_file", Server: "files", Annotations: json.RawMessage(`{"destructiveHint": false}`)}
	bg := &mcpflow.Tool{Name: "list_background_tasks", Server: "mcpflow", Annotations: json.RawMessage(`{"destructiveHint": false}`)}
	for _, c := range []struct {
		who     *mcpflow.Caller
		tool    *mcpflow.Tool
		visible bool
	}{{dev, read, true}, {ops, read, true}, {dev, drop, false}, {ops, drop, true}, {dev, write, false}, {ops, write, true},
		{dev, bg, true}, {&mcpflow.Caller{UserID: "alice"}, drop, false}, {dev, &mcpflow.Tool{Name: "docs_search", Server: "docs"}, false}} {
		if d := p.Visible(policy.Input{Caller: c.who, Tool: c.tool}); d.Allowed != c.visible {
			t.Errorf("%s sees %s: %v, want %v (%+v)", c.who.UserID, c.tool.Name, d.Allowed, c.visible, d)
		}
	}
	if d := p.Decide(policy.Input{Caller: ops, Tool: write}, map[string]any{"path": "/etc/passwd"}); d.Allowed || d.Rule != "writes-stay-in-the-workspace" {
		t.Errorf("ops write outside the workspace: %+v", d)
	}
	if d := p.Decide(policy.Input{Caller: ops, Tool: write}, map[string]any{"path": "/mnt/user-data/workspace/notes.md"}); !d.Allowed {
		t.Errorf("ops write in the workspace: %+v", d)
	}
}

func TestPolicyLimits(t *testing.T) {
	t.Parallel()
	ext, _, err := loadJSON(t, `{"mcpServers": {}, "policies": {"limits": [
		{"name": "echo", "tools": ["demo_echo"], "per_minute": 1.5, "daily": 100},
		{"name": "all-db", "servers": ["db"], "per": "all", "per_minute": 600, "burst": 20}]}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := ext.Policies.Limits(&mcpflow.Tool{Name: "demo_echo", Server: "demo"})
	if len(got) != 1 || got[0].Name != "echo" || got[0].Per != policy.PerUser || got[0].PerMinute != 1.5 || got[0].Burst != 2 || got[0].Daily != 100 {
		t.Fatalf("echo: %+v", got)
	}
	if got := ext.Policies.Limits(&mcpflow.Tool{Name: "db_query", Server: "db"}); len(got) != 1 || got[0].Per != policy.PerAll || got[0].Burst != 20 {
		t.Fatalf("db: %+v", got)
	}
	for _, tc := range []struct{ limits, want string }{
		{`[{"name": "x"}]`, "policies.limits[0]: sets neither per_minute nor daily"},
		{`[{"name": "x", "per_minute": "5"}]`, "policies.limits[0].per_minute: must be a number (got a string)"},
		{`[{"name": "x", "daily": 5, "per": "tool"}]`, `policies.limits[0].per: must be "user" or "all" (got "tool")`},
		{`[{"name": "x", "daily": 5, "burst": 3}]`, "policies.limits[0].burst: needs per_minute"},
		{`[{"name": "x", "daily": 5}, {"name": "x", "daily": 6}]`, `policies.limits[1].name: "x" names another limit too`},
		{`[{"name": "x", "daily": 5, "window": 1}]`, "policies.limits[0].window: unknown key"},
	} {
		_, _, err := loadJSON(t, `{"mcpServers": {}, "policies": {"limits": `+tc.limits+`}}`, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want …%s…", tc.limits, err, tc.want)
		}
	}
}

func TestVirtualServers(t *testing.T) {
	t.Parallel()
	ext, _, err := loadJSON(t, `{"mcpServers": {}, "virtualServers": {"research": {"description": "d",
		"tools": [{"tool": "demo_echo", "name": "say", "description": "Say it"}, {"tool": "demo_add"}]}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	vs := ext.VirtualServers["research"]
	if vs == nil || vs.Description != "d" || len(vs.Tools) != 2 || vs.Tools[0] != (policy.VirtualTool{Tool: "demo_echo", Name: "say", Description: "Say it"}) ||
		vs.Tools[1] != (policy.VirtualTool{Tool: "demo_add"}) || ext.Extra.Has("virtualServers") {
		t.Fatalf("decoded %+v", ext.VirtualServers)
	}
	for _, tc := range []struct{ vs, want string }{
		{`{"a b": {"tools": [{"tool": "x"}]}}`, "virtualServers.a b:"},
		{`{"r": {"tools": []}}`, "virtualServers.r.tools: must be a non-empty list of tools"},
		{`{"r": {"tools": [{"name": "x"}]}}`, "virtualServers.r.tools[0].tool: is required"},
		{`{"r": {"tools": [{"tool": "x", "rename": "y"}]}}`, "virtualServers.r.tools[0].rename: unknown key"},
		{`{"r": {"tools": [{"tool": "a", "name": "x"}, {"tool": "x"}]}}`, `virtualServers.r.tools[1]: "x" names another tool of the virtual server too`},
		{`{"r": {"tools": [{"tool": "x"}], "prompt": ""}}`, "virtualServers.r.prompt: unknown key"},
	} {
		_, _, err := loadJSON(t, `{"mcpServers": {}, "virtualServers": `+tc.vs+`}`, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want …%s…", tc.vs, err, tc.want)
		}
	}
}
