package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpflow/mcpflow"
)

// BenchmarkDecide20: what deciding one call costs with 20 rules that all
// apply (the governance figures of make bench).
func BenchmarkDecide20(b *testing.B) {
	s := rules20(b)
	in := Input{Caller: &mcpflow.Caller{UserID: "bench"}, UserID: "bench", ThreadID: "t",
		Tool: &mcpflow.Tool{Name: "demo_echo", Server: "demo", Annotations: json.RawMessage(`{"readOnlyHint": true}`)}}
	args := map[string]any{"message": "hello"}
	b.ReportAllocs()
	for b.Loop() {
		if d := s.Decide(in, args); !d.Allowed {
			b.Fatal(d)
		}
	}
}

func BenchmarkVisible20(b *testing.B) {
	s := rules20(b)
	in := Input{Caller: &mcpflow.Caller{UserID: "bench"}, UserID: "bench", ThreadID: "t",
		Tool: &mcpflow.Tool{Name: "demo_echo", Server: "demo", Annotations: json.RawMessage(`{"readOnlyHint": true}`)}}
	b.ReportAllocs()
	for b.Loop() {
		s.Visible(in)
	}
}

// BenchmarkGuardCall20: what the Guard adds to one call with 20 rules and
// an audit hook (the runtime answers at once; the record is dropped).
func BenchmarkGuardCall20(b *testing.B) {
	g, ctx, call := guard20(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.CallTool(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// evict is larger than a 2-core machine's caches.
var evict = make([]byte, 8<<20)

// BenchmarkGuardCall20Cold is BenchmarkGuardCall20 with the caches evicted
// before each call (not timed), as the rest of a call through mcpflow
// evicts them: what the Guard costs in a serving process (CPU profiles of
// mcpflow serve under make bench agree), several times its warm cost.
func BenchmarkGuardCall20Cold(b *testing.B) {
	g, ctx, call := guard20(b)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for i := 0; i < len(evict); i += 64 {
			evict[i]++
		}
		b.StartTimer()
		if _, err := g.CallTool(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// guard20 is a Guard with rules20 and an audit hook over a runtime that
// answers at once, a caller's context and a call of its tool.
func guard20(b *testing.B) (*Guard, context.Context, mcpflow.ToolCall) {
	s := rules20(b)
	rt := &fakeRuntime{tools: []mcpflow.Tool{{Name: "demo_echo", Server: "demo", Annotations: json.RawMessage(`{"readOnlyHint": true}`)}}}
	g := &Guard{Next: rt, Policies: func(context.Context) (*Set, error) { return s, nil },
		Audit: func(context.Context, mcpflow.AuditRecord) {}}
	ctx := mcpflow.WithCaller(context.Background(), &mcpflow.Caller{UserID: "bench"})
	return g, ctx, mcpflow.ToolCall{UserID: "bench", ThreadID: "t", Tool: "demo_echo", RawArguments: json.RawMessage(`{"message": "hello"}`)}
}

// rules20 are 20 rules that all apply to every call and refuse none: 10
// over the caller, 10 over the arguments.
func rules20(b *testing.B) *Set {
	var rules []Rule
	for i := range 10 {
		rules = append(rules, Rule{Name: fmt.Sprintf("u%d", i), Effect: Deny, When: fmt.Sprintf("user.id == 'blocked-%d'", i)})
		rules = append(rules, Rule{Name: fmt.Sprintf("p%d", i), Effect: Deny, When: fmt.Sprintf("has(args.path) && args.path.startsWith('/etc/%d')", i)})
	}
	s, err := Compile(Config{Rules: rules})
	if err != nil {
		b.Fatal(err)
	}
	return s
}
