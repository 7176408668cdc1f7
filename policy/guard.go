package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/ratelimit"
)

// Guard is the ToolRuntime the API and the MCP endpoint call: Next seen
// through the policies in force, for the caller of each request
// (mcpflow.CallerFrom). Without policies it adds nothing but a lookup of
// them. Durable tasks' polls, cancels and answers do not pass through it:
// a running task stays its owner's to follow, cancel and answer after a
// policy change.
type Guard struct {
	Next mcpflow.ToolRuntime
	// Policies returns the policies of the configuration Next uses (nil:
	// none).
	Policies func(ctx context.Context) (*Set, error)
	// Views returns the virtual servers of the configuration Next uses
	// (nil: none); a request to one (mcpflow.ToolViewFrom) sees its tools
	// only, by its names.
	Views func(ctx context.Context) (map[string]*VirtualServer, error)
	// Limiter, when set, holds the counts of the policies' limits.
	Limiter *ratelimit.Limiter
	// Approvals starts the durable task of a call an approve rule holds
	// for (nil: such calls are refused, durable tasks being off).
	Approvals mcpflow.Approvals
	// Audit, when set, receives one record per call: the tool, its server,
	// the decision and the rule that made it, the outcome, the latency and
	// the durable task's id; it adds what the request context says.
	Audit func(ctx context.Context, r mcpflow.AuditRecord)
}

var (
	_ mcpflow.ToolRuntime = (*Guard)(nil)
	_ mcpflow.ToolLookup  = (*Guard)(nil)
	_ mcpflow.ToolViews   = (*Guard)(nil)
)

func input(ctx context.Context, userID, threadID string, t *mcpflow.Tool) Input {
	return Input{Caller: mcpflow.CallerFrom(ctx), UserID: userID, ThreadID: threadID, Tool: t}
}

// ListTools lists the tools of Next the caller may see.
func (g *Guard) ListTools(ctx context.Context, userID, threadID string) ([]mcpflow.Tool, error) {
	set, v, err := g.scope(ctx)
	if err != nil {
		return nil, err
	}
	tools, err := g.Next.ListTools(ctx, userID, threadID)
	if err != nil || set == nil && v == nil {
		return tools, err
	}
	visible := make([]mcpflow.Tool, 0, len(tools)) // Next's slice may be its cache
	for i := range tools {
		if set.Visible(input(ctx, userID, threadID, &tools[i])).Allowed {
			visible = append(visible, tools[i])
		}
	}
	if v != nil {
		return inView(v, visible), nil
	}
	return visible, nil
}

// scope is what a request sees through: the policies in force and its
// virtual server (nil: none).
func (g *Guard) scope(ctx context.Context) (*Set, *VirtualServer, error) {
	set, err := g.Policies(ctx)
	if err != nil {
		return nil, nil, err
	}
	v, err := g.view(ctx)
	return set, v, err
}

// LookupTool finds a tool the caller may see; nil for one it may not.
func (g *Guard) LookupTool(ctx context.Context, userID, threadID, name string) (*mcpflow.Tool, error) {
	set, v, err := g.scope(ctx)
	if err != nil {
		return nil, err
	}
	var vt VirtualTool
	if v != nil {
		var ok bool
		if vt, ok = v.real(name); !ok {
			return nil, nil
		}
		name = vt.Tool
	}
	t, err := g.lookup(ctx, userID, threadID, name)
	if err != nil || t == nil || set != nil && !set.Visible(input(ctx, userID, threadID, t)).Allowed {
		return nil, err
	}
	if v != nil {
		shown := present(*t, vt)
		return &shown, nil
	}
	return t, nil
}

func (g *Guard) lookup(ctx context.Context, userID, threadID, name string) (*mcpflow.Tool, error) {
	if l, ok := g.Next.(mcpflow.ToolLookup); ok {
		return l.LookupTool(ctx, userID, threadID, name)
	}
	tools, err := g.Next.ListTools(ctx, userID, threadID)
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i], nil
		}
	}
	return nil, err
}

