package policy

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
)

func mustCompile(t *testing.T, c Config) *Set {
	t.Helper()
	s, err := Compile(c)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return s
}

func tool(server, raw, annotations string) *mcpflow.Tool {
	t := &mcpflow.Tool{Name: server + "_" + raw, Server: server, OriginalName: raw}
	if annotations != "" {
		t.Annotations = json.RawMessage(annotations)
	}
	return t
}

func claims(t *testing.T, js string) map[string]json.RawMessage {
	t.Helper()
	var c map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     Config
		field string
		msg   string
	}{
		{"default", Config{Default: "maybe"}, "default", `must be "allow" or "deny"`},
		{"server default", Config{ServerDefaults: map[string]string{"files": "block"}}, "server_defaults.files", `must be "allow" or "deny"`},
		{"no name", Config{Rules: []Rule{{Effect: Allow}}}, "rules[0].name", "must not be empty"},
		{"same name", Config{Rules: []Rule{{Name: "a", Effect: Allow}, {Name: "a", Effect: Deny}}}, "rules[1].name", `"a" names another rule too`},
		{"effect", Config{Rules: []Rule{{Name: "a", Effect: "ask"}}}, "rules[0].effect", `must be "allow", "deny" or "approve"`},
		{"approvers", Config{Rules: []Rule{{Name: "a", Effect: Approve}}}, "rules[0].approvers", "an approve rule needs approvers"},
		{"approver", Config{Rules: []Rule{{Name: "a", Effect: Approve, Approvers: []string{"ops"}}}}, "rules[0].approvers[0]", `must be "group:<name>" or "user:<id>" (got "ops")`},
		{"approver comma", Config{Rules: []Rule{{Name: "a", Effect: Approve, Approvers: []string{"user:a,b"}}}}, "rules[0].approvers[0]", `must be "group:<name>"`},
		{"timeout", Config{Rules: []Rule{{Name: "a", Effect: Approve, Approvers: []string{"group:ops"}, ApprovalTimeoutSeconds: 10}}}, "rules[0].approval_timeout_seconds", "must be between 60 and 604800 (got 10)"},
		{"approvers of allow", Config{Rules: []Rule{{Name: "a", Effect: Allow, Approvers: []string{"group:ops"}}}}, "rules[0].approvers", `only a rule whose effect is "approve"`},
		{"glob", Config{Rules: []Rule{{Name: "a", Effect: Deny, Tools: []string{"files_["}}}}, "rules[0].tools[0]", "is not a valid glob"},
		{"syntax", Config{Rules: []Rule{{Name: "a", Effect: Deny, When: "user.admin &&"}}}, "rules[0].when", "line 1, column 14: Syntax error"},
		{"undeclared", Config{Rules: []Rule{{Name: "a", Effect: Deny, When: "true &&\n  usr.admin"}}}, "rules[0].when", "line 2, column 3: undeclared reference to 'usr'"},
		{"not boolean", Config{Rules: []Rule{{Name: "a", Effect: Deny, When: "server + 'x'"}}}, "rules[0].when", "must be a boolean condition (it is of type string)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.c)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile: %v, want a CompileError", err)
			}
			if ce.Field != tc.field || !strings.Contains(ce.Message, tc.msg) {
				t.Fatalf("Compile: %s: %s; want %s: …%s…", ce.Field, ce.Message, tc.field, tc.msg)
			}
		})
	}
}

// The README's example: read-only tools for everyone, destructive ones only
// for the ops group, files_write_file only under the caller's workspace.
func exampleSet(t *testing.T) *Set {
	return mustCompile(t, Config{
		Default: Deny,
		Rules: []Rule{
			{Name: "read-only-for-everyone", Effect: Allow, When: "tool.annotations.readOnlyHint"},
			{Name: "ops-may-change-things", Effect: Allow, When: "has(user.claims.groups) && 'ops' in user.claims.groups"},
			{Name: "destructive-only-ops", Effect: Deny,
				When: "tool.annotations.destructiveHint && !tool.annotations.readOnlyHint && !(has(user.claims.groups) && 'ops' in user.claims.groups)"},
			{Name: "writes-stay-in-the-workspace", Effect: Deny, Tools: []string{"files_write_file"},
				When: "!args.path.startsWith('/mnt/user-data/workspace/') || args.path.contains('..')"},
		},
	})
}

