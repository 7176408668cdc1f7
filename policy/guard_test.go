package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/ratelimit"
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
	args, err := policyArgs(mcpflow.ToolCall{RawArguments: []byte(`{"id": 9007199254740993, "x": 1.5, "l": [2]}`)}, true)
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

// An argument object that names a key twice is refused (the conditions and
// the server could read different values), at any depth and however the
// key is escaped; malformed arguments are refused too.
func TestPolicyArgsRefused(t *testing.T) {
	for _, raw := range []string{
		`{"path": "/ws/u/a", "path": "/etc/passwd"}`,
		`{"path": "/ws/u/a", "\u0070ath": "/etc/passwd"}`,
		`{"opts": [{"to": "a", "to": "b"}]}`,
		`{"a": 1,}`,
		`{"a" 1}`,
		`[1]`,
		`{"a": 1} {"b": 2}`,
		`{"a": {"k": 1, "k": 2}, "b": 3}`,
		`{"` + strings.Repeat(`k`, 100) + `": 1, "` + strings.Repeat(`k`, 100) + `": 2}`,
	} {
		for _, decode := range []bool{true, false} { // refused whether a rule reads them or not
			_, err := policyArgs(mcpflow.ToolCall{RawArguments: []byte(raw)}, decode)
			if mcpflow.ErrorCode(err) != mcpflow.EInvalid {
				t.Errorf("%.60s (decode %v): %v, want EInvalid", raw, decode, err)
			}
			if err != nil && strings.Contains(err.Error(), "passwd") {
				t.Errorf("the refusal echoes a value: %v", err)
			}
		}
	}
	args, err := policyArgs(mcpflow.ToolCall{RawArguments: []byte(`{"a": {"x": 1}, "b": {"x": [true, null, "s"]}}`)}, true)
	if err != nil || args["b"].(map[string]any)["x"].([]any)[2] != "s" || args["a"].(map[string]any)["x"] != int64(1) {
		t.Fatalf("%#v %v", args, err)
	}
}

// scanJSON compares keys unescaped, tells keys from string values, and
// stays linear for objects with many keys.
func TestDuplicateKey(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{`)
	for i := range 5000 {
		fmt.Fprintf(&many, `"k%d": "k%d", `, i, i+1)
	}
	many.WriteString(`"last": [{"k1": 1}, {"k1": 2}]}`)
	for raw, want := range map[string]string{
		`{"a": "a", "b": {"a": "b"}}`:                  "",
		`{"a": ["a", "a"], "x": {}}`:                   "",
		`{"a\"b": 1, "a\u0022b": 2}`:                   `a"b`,
		`{"x": [1, {"y": 1, "z": 2, "y": 3}]}`:         "y",
		many.String():                                  "",
		"{\"\xee\": 1, \"\x80\": 2}":                   "\ufffd", // invalid UTF-8: both read as U+FFFD
		many.String()[:many.Len()-1] + `, "k4999": 0}`: "k4999",
	} {
		scan := scanJSON([]byte(raw))
		if got, dup := scan.key, scan.dup; got != want || dup != (want != "") {
			t.Errorf("%.40s: %q %v, want %q", raw, got, dup, want)
		}
	}
}

// FuzzDuplicateKey: on any valid JSON, scanJSON's duplicate agrees with a decoder
// that reads every object's keys (json.Decoder tokens), and scanJSON finds
// every number (the arguments without are decoded without keeping numbers
// exact).
func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"s":"1","n":[-0.5e3]}`, `{"a":{"b":[{"c":1,"c\u0000":2}]}}`, `[{"a":"a"},{"a":"a"}]`, `{"\ud800":1,"\ufffd":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		got := scanJSON([]byte(raw)).dup
		if want := tokenDuplicate(json.NewDecoder(strings.NewReader(raw))); got != want {
			t.Fatalf("%q: scanJSON's duplicate %v, tokens %v", raw, got, want)
		}
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil && hasNumber(v) && !scanJSON([]byte(raw)).numbers {
			t.Fatalf("%q: scanJSON finds no number", raw)
		}
	})
}