// CallTool calls a tool the policies allow for the caller with these
// arguments. A tool the caller may not see is answered as unknown (the
// runtime's own words); a call refused because of its arguments is
// EForbidden, naming the rule.
func (g *Guard) CallTool(ctx context.Context, call mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	set, v, err := g.scope(ctx)
	if err != nil {
		return nil, err
	}
	if v != nil {
		// A virtual server's name for the tool: called by its own name, and
		// unknown as the caller named it.
		exposed := call.Tool
		vt, ok := v.real(exposed)
		if !ok {
			return nil, mcpflow.UnknownTool(exposed)
		}
		call.Tool = vt.Tool
		res, err := g.callTool(ctx, set, call)
		if mcpflow.ErrorCode(err) == mcpflow.ENotFound {
			err = mcpflow.UnknownTool(exposed)
		}
		return res, err
	}
	return g.callTool(ctx, set, call)
}

func (g *Guard) callTool(ctx context.Context, set *Set, call mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	if set == nil && g.Audit == nil {
		return g.Next.CallTool(ctx, call)
	}
	start := time.Now()
	rec := mcpflow.AuditRecord{Time: start, Kind: mcpflow.AuditCall, UserID: call.UserID, ThreadID: call.ThreadID, Tool: call.Tool}
	t, err := g.lookup(ctx, call.UserID, call.ThreadID, call.Tool)
	var approval *mcpflow.ApprovalRequest
	if err == nil && t == nil && set != nil {
		// Not in the listing the policies decide over (a server that is
		// down, a configuration changing): refused as unknown, never
		// passed on undecided.
		err = mcpflow.UnknownTool(call.Tool)
	}
	if err == nil && t != nil && set != nil {
		rec.Server = t.Server
		in := input(ctx, call.UserID, call.ThreadID, t)
		e := set.visible(in)
		d := e.d
		if d.Hidden {
			err = mcpflow.UnknownTool(call.Tool)
		} else {
			if d, err = set.decideCall(in, e, call); err == nil && !d.Allowed {
				err = d.Refusal()
			}
		}
		rec.Decision, rec.Rule = Deny, d.Rule
		approval = d.Approval
		if d.Allowed {
			rec.Decision = Allow
			if lim, lerr := g.limit(ctx, call.UserID, set.Limits(t)); lerr != nil {
				err, rec.Decision = lerr, Deny
				if lim != "" {
					rec.Rule = lim
				}
			}
		}
	} else if t != nil {
		rec.Server = t.Server
	}
	if g.Audit != nil && t != nil {
		rec.Arguments = auditedArguments(call, set.AuditFields(t.Name))
	}
	var res *mcpflow.ToolResult
	switch {
	case err == nil && approval != nil:
		rec.Decision = Approve
		res, err = g.approve(ctx, call, t, approval)
	case err == nil:
		res, err = g.Next.CallTool(ctx, call) // an unknown tool: the runtime answers
	}
	if g.Audit != nil {
		rec.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
		rec.Outcome = callOutcome(res, err, rec.Decision)
		if res != nil {
			rec.TaskID = res.Task
		}
		g.Audit(ctx, rec)
	}
	return res, err
}

// approve starts the durable task of a call that waits for approval.
func (g *Guard) approve(ctx context.Context, call mcpflow.ToolCall, t *mcpflow.Tool, req *mcpflow.ApprovalRequest) (*mcpflow.ToolResult, error) {
	switch {
	case t.TaskToolset != nil:
		return nil, mcpflow.Errorf(mcpflow.EForbidden, "the call needs approval by policy rule %q, which durable task tools do not support", req.Rule)
	case g.Approvals == nil:
		return nil, mcpflow.Errorf(mcpflow.EUnavailable, "the call needs approval by policy rule %q, and durable tasks are off (mcp_tasks.enabled)", req.Rule)
	}
	return g.Approvals.SubmitApproval(ctx, call, *t, *req)
}