func TestExample(t *testing.T) {
	s := exampleSet(t)
	dev := &mcpflow.Caller{UserID: "dev", Provider: "idp", Claims: claims(t, `{"groups": ["dev"]}`)}
	ops := &mcpflow.Caller{UserID: "op", Provider: "idp", Claims: claims(t, `{"groups": ["ops", "dev"]}`)}
	static := &mcpflow.Caller{UserID: "alice"}
	read := tool("files", "read_file", `{"readOnlyHint": true}`)
	drop := tool("db", "drop_table", `{"destructiveHint": true}`)
	plain := tool("db", "query", "") // MCP's defaults: destructive, not read-only
	write := tool("files", "write_file", `{"destructiveHint": false}`)

	for _, c := range []*mcpflow.Caller{dev, ops, static} {
		if d := s.Visible(Input{Caller: c, Tool: read}); !d.Allowed || d.Hidden {
			t.Errorf("%s: read-only tool hidden: %+v", c.UserID, d)
		}
	}
	if d := s.Visible(Input{Caller: dev, Tool: drop}); !d.Hidden || d.Rule != "destructive-only-ops" {
		t.Errorf("dev sees drop_table: %+v", d)
	}
	if d := s.Visible(Input{Caller: static, Tool: plain}); !d.Hidden || d.Rule != "destructive-only-ops" {
		t.Errorf("a static token's user sees an unannotated tool: %+v", d)
	}
	if d := s.Decide(Input{Caller: ops, Tool: drop}, nil); !d.Allowed || d.Rule != "ops-may-change-things" {
		t.Errorf("ops refused drop_table: %+v", d)
	}
	// write_file is not destructive and not read-only: only ops are allowed
	// it (default deny), and only in the workspace.
	if d := s.Visible(Input{Caller: dev, Tool: write}); !d.Hidden || d.Rule != "" {
		t.Errorf("dev sees write_file: %+v", d)
	}
	if d := s.Visible(Input{Caller: ops, Tool: write}); d.Hidden {
		t.Errorf("ops do not see write_file: %+v", d)
	}
	in := Input{Caller: ops, Tool: write}
	if d := s.Decide(in, map[string]any{"path": "/mnt/user-data/workspace/a.txt"}); !d.Allowed {
		t.Errorf("ops refused a write in the workspace: %+v", d)
	}
	for _, p := range []any{"/etc/passwd", "/mnt/user-data/workspace/../../etc/passwd", 42} {
		d := s.Decide(in, map[string]any{"path": p})
		if d.Allowed || d.Hidden || d.Rule != "writes-stay-in-the-workspace" {
			t.Errorf("path %v: %+v", p, d)
		}
		if err := d.Refusal(); mcpflow.ErrorCode(err) != mcpflow.EForbidden || !strings.Contains(err.Error(), `"writes-stay-in-the-workspace"`) ||
			strings.Contains(err.Error(), "passwd") {
			t.Errorf("refusal: %v", err)
		}
	}
	// No path at all: the deny rule cannot be evaluated, so it refuses.
	if d := s.Decide(in, nil); d.Allowed || !d.Failed || d.Rule != "writes-stay-in-the-workspace" {
		t.Errorf("no path: %+v", d)
	}
}

func TestDefaultsAndServers(t *testing.T) {
	var none *Set
	if d := none.Decide(Input{Tool: tool("a", "b", "")}, nil); !d.Allowed {
		t.Fatal("a nil set refuses")
	}
	s := mustCompile(t, Config{ServerDefaults: map[string]string{"vault": Deny},
		Rules: []Rule{{Name: "admins-open-the-vault", Effect: Allow, Servers: []string{"vault"}, When: "user.admin"}}})
	if d := s.Visible(Input{UserID: "u", Tool: tool("files", "read", "")}); !d.Allowed {
		t.Errorf("global default allow: %+v", d)
	}
	if d := s.Visible(Input{UserID: "u", Tool: tool("vault", "read", "")}); !d.Hidden {
		t.Errorf("server default deny: %+v", d)
	}
	if d := s.Decide(Input{Caller: &mcpflow.Caller{Admin: true}, Tool: tool("vault", "read", "")}, nil); !d.Allowed || d.Rule != "admins-open-the-vault" {
		t.Errorf("admin: %+v", d)
	}
	// Globs: over server names and visible tool names.
	g := mustCompile(t, Config{Rules: []Rule{{Name: "no-deletes", Effect: Deny, Tools: []string{"*_delete_*"}}}})
	if d := g.Visible(Input{Tool: tool("files", "delete_file", "")}); !d.Hidden || d.Rule != "no-deletes" {
		t.Errorf("glob: %+v", d)
	}
	if d := g.Visible(Input{Tool: tool("files", "read_file", "")}); d.Hidden {
		t.Errorf("glob matched read_file: %+v", d)
	}
}

