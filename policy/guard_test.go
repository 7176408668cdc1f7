package policy

import (
	"context"
	"testing"

	"github.com/mcpflow/mcpflow"
)

// fakeRuntime lists tools and counts calls.
type fakeRuntime struct {
	tools []mcpflow.Tool
	down  []mcpflow.UnavailableServer
	calls int
}

func (f *fakeRuntime) ListTools(context.Context, string, string) ([]mcpflow.Tool, error) {
	return f.tools, nil
}
func (f *fakeRuntime) UnavailableServers(context.Context, string) ([]mcpflow.UnavailableServer, error) {
	return f.down, nil
}
func (f *fakeRuntime) CallTool(context.Context, mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	f.calls++
	return &mcpflow.ToolResult{}, nil
}
func (f *fakeRuntime) RoutingHints([]mcpflow.Tool) string { return "" }
func (f *fakeRuntime) ResetCache()                        {}

// With policies in force, a tool missing from the listing (its server is
// down, the configuration is changing) is refused as unknown and never
// passed on undecided; without policies the runtime answers it.
func TestGuardRefusesToolsItCannotDecide(t *testing.T) {
	rt := &fakeRuntime{tools: []mcpflow.Tool{{Name: "demo_echo", Server: "demo"}}}
	set := mustCompile(t, Config{Default: Deny, Rules: []Rule{{Name: "echo", Effect: Allow, Tools: []string{"demo_echo"}}}})
	g := &Guard{Next: rt, Policies: func(context.Context) (*Set, error) { return set, nil }}
	ctx := mcpflow.WithCaller(context.Background(), &mcpflow.Caller{UserID: "u"})
	if _, err := g.CallTool(ctx, mcpflow.ToolCall{UserID: "u", Tool: "db_drop_table"}); mcpflow.ErrorCode(err) != mcpflow.ENotFound || rt.calls != 0 {
		t.Fatalf("a tool outside the listing: %v, %d calls reached the runtime", err, rt.calls)
	}
	if _, err := g.CallTool(ctx, mcpflow.ToolCall{UserID: "u", Tool: "demo_echo"}); err != nil || rt.calls != 1 {
		t.Fatalf("an allowed tool: %v, %d calls", err, rt.calls)
	}
	open := &Guard{Next: rt, Policies: func(context.Context) (*Set, error) { return nil, nil }}
	if _, err := open.CallTool(ctx, mcpflow.ToolCall{UserID: "u", Tool: "db_drop_table"}); err != nil || rt.calls != 2 {
		t.Fatalf("without policies the runtime decides: %v, %d calls", err, rt.calls)
	}
}

// Argument numbers reach conditions exactly: an integer beyond 2^53
// compares as sent.
func TestPolicyArgsExact(t *testing.T) {
	args, err := policyArgs(mcpflow.ToolCall{RawArguments: []byte(`{"id": 9007199254740993, "x": 1.5, "l": [2]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if args["id"] != int64(9007199254740993) || args["x"] != 1.5 || args["l"].([]any)[0] != int64(2) {
		t.Fatalf("%#v", args)
	}
}

// A server that is down is named only to callers the policies would let
// see its tools.
func TestGuardUnavailableServers(t *testing.T) {
	rt := &fakeRuntime{down: []mcpflow.UnavailableServer{{Server: "db", Reason: "down"}, {Server: "docs", Reason: "down"}, {Server: "vault", Reason: "down"}}}
	set := mustCompile(t, Config{ServerDefaults: map[string]string{"vault": Deny},
		Rules: []Rule{{Name: "no-db", Effect: Deny, Servers: []string{"db"}, When: "!user.admin"}}})
	g := &Guard{Next: rt, Policies: func(context.Context) (*Set, error) { return set, nil }}
	names := func(c *mcpflow.Caller) []string {
		down, err := g.UnavailableServers(mcpflow.WithCaller(context.Background(), c), c.UserID)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, d := range down {
			n = append(n, d.Server)
		}
		return n
	}
	if got := names(&mcpflow.Caller{UserID: "u"}); len(got) != 1 || got[0] != "docs" {
		t.Fatalf("a user is told of %v, want [docs]", got)
	}
	if got := names(&mcpflow.Caller{UserID: "a", Admin: true}); len(got) != 2 {
		t.Fatalf("an admin is told of %v, want [db docs]", got)
	}
}