// limit spends one call of each of limits; the first one reached refuses
// the call (ETooMany with its retry delay), named.
func (g *Guard) limit(ctx context.Context, userID string, limits []Limit) (string, error) {
	if g.Limiter == nil {
		return "", nil
	}
	for _, l := range limits {
		key := "limit:" + l.Name
		if l.Per == PerUser {
			key += ":user:" + userID
		}
		ok, wait, err := g.Limiter.Take(ctx, key, ratelimit.Spec{PerSecond: l.PerMinute / 60, Burst: l.Burst, Daily: l.Daily})
		if err != nil {
			return l.Name, &mcpflow.Error{Code: mcpflow.EUnavailable, Message: "rate limits cannot be checked right now; retry shortly", Err: err,
				RetryAfter: 5 * time.Second}
		}
		if !ok {
			secs := int(math.Ceil(wait.Seconds()))
			return l.Name, &mcpflow.Error{Code: mcpflow.ETooMany, RetryAfter: time.Duration(secs) * time.Second,
				Message: fmt.Sprintf("rate limit %q reached; retry in %d s", l.Name, secs)}
		}
	}
	return "", nil
}

// auditedArguments are the named fields of the call's arguments that are
// present, as a JSON object ("" for none).
func auditedArguments(call mcpflow.ToolCall, fields []string) string {
	if len(fields) == 0 {
		return ""
	}
	args, err := policyArgs(call, true)
	if err != nil {
		return ""
	}
	picked := make(map[string]any, len(fields))
	total := 0
	for _, f := range fields {
		v, ok := args[f]
		if !ok {
			continue
		}
		b, _ := json.Marshal(v)
		if len(b) > maxAuditedValue {
			v = fmt.Sprintf("(%d bytes, not recorded)", len(b))
			b, _ = json.Marshal(v)
		}
		if total += len(f) + len(b); total > maxAuditedArguments {
			break
		}
		picked[f] = v
	}
	if len(picked) == 0 {
		return ""
	}
	b, _ := json.Marshal(picked)
	return string(b)
}

// Bounds of the argument fields an audit record holds: a value's JSON, and
// all of them (fields beyond are left out).
const (
	maxAuditedValue     = 1024
	maxAuditedArguments = 4096
)

// callOutcome names how a call ended for the audit log.
func callOutcome(res *mcpflow.ToolResult, err error, decision string) string {
	switch {
	case decision == Deny || mcpflow.ErrorCode(err) == mcpflow.ENotFound || mcpflow.ErrorCode(err) == mcpflow.ETooMany:
		return mcpflow.OutcomeRefused
	case err != nil:
		return mcpflow.OutcomeUpstreamError
	case decision == Approve:
		return mcpflow.OutcomePending
	case res.IsError:
		return mcpflow.OutcomeToolError
	}
	return mcpflow.OutcomeOK
}

// decideCall decides a call of a tool visible() found visible (e). Its
// arguments are decoded when a rule that applies reads them, unless they
// name none of the fields those rules read (e.noArgs is then the
// decision), and checked either way: arguments that are not one JSON
// object (or null), or name a key twice, refuse the call (a zero
// Decision and the error).
func (s *Set) decideCall(in Input, e visEntry, call mcpflow.ToolCall) (Decision, error) {
	if e.noArgs != nil && !(e.readsArgs && namesAny(call, e.fields)) {
		if _, err := policyArgs(call, false); err != nil {
			return Decision{}, err
		}
		return *e.noArgs, nil
	}
	args, err := policyArgs(call, e.readsArgs)
	if err != nil {
		return Decision{}, err
	}
	return s.decideArgs(in, e, args), nil
}

// namesAny reports whether the call's arguments have one of fields at
// their top level (as the decoder reads the keys).
func namesAny(call mcpflow.ToolCall, fields []string) bool {
	if call.Arguments != nil || len(call.RawArguments) == 0 {
		for _, f := range fields {
			if _, ok := call.Arguments[f]; ok {
				return true
			}
		}
		return false
	}
	return scanJSON(call.RawArguments, fields...).named
}