// A rule over the arguments leaves the tool listed; a rule that cannot be
// evaluated never allows.
func TestArgumentsAndErrors(t *testing.T) {
	s := mustCompile(t, Config{Default: Deny, Rules: []Rule{
		{Name: "small-only", Effect: Allow, When: "args.n < 10"},
	}})
	in := Input{UserID: "u", Tool: tool("calc", "sum", "")}
	if d := s.Visible(in); d.Hidden {
		t.Fatalf("hidden though some arguments are allowed: %+v", d)
	}
	if d := s.Decide(in, map[string]any{"n": 3.0}); !d.Allowed {
		t.Errorf("n=3: %+v", d)
	}
	for _, args := range []map[string]any{{"n": 30.0}, {"n": "3"}, {}} {
		if d := s.Decide(in, args); d.Allowed || d.Hidden || d.Rule != "" {
			t.Errorf("%v: %+v", args, d)
		}
	}
	// A deny rule over a claim the caller lacks: refused (hidden), as an
	// error, never allowed.
	b := mustCompile(t, Config{Rules: []Rule{{Name: "not-contractors", Effect: Deny, When: "user.claims.contractor"}}})
	if d := b.Visible(in); !d.Hidden || !d.Failed || d.Rule != "not-contractors" {
		t.Errorf("broken deny: %+v", d)
	}
}