// FuzzFlatObject: what flatObject decodes, json.Unmarshal decodes the same.
func FuzzFlatObject(f *testing.F) {
	for _, s := range []string{`{"message": "hello"}`, ` { "a" : true , "b":false,"c" :null } `, `{}`, `{"a":"\u0041"}`, `{"a":"x"}x`,
		`{"a":"x",}`, `{"a":tru}`, "{\"a\":\"\x80\"}", `{"a":"b","a":"c"}`, `{"a": 1}`, `{"a": {"b": "c"}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, ok := flatObject([]byte(raw))
		if !ok {
			return
		}
		var want any
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("%q: flatObject %v, json.Unmarshal: %v", raw, got, err)
		}
		if !reflect.DeepEqual(any(got), want) {
			t.Fatalf("%q: flatObject %#v, json.Unmarshal %#v", raw, got, want)
		}
	})
}

func hasNumber(v any) bool {
	switch t := v.(type) {
	case json.Number:
		return true
	case map[string]any:
		for _, e := range t {
			if hasNumber(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if hasNumber(e) {
				return true
			}
		}
	}
	return false
}

// tokenDuplicate reads one value from dec and reports a key named twice
// in one of its objects.
func tokenDuplicate(dec *json.Decoder) bool {
	tok, _ := dec.Token()
	d, ok := tok.(json.Delim)
	if !ok {
		return false
	}
	dup := false
	seen := map[string]bool{}
	for dec.More() {
		if d == '{' {
			k, _ := dec.Token()
			dup = dup || seen[k.(string)]
			seen[k.(string)] = true
		}
		dup = tokenDuplicate(dec) || dup
	}
	_, _ = dec.Token()
	return dup
}

// surfaceRuntime is a runtime with one prompt and one resource.
type surfaceRuntime struct{ mcpflow.ToolRuntime }

func (surfaceRuntime) ListPrompts(context.Context, string, string) ([]json.RawMessage, error) {
	return []json.RawMessage{json.RawMessage(`{"name":"s_p"}`)}, nil
}
func (surfaceRuntime) GetPrompt(context.Context, string, string, string, map[string]any) (json.RawMessage, error) {
	return json.RawMessage(`{"messages":[]}`), nil
}
func (surfaceRuntime) ListResources(context.Context, string, string) ([]json.RawMessage, error) {
	return []json.RawMessage{json.RawMessage(`{"uri":"a://b"}`)}, nil
}
func (surfaceRuntime) ListResourceTemplates(context.Context, string, string) ([]json.RawMessage, error) {
	return []json.RawMessage{json.RawMessage(`{"uriTemplate":"a://{x}"}`)}, nil
}
func (surfaceRuntime) Complete(context.Context, string, string, map[string]any) (json.RawMessage, error) {
	return json.RawMessage(`{"completion":{"values":["x"]}}`), nil
}
func (surfaceRuntime) SubscribeResource(context.Context, string, string, string, func()) (func(), error) {
	return func() {}, nil
}
func (surfaceRuntime) WatchLists(context.Context, string, string, func(string)) (func(), error) {
	return func() {}, nil
}
func (surfaceRuntime) ReadResource(context.Context, string, string, string) (json.RawMessage, error) {
	return json.RawMessage(`{"contents":[{"uri":"a://b","text":"x"}]}`), nil
}

// Prompts and resources pass through without policies and are closed
// (none listed, each unknown, audited as refused) through a virtual
// server, which publishes tools only.
func TestGuardSurfaceClosedInView(t *testing.T) {
	ctx := context.Background()
	var recs []mcpflow.AuditRecord
	g := &Guard{Next: surfaceRuntime{}, Policies: func(context.Context) (*Set, error) { return nil, nil },
		Views: func(context.Context) (map[string]*VirtualServer, error) {
			return map[string]*VirtualServer{"v": {}}, nil
		},
		Audit: func(_ context.Context, r mcpflow.AuditRecord) { recs = append(recs, r) }}
	p, err := g.ListPrompts(ctx, "u", "t")
	if err != nil || len(p) != 1 {
		t.Fatalf("without policies: %s %v", p, err)
	}
	if r, err := g.ReadResource(ctx, "u", "t", "a://b"); err != nil || len(r) == 0 {
		t.Fatalf("without policies: %s %v", r, err)
	}
	ctx = mcpflow.WithToolView(ctx, "v")
	for name, list := range map[string]func(context.Context, string, string) ([]json.RawMessage, error){
		"prompts": g.ListPrompts, "resources": g.ListResources, "templates": g.ListResourceTemplates} {
		if items, err := list(ctx, "u", "t"); err != nil || len(items) != 0 {
			t.Errorf("%s in a virtual server: %s %v", name, items, err)
		}
	}
	var rpc *mcpflow.RPCError
	if _, err := g.GetPrompt(ctx, "u", "t", "s_p", nil); !errors.As(err, &rpc) || rpc.Code != -32602 {
		t.Errorf("prompt in a virtual server: %v", err)
	}
	if _, err := g.ReadResource(ctx, "u", "t", "a://b"); !errors.As(err, &rpc) || rpc.Code != -32602 || string(rpc.Data) != `{"uri":"a://b"}` {
		t.Errorf("resource in a virtual server: %v", err)
	}
	want := []string{"resource a://b ok", "prompt s_p refused", "resource a://b refused"}
	var got []string
	for _, r := range recs {
		got = append(got, r.Kind+" "+r.Tool+" "+r.Outcome)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit: %v, want %v", got, want)
	}
}

// filterRuntime records the servers a SurfaceRuntime call may reach.
type filterRuntime struct {
	surfaceRuntime
	allowed *[]string
}

func (f filterRuntime) ListPrompts(ctx context.Context, _, _ string) ([]json.RawMessage, error) {
	*f.allowed = (*f.allowed)[:0]
	for _, s := range []string{"open", "closed"} {
		if mcpflow.ServerAllowed(ctx, s) {
			*f.allowed = append(*f.allowed, s)
		}
	}
	return nil, nil
}

// Under policies, prompts and resources reach the servers the caller may
// see a tool of: a server-wide deny closes a server.
func TestGuardSurfaceByServer(t *testing.T) {
	ctx := context.Background()
	set, err := Compile(Config{Default: Allow, Rules: []Rule{{Name: "no-closed", Effect: Deny, Servers: []string{"closed"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var allowed []string
	g := &Guard{Next: filterRuntime{allowed: &allowed}, Policies: func(context.Context) (*Set, error) { return set, nil }}
	if _, err := g.ListPrompts(ctx, "u", "t"); err != nil || fmt.Sprint(allowed) != "[open]" {
		t.Fatalf("servers reached: %v %v", allowed, err)
	}
	g.Policies = func(context.Context) (*Set, error) { return nil, nil }
	if _, err := g.ListPrompts(ctx, "u", "t"); err != nil || fmt.Sprint(allowed) != "[open closed]" {
		t.Fatalf("without policies: %v %v", allowed, err)
	}
}

// Through the Guard, a rule that reads an argument field decides a call
// with the field; a call without it takes the decision with no arguments
// (here the deny default); arguments that are not one object are refused
// as invalid, recorded as a refusal, and spend no rate limit.
func TestGuardDecidesByArgumentField(t *testing.T) {
	rt := &fakeRuntime{tools: []mcpflow.Tool{{Name: "files_write", Server: "files"}}}
	set := mustCompile(t, Config{Default: Deny,
		Rules:  []Rule{{Name: "tmp-only", Effect: Allow, When: "has(args.path) && args.path.startsWith('/tmp/')"}},
		Limits: []Limit{{Name: "many", PerMinute: 6000}}})
	var recs []mcpflow.AuditRecord
	lim := &countingRates{}
	g := &Guard{Next: rt, Policies: func(context.Context) (*Set, error) { return set, nil }, Limiter: &ratelimit.Limiter{Store: lim, Chunk: 1},
		Audit: func(_ context.Context, r mcpflow.AuditRecord) { recs = append(recs, r) }}
	ctx := mcpflow.WithCaller(context.Background(), &mcpflow.Caller{UserID: "u"})
	for _, tc := range []struct {
		args     string
		code     string // "" allowed
		decision string
	}{
		{`{"path": "/tmp/a"}`, "", Allow},
		{`{"message": "hi"}`, mcpflow.EForbidden, Deny},
		{`{"path": "/etc/x"}`, mcpflow.EForbidden, Deny},
		{`{"message": "hi", "message": "ho"}`, mcpflow.EInvalid, Deny},
		{`[1]`, mcpflow.EInvalid, Deny},
		{`{"path": "/tmp/b"}`, "", Allow},
	} {
		calls, spent := rt.calls, lim.calls
		_, err := g.CallTool(ctx, mcpflow.ToolCall{UserID: "u", Tool: "files_write", RawArguments: json.RawMessage(tc.args)})
		if mcpflow.ErrorCode(err) != tc.code {
			t.Fatalf("%s: %v, want code %q", tc.args, err, tc.code)
		}
		rec := recs[len(recs)-1]
		if rec.Decision != tc.decision {
			t.Errorf("%s: recorded decision %q, want %q", tc.args, rec.Decision, tc.decision)
		}
		allowed := tc.code == ""
		if reached := rt.calls > calls; reached != allowed {
			t.Errorf("%s: reached the runtime %v", tc.args, reached)
		}
		if counted := lim.calls > spent; counted != allowed {
			t.Errorf("%s: spent a rate limit %v", tc.args, counted)
		}
		if !allowed && rec.Outcome != mcpflow.OutcomeRefused {
			t.Errorf("%s: outcome %q, want %q", tc.args, rec.Outcome, mcpflow.OutcomeRefused)
		}
	}
}

// countingRates grants every take and counts them.
type countingRates struct{ calls int }

func (c *countingRates) TakeTokens(_ context.Context, _ string, _ float64, _, want, _ int, _ time.Time) (int, time.Duration, error) {
	c.calls++
	return want, 0, nil
}
func (c *countingRates) TakeQuota(_ context.Context, _ string, _, want, _ int, _ time.Time) (int, error) {
	c.calls++
	return want, nil
}