// policyArgs are the call's arguments as CEL reads them, decoded only when
// a rule reads them (decode). An object that names a key twice is refused
// either way: the conditions would see one of its values and the server,
// which gets the arguments as sent, might read the other.
func policyArgs(call mcpflow.ToolCall, decode bool) (map[string]any, error) {
	raw := call.RawArguments
	if call.Arguments != nil || len(raw) == 0 {
		if call.Arguments == nil || !decode {
			return nil, nil // a map has no duplicate keys; nil reads as {}
		}
		var err error
		if raw, err = json.Marshal(call.Arguments); err != nil {
			return nil, mcpflow.Errorf(mcpflow.EInvalid, "arguments must be a JSON object")
		}
	}
	notObject := func() error { return mcpflow.Errorf(mcpflow.EInvalid, "arguments must be a JSON object") }
	scan := scanJSON(raw)
	var args map[string]any
	switch {
	case !decode:
		if t := raw[skipSpace(raw, 0):]; !json.Valid(raw) || t[0] != '{' && t[0] != 'n' { // valid: an object or null
			return nil, notObject()
		}
	default:
		if m, ok := flatObject(raw); ok {
			args = m
			break
		}
		// Into an interface, which the decoder fills without reflection.
		var v any
		if scan.numbers {
			// Numbers kept exact: json.Number, then int64 where they fit.
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if dec.Decode(&v) != nil || skipSpace(raw, int(dec.InputOffset())) != len(raw) {
				return nil, notObject()
			}
			v = exactNumbers(v)
		} else if json.Unmarshal(raw, &v) != nil {
			// No number: the plain decoder (a json.Decoder costs its
			// buffer and as much again in allocations).
			return nil, notObject()
		}
		var ok bool
		if args, ok = v.(map[string]any); !ok && v != nil {
			return nil, notObject()
		}
	}
	if scan.dup {
		return nil, mcpflow.Errorf(mcpflow.EInvalid, "arguments name the key %q twice in one object", mcpflow.TruncateChars(scan.key, 64))
	}
	return args, nil
}

// jsonScan is what scanJSON found.
type jsonScan struct {
	key     string // the first key named twice in one object
	dup     bool
	numbers bool // a number appears (outside strings)
	named   bool // the top-level object has a key of the fields asked
}

// flatObject decodes raw as json.Unmarshal into an interface would when
// it is an object whose values are strings without escapes, true, false or
// null, as most tools' arguments are; anything else is not ok, for the
// decoder to read. It costs the map and its strings, not a decoder's state,
// which in a call's decision is a third of what the policies cost.
func flatObject(raw []byte) (map[string]any, bool) {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, false
	}
	m := map[string]any{}
	if i = skipSpace(raw, i+1); i < len(raw) && raw[i] == '}' {
		return m, skipSpace(raw, i+1) == len(raw)
	}
	for {
		key, j, ok := plainString(raw, i)
		if i = skipSpace(raw, j); !ok || i == len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
		var v any
		switch rest := raw[i:]; {
		case len(rest) > 0 && rest[0] == '"':
			if v, i, ok = plainString(raw, i); !ok {
				return nil, false
			}
		case bytes.HasPrefix(rest, []byte("true")):
			v, i = true, i+4
		case bytes.HasPrefix(rest, []byte("false")):
			v, i = false, i+5
		case bytes.HasPrefix(rest, []byte("null")):
			i += 4
		default:
			return nil, false
		}
		m[key] = v
		switch i = skipSpace(raw, i); {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == '}':
			return m, skipSpace(raw, i+1) == len(raw)
		default:
			return nil, false
		}
	}
}