// FuzzDecide: whatever the tool, claims and arguments, a call is allowed
// only when the rules say so; an evaluation error never allows.
func FuzzDecide(f *testing.F) {
	f.Add("files_write_file", `{"groups": ["ops"]}`, `{"path": "/mnt/user-data/workspace/a", "n": 1}`)
	f.Add("db_drop", `{"groups": "ops"}`, `{"n": "1"}`)
	f.Add("x", `{}`, `{"n": -1e308}`)
	f.Add("*", `{"groups": [1, null, {"a": "ops"}]}`, `{"n": [1]}`)
	s, err := Compile(Config{Default: Deny, Rules: []Rule{
		{Name: "ops", Effect: Allow, When: "'ops' in user.claims.groups"},
		{Name: "small", Effect: Deny, When: "args.n > 0"},
		{Name: "no-etc", Effect: Deny, When: "has(args.path) && args.path.startsWith('/etc')"},
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name, claimsJSON, argsJSON string) {
		var c map[string]json.RawMessage
		var args map[string]any
		if json.Unmarshal([]byte(claimsJSON), &c) != nil || json.Unmarshal([]byte(argsJSON), &args) != nil {
			return
		}
		tl := &mcpflow.Tool{Name: name, Server: "s", OriginalName: name}
		d := s.Decide(Input{Caller: &mcpflow.Caller{UserID: "u", Claims: c}, Tool: tl}, args)
		if !d.Allowed {
			return
		}
		var groups []any
		if json.Unmarshal(c["groups"], &groups) != nil || !containsString(groups, "ops") {
			t.Fatalf("allowed without ops in groups: claims %s", claimsJSON)
		}
		n, ok := args["n"].(float64)
		if !ok || n > 0 {
			t.Fatalf("allowed with n = %v", args["n"])
		}
		if p, ok := args["path"]; ok {
			if p, ok := p.(string); !ok || strings.HasPrefix(p, "/etc") {
				t.Fatalf("allowed with path = %v", args["path"])
			}
		}
	})
}

// The rules that read the arguments are decided in one evaluation when
// none of them holds; when one holds or fails to evaluate, each is decided
// on its own, so the decision names the same rule as without the join.
func TestArgRulesJoined(t *testing.T) {
	s := mustCompile(t, Config{Rules: []Rule{
		{Name: "no-etc", Effect: Deny, When: "args.path.startsWith('/etc')"},
		{Name: "small", Effect: Deny, When: "args.n > 3"},
		{Name: "review-big", Effect: Approve, When: "args.n > 2", Approvers: []string{"group:ops"}},
		{Name: "other-tool", Effect: Deny, Tools: []string{"other"}, When: "args.n > 0"},
	}})
	in := Input{UserID: "u", Tool: tool("calc", "sum", "")}
	if e := s.visible(in); e.anyArgs == nil {
		t.Fatal("three rules read the arguments and apply, but are not joined")
	}
	for _, c := range []struct {
		args           map[string]any
		allowed, fails bool
		rule           string
	}{
		{map[string]any{"path": "/home", "n": int64(1)}, true, false, ""},
		{map[string]any{"path": "/home", "n": int64(5)}, false, false, "small"},
		{map[string]any{"path": "/etc/x", "n": int64(5)}, false, false, "no-etc"},
		{map[string]any{"n": int64(1)}, false, true, "no-etc"}, // no path: the deny cannot be decided
		{map[string]any{"path": "/home", "n": int64(3)}, true, false, "review-big"},
		{map[string]any{"path": 7, "n": int64(0)}, false, true, "no-etc"},
	} {
		d := s.Decide(in, c.args)
		if d.Allowed != c.allowed || d.Failed != c.fails || d.Rule != c.rule || (c.rule == "review-big") != (d.Approval != nil) {
			t.Errorf("%v: %+v", c.args, d)
		}
	}
}

func containsString(l []any, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

// An approve rule lets the tool be seen, sends the calls its condition
// holds for to approval (deny over approve over allow), and refuses when
// its condition cannot be evaluated.
func TestApprove(t *testing.T) {
	s := mustCompile(t, Config{Rules: []Rule{
		{Name: "big-transfers", Effect: Approve, Tools: []string{"bank_*"}, When: "args.amount > 1000", Approvers: []string{"group:finance", "user:cfo"}, ApprovalTimeoutSeconds: 600},
		{Name: "no-weekend", Effect: Deny, Tools: []string{"bank_*"}, When: "args.amount > 1000000"},
		{Name: "bank-for-all", Effect: Allow, Tools: []string{"bank_*"}},
		{Name: "drops", Effect: Approve, Tools: []string{"db_drop"}, Approvers: []string{"group:ops"}},
	}, Default: Deny})
	dev := &mcpflow.Caller{UserID: "dev"}
	pay := tool("bank", "pay", "")
	if d := s.Visible(Input{Caller: dev, Tool: pay}); d.Hidden {
		t.Fatalf("pay hidden: %+v", d)
	}
	if d := s.Visible(Input{Caller: dev, Tool: tool("db", "drop", "")}); d.Hidden {
		t.Fatalf("an approve rule alone hides its tool under a deny default: %+v", d)
	}
	in := Input{Caller: dev, Tool: pay}
	if d := s.Decide(in, map[string]any{"amount": 10}); !d.Allowed || d.Approval != nil || d.Rule != "bank-for-all" {
		t.Errorf("small: %+v", d)
	}
	d := s.Decide(in, map[string]any{"amount": 5000})
	if !d.Allowed || d.Rule != "big-transfers" || d.Approval == nil || d.Approval.Timeout != 10*time.Minute ||
		strings.Join(d.Approval.Approvers, " ") != "group:finance user:cfo" || d.Approval.Rule != "big-transfers" {
		t.Errorf("big: %+v %+v", d, d.Approval)
	}
	if d := s.Decide(in, map[string]any{"amount": 5_000_000}); d.Allowed || d.Rule != "no-weekend" {
		t.Errorf("deny over approve: %+v", d)
	}
	if d := s.Decide(in, map[string]any{"amount": "lots"}); d.Allowed || !d.Failed || d.Rule != "big-transfers" {
		t.Errorf("an approve rule that cannot be evaluated refuses: %+v", d)
	}
	if d := s.Decide(Input{Caller: dev, Tool: tool("db", "drop", "")}, nil); !d.Allowed || d.Approval == nil || d.Approval.Timeout != DefaultApprovalTimeout {
		t.Errorf("drop: %+v", d)
	}
}

// argFields: the fields a condition reads of the arguments, when it reads
// them only by field.
func TestArgFields(t *testing.T) {
	for src, want := range map[string][]string{
		"has(args.path) && args.path.startsWith('/etc')":  {"path"},
		"args.n > 3 || size(args.tags) > 2 && user.admin": {"n", "tags"},
		"has(args.a.b) && args.a.b == [args.c]":           {"a", "c"},
		"{'k': args.v}.k == 1":                            {"v"},
		"args.l.exists(x, x == args.m)":                   {"l", "m"},
		"size(args) > 0":                                  nil, // args whole
		"args['path'] == 'x'":                             nil,
		"'path' in args":                                  nil,
		"args.all(k, k != 'x')":                           nil,
		"[1].exists(args, args == 1) && has(args.p)":      nil, // a variable named args
		"user.admin":                                      nil, // no arguments read: no partial
	} {
		e, err := celEnv()
		if err != nil {
			t.Fatal(err)
		}
		_, _, got, err := compileWhen(e, src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: fields %q, want %q", src, got, want)
		}
	}
}

// FuzzArgsUnnamed: a call whose arguments name none of the fields the
// argument rules read is decided as the full evaluation decides it.
func FuzzArgsUnnamed(f *testing.F) {
	for _, s := range []string{`{"message": "hi"}`, `{"path": "/etc/x"}`, `{"n": 5}`, `{"pat\u0068": "/etc"}`, `{}`, `null`,
		`{"a": {"path": "/etc"}}`, `{"n": "x", "m": 1}`, `[1]`, `{"x": 1, "x": 2}`, `{"path": "/tmp/a", "n": 9}`} {
		f.Add(s, true)
		f.Add(s, false)
	}
	byField, err := Compile(Config{Rules: []Rule{
		{Name: "etc", Effect: Deny, When: "has(args.path) && args.path.startsWith('/etc')"},
		{Name: "big", Effect: Deny, When: "args.n > 3"},
		{Name: "review", Effect: Approve, When: "has(args.m) && args.m == 1", Approvers: []string{"group:ops"}},
		{Name: "ok", Effect: Allow, When: "user.id == 'u'"},
	}})
	if err != nil {
		f.Fatal(err)
	}
	mixed, err := Compile(Config{Rules: []Rule{
		{Name: "etc", Effect: Deny, When: "has(args.path) && args.path.startsWith('/etc')"},
		{Name: "many", Effect: Deny, When: "size(args) > 3"},
	}})
	if err != nil {
		f.Fatal(err)
	}
	noArgRules, err := Compile(Config{Rules: []Rule{
		{Name: "not-v", Effect: Deny, When: "user.id == 'v'"},
		{Name: "review", Effect: Approve, Tools: []string{"calc_*"}, Approvers: []string{"group:ops"}},
	}})
	if err != nil {
		f.Fatal(err)
	}
	// Denied unless an argument allows it: the default decides a call
	// without the field.
	denyDefault, err := Compile(Config{Default: Deny, Rules: []Rule{
		{Name: "scoped", Effect: Allow, When: "has(args.path) && args.path.startsWith('/tmp/')"},
		{Name: "not-big", Effect: Deny, When: "has(args.n) && args.n > 3"},
	}})
	if err != nil {
		f.Fatal(err)
	}
	in := Input{UserID: "u", Tool: tool("calc", "sum", "")}
	if e := denyDefault.visible(in); e.noArgs == nil || e.noArgs.Allowed {
		f.Fatalf("default deny: noArgs %+v", e.noArgs)
	}
	if e := noArgRules.visible(in); e.noArgs == nil || e.noArgs.Approval == nil || e.fields != nil {
		f.Fatalf("no rule reads the arguments: fields %q, noArgs %+v", e.fields, e.noArgs)
	}
	if e := byField.visible(in); e.noArgs == nil || !slices.Equal(e.fields, []string{"path", "n", "m"}) {
		f.Fatalf("fields %q, noArgs %v", e.fields, e.noArgs)
	}
	if e := mixed.visible(in); e.noArgs != nil {
		f.Fatal("a rule reads the arguments whole, yet they may go unread")
	}
	f.Fuzz(func(t *testing.T, raw string, asMap bool) {
		call := mcpflow.ToolCall{RawArguments: []byte(raw)}
		if asMap {
			var m map[string]any
			if json.Unmarshal([]byte(raw), &m) != nil || m == nil {
				return
			}
			call = mcpflow.ToolCall{Arguments: m}
		}
		for _, s := range []*Set{byField, mixed, noArgRules, denyDefault} {
			e := s.visible(in)
			got, err := s.decideCall(in, e, call)
			full, ferr := policyArgs(call, true)
			if (err == nil) != (ferr == nil) {
				t.Fatalf("%s: decideCall %v, policyArgs %v", raw, err, ferr)
			}
			if err != nil {
				if got.Allowed {
					t.Fatalf("%s: refused arguments, yet allowed", raw)
				}
				continue
			}
			want := s.decideArgs(in, e, full)
			if got.Allowed != want.Allowed || got.Rule != want.Rule || got.Failed != want.Failed || (got.Approval == nil) != (want.Approval == nil) {
				t.Fatalf("%s: %+v, full evaluation %+v", raw, got, want)
			}
		}
	})
}