// plainString reads the string at raw[i] when it has no escape, control
// character or invalid UTF-8, and returns it and the index after it.
func plainString(raw []byte, i int) (string, int, bool) {
	if i == len(raw) || raw[i] != '"' {
		return "", i, false
	}
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			s := raw[i+1 : j]
			return string(s), j + 1, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return "", j, false
		}
	}
	return "", len(raw), false
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// scanJSON reads raw (valid JSON, or what reaches the decoder next) once:
// whether an object names a key twice, whether a number appears and
// whether the top-level object has a key of fields. Objects of up to 8
// keys (most arguments) are checked without allocating.
func scanJSON(raw []byte, fields ...string) jsonScan {
	var out jsonScan
	var levels [8]keySet
	stack := levels[:0]
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '{':
			stack = append(stack, keySet{object: true, key: true})
		case '[':
			stack = append(stack, keySet{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if top := len(stack) - 1; top >= 0 {
				stack[top].key = stack[top].object
			}
		case '"':
			end, escaped := i+1, false
			for ; end < len(raw) && raw[end] != '"'; end++ {
				if raw[end] == '\\' {
					escaped = true
					end++
				}
			}
			if end >= len(raw) {
				return out // not valid JSON: the decoder says so
			}
			if top := len(stack) - 1; top >= 0 && stack[top].key {
				key := raw[i+1 : end]
				if escaped || !utf8.Valid(key) {
					var k string
					_ = json.Unmarshal(raw[i:end+1], &k) // as the decoder reads it: unescaped, invalid bytes as U+FFFD
					key = []byte(k)
				}
				if stack[top].add(key) && !out.dup {
					out.key, out.dup = string(key), true
				}
				for _, f := range fields {
					if top == 0 && string(key) == f {
						out.named = true
						break
					}
				}
				stack[top].key = false
			}
			i = end
		default:
			if c == '-' || c >= '0' && c <= '9' {
				out.numbers = true
			}
		}
	}
	return out
}

// keySet is an object's keys so far (or an array: object false).
type keySet struct {
	object bool
	key    bool // the next string is a key
	n      int
	few    [8][]byte
	more   map[string]struct{}
}

// add adds key and reports whether it was there already.
func (k *keySet) add(key []byte) bool {
	for _, f := range k.few[:min(k.n, len(k.few))] {
		if bytes.Equal(f, key) {
			return true
		}
	}
	if k.n < len(k.few) {
		k.few[k.n] = key
		k.n++
		return false
	}
	if _, dup := k.more[string(key)]; dup {
		return true
	}
	if k.more == nil {
		k.more = map[string]struct{}{}
	}
	k.more[string(key)] = struct{}{}
	return false
}

// exactNumbers turns the json.Numbers of v into int64 where they are
// integers that fit (so a condition compares 9007199254740993 as sent),
// else float64.
func exactNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = exactNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = exactNumbers(e)
		}
	}
	return v
}

// UnavailableServers is Next's, less the servers the policies hide from
// the caller: with policies in force a server is named only when a tool of
// it that no rule names by its tool name would be visible (a server-wide
// deny, or a deny default with allows by tool name only, keeps it unnamed).
func (g *Guard) UnavailableServers(ctx context.Context, userID string) ([]mcpflow.UnavailableServer, error) {
	set, err := g.Policies(ctx)
	if err != nil {
		return nil, err
	}
	down, err := g.Next.UnavailableServers(ctx, userID)
	if err != nil || set == nil {
		return down, err
	}
	named := make([]mcpflow.UnavailableServer, 0, len(down))
	for _, d := range down {
		if set.Visible(input(ctx, userID, "", &mcpflow.Tool{Server: d.Server})).Allowed {
			named = append(named, d)
		}
	}
	return named, nil
}

// RoutingHints is Next's (over the tools the caller was given).
func (g *Guard) RoutingHints(tools []mcpflow.Tool) string { return g.Next.RoutingHints(tools) }

// ResetCache is Next's.
func (g *Guard) ResetCache() { g.Next.ResetCache() }
