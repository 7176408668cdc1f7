package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/lru"
)

// Effects of a rule, and defaults.
const (
	Allow = "allow"
	Deny  = "deny"
	// Approve sends a call for approval: a durable task waits for one of
	// the rule's approvers to approve it before the tool is called.
	Approve = "approve"
)

// Bounds of a rule's approval_timeout_seconds, and its default.
const (
	DefaultApprovalTimeout = time.Hour
	MinApprovalTimeout     = time.Minute
	MaxApprovalTimeout     = 7 * 24 * time.Hour
)

// Config is the "policies" block of extensions_config.json.
type Config struct {
	// Default decides a call no rule decided: Allow ("" too) or Deny.
	Default string
	// ServerDefaults override Default for the tools of a server.
	ServerDefaults map[string]string
	// Rules in document order (their order does not change a decision).
	Rules []Rule
	// Limits are the rate limits and daily quotas of calls.
	Limits []Limit
	// AuditArguments name, per tool (the name callers see), the argument
	// fields the audit log records with each call; no other argument value
	// is ever recorded. Name only fields that hold no secret.
	AuditArguments map[string][]string
}

// Limit bounds the calls of the tools it matches: a token bucket
// (PerMinute, Burst) and a daily quota (Daily), per user or for all
// callers together, held across replicas (package ratelimit).
type Limit struct {
	Name      string   // names the limit in refusals; unique among limits
	Servers   []string // globs over server names; none: every server
	Tools     []string // globs over visible tool names; none: every tool
	Per       string   // PerUser (default) or PerAll
	PerMinute float64  // calls per minute (0: no rate)
	Burst     int      // calls at once (default: PerMinute rounded up, at least 1)
	Daily     int      // calls per UTC day (0: no quota)
}

// Who a limit counts separately.
const (
	PerUser = "user" // each user has their own allowance
	PerAll  = "all"  // one allowance for every caller
)

// Rule allows or denies the calls it matches.
type Rule struct {
	Name    string   // names the rule in refusals and logs; unique
	Effect  string   // Allow, Deny or Approve
	Servers []string // globs (path.Match) over server names; none: every server
	Tools   []string // globs over visible tool names ("files_write_file"); none: every tool
	When    string   // CEL condition; "": always
	// Approvers may approve the calls an Approve rule holds for:
	// "group:<name>" (by the caller's groups claim) or "user:<id>".
	Approvers []string
	// ApprovalTimeoutSeconds is how long approvers have before the call
	// is denied (0: DefaultApprovalTimeout).
	ApprovalTimeoutSeconds int
}

// costLimit bounds one condition's evaluation (cel-go's cost units,
// roughly one per operation and per element a macro visits): a condition
// over a huge argument list is refused, not run for long.
const costLimit = 1_000_000

// Set is a compiled Config. A nil *Set allows everything.
type Set struct {
	def     string
	servers map[string]string
	rules   []rule
	limits  []Limit
	audited map[string][]string

	// seen caches visible's decisions: a listing decides every tool and
	// every call decides its tool again, for the same few callers.
	mu   sync.Mutex
	seen *lru.Cache[visKey, visEntry]
	// anyOf holds the programs of anyArgs by the rules they join.
	anyOf map[string]cel.Program
}

// visEntry is a visibility decision and what the call's decision reuses:
// the variables it was made with (without "args"), the outcomes of the
// rules that do not read the arguments (by rule index; complete when the
// tool is visible) and whether a rule that applies reads them.
type visEntry struct {
	d         Decision
	base      interpreter.Activation
	known     []outcome
	readsArgs bool
	// anyArgs, when two or more rules that apply read the arguments, is
	// their conditions joined by ||: false (no error) means that each is
	// false, decided in one evaluation rather than one per rule.
	anyArgs cel.Program
	// fields are the argument fields the rules that apply read, when each
	// reads them only by field (rule.fields).
	fields []string
	// noArgs is the decision of a call whose arguments name none of
	// fields, decided once: set on a visible tool when no rule that
	// applies reads the arguments, or every one of them reads them only by
	// field (rule.fields), which then evaluates as on no arguments.
	noArgs *Decision
}

// maxAnyOf bounds Set.anyOf: a few sets of rules apply to a
// configuration's tools; past the bound each rule is evaluated alone.
const maxAnyOf = 256

// visKey is everything a decision without arguments reads.
type visKey struct {
	user, provider, scopes, thread string
	admin                          bool
	claims                         string // the caller's claims, in key order
	tool, original, server, annot  string
	task                           bool
}

// claimsKey writes claims (name and raw value, in name order) as one
// string.
func claimsKey(c map[string]json.RawMessage) string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(strconv.Quote(n))
		b.WriteByte(':')
		b.Write(c[n])
		b.WriteByte(0)
	}
	return b.String()
}

type rule struct {
	Rule
	prg cel.Program // nil: the rule always holds
	// partial evaluates the condition without the arguments (unknown);
	// nil when it does not read them (prg does then).
	partial cel.Program
	// fields are the argument fields the condition reads, when it reads
	// the arguments only as args.K or has(args.K) (nil otherwise): with
	// none of them in a call's arguments it is decided as with none.
	fields []string
}

// CompileError is a Config that does not compile: Field is where
// ("rules[1].when"), Message what (with the line and column of a
// condition's error).
type CompileError struct {
	Field   string
	Message string
}

func (e *CompileError) Error() string { return e.Field + ": " + e.Message }

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
)

// celEnv declares what a condition can read.
func celEnv() (*cel.Env, error) {
	envOnce.Do(func() {
		env, envErr = cel.NewEnv(
			cel.Variable("user", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("tool", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("server", cel.StringType),
			cel.Variable("thread", cel.StringType),
			cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
			cel.CrossTypeNumericComparisons(true),
		)
	})
	return env, envErr
}

// Compile checks c and compiles its conditions.
func Compile(c Config) (*Set, error) {
	e, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("policy: CEL environment: %w", err)
	}
	s := &Set{def: Allow, servers: map[string]string{}}
	if c.Default != "" {
		if c.Default != Allow && c.Default != Deny {
			return nil, &CompileError{Field: "default", Message: `must be "allow" or "deny"`}
		}
		s.def = c.Default
	}
	for name, d := range c.ServerDefaults {
		if d != Allow && d != Deny {
			return nil, &CompileError{Field: "server_defaults." + name, Message: `must be "allow" or "deny"`}
		}
		s.servers[name] = d
	}
	names := map[string]bool{}
	for i, r := range c.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		switch {
		case strings.TrimSpace(r.Name) == "":
			return nil, &CompileError{Field: field + ".name", Message: "must not be empty"}
		case names[r.Name]:
			return nil, &CompileError{Field: field + ".name", Message: fmt.Sprintf("%q names another rule too", r.Name)}
		case r.Effect != Allow && r.Effect != Deny && r.Effect != Approve:
			return nil, &CompileError{Field: field + ".effect", Message: `must be "allow", "deny" or "approve"`}
		}
		if err := checkApproval(field, r); err != nil {
			return nil, err
		}
		names[r.Name] = true
		if err := checkGlobs(field, r.Servers, r.Tools); err != nil {
			return nil, err
		}
		cr := rule{Rule: r}
		if strings.TrimSpace(r.When) != "" {
			if cr.prg, cr.partial, cr.fields, err = compileWhen(e, r.When); err != nil {
				return nil, &CompileError{Field: field + ".when", Message: err.Error()}
			}
		}
		s.rules = append(s.rules, cr)
	}
	for tool, fields := range c.AuditArguments {
		for i, f := range fields {
			if strings.TrimSpace(f) == "" {
				return nil, &CompileError{Field: fmt.Sprintf("audit_arguments.%s[%d]", tool, i), Message: "must not be empty"}
			}
		}
	}
	s.audited = c.AuditArguments
	if s.limits, err = compileLimits(c.Limits); err != nil {
		return nil, err
	}
	return s, nil
}

// compileLimits checks limits and fills in their defaults (per user; a
// burst of a minute's allowance).
func compileLimits(limits []Limit) ([]Limit, error) {
	var out []Limit
	limitNames := map[string]bool{}
	for i, l := range limits {
		field := fmt.Sprintf("limits[%d]", i)
		switch {
		case strings.TrimSpace(l.Name) == "" || len(l.Name) > 128:
			return nil, &CompileError{Field: field + ".name", Message: "must hold 1 to 128 bytes"}
		case limitNames[l.Name]:
			return nil, &CompileError{Field: field + ".name", Message: fmt.Sprintf("%q names another limit too", l.Name)}
		case l.Per != "" && l.Per != PerUser && l.Per != PerAll:
			return nil, &CompileError{Field: field + ".per", Message: `must be "user" or "all"`}
		case l.PerMinute < 0 || l.PerMinute > 1e6 || l.PerMinute != l.PerMinute:
			return nil, &CompileError{Field: field + ".per_minute", Message: "must be between 0 and 1000000"}
		case l.Burst < 0 || l.Burst > 1e6:
			return nil, &CompileError{Field: field + ".burst", Message: "must be between 1 and 1000000"}
		case l.Daily < 0:
			return nil, &CompileError{Field: field + ".daily", Message: "must not be negative"}
		case l.PerMinute == 0 && l.Daily == 0:
			return nil, &CompileError{Field: field, Message: "sets neither per_minute nor daily"}
		case l.Burst > 0 && l.PerMinute == 0:
			return nil, &CompileError{Field: field + ".burst", Message: "needs per_minute"}
		}
		limitNames[l.Name] = true
		if err := checkGlobs(field, l.Servers, l.Tools); err != nil {
			return nil, err
		}
		if l.Per == "" {
			l.Per = PerUser
		}
		if l.PerMinute > 0 && l.Burst == 0 {
			l.Burst = max(1, int(math.Ceil(l.PerMinute)))
		}
		out = append(out, l)
	}
	return out, nil
}

// AuditFields are the argument fields the audit log records for the calls
// of the tool named (nil: none).
func (s *Set) AuditFields(tool string) []string {
	if s == nil {
		return nil
	}
	return s.audited[tool]
}

// checkGlobs refuses a servers or tools glob that path.Match cannot read.
func checkGlobs(field string, servers, tools []string) error {
	for key, globs := range map[string][]string{"servers": servers, "tools": tools} {
		for j, g := range globs {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				return &CompileError{Field: fmt.Sprintf("%s.%s[%d]", field, key, j), Message: "is not a valid glob"}
			}
		}
	}
	return nil
}

// Limits returns the limits of the calls of t.
func (s *Set) Limits(t *mcpflow.Tool) []Limit {
	if s == nil {
		return nil
	}
	var out []Limit
	for _, l := range s.limits {
		if matchAny(l.Servers, t.Server) && matchAny(l.Tools, t.Name) {
			out = append(out, l)
		}
	}
	return out
}

// compileWhen type-checks a condition and returns its program, and the
// program that evaluates it with the arguments unknown when it reads them.
// Only a condition with a comprehension (all, exists, map, filter…), whose
// cost can grow with the arguments, is evaluated under the cost limit:
// tracking the cost of every step is most of an evaluation's cost.
func compileWhen(e *cel.Env, src string) (full, partial cel.Program, fields []string, err error) {
	ast, iss := e.Compile(src)
	if iss.Err() != nil {
		var msgs []string
		for _, ce := range iss.Errors() {
			msgs = append(msgs, fmt.Sprintf("line %d, column %d: %s", ce.Location.Line(), ce.Location.Column()+1, ce.Message))
		}
		return nil, nil, nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, nil, nil, fmt.Errorf("must be a boolean condition (it is of type %s)", t)
	}
	native := ast.NativeRep()
	opts := programOptions(native)
	if full, err = e.Program(ast, append(opts, cel.EvalOptions(cel.OptOptimize))...); err != nil {
		return nil, nil, nil, err
	}
	for _, ref := range native.ReferenceMap() {
		if ref.Name == "args" {
			partial, err = e.Program(ast, append(opts, cel.EvalOptions(cel.OptPartialEval))...)
			if k := (argFields{}); k.walk(native.Expr()) && len(k.fields) > 0 {
				fields = k.fields
			}
			break
		}
	}
	return full, partial, fields, err
}

// argFields collects the fields a condition reads of the arguments; walk
// reports whether it reads them only as args.K or has(args.K), so that a
// call whose arguments have none of those fields evaluates as with none
// (args.K fails and has(args.K) is false either way).
type argFields struct{ fields []string }

func (a *argFields) walk(e celast.Expr) bool {
	switch e.Kind() {
	case celast.IdentKind:
		return e.AsIdent() != "args" // args whole: an index, a size, an "in"…
	case celast.SelectKind:
		sel := e.AsSelect()
		if op := sel.Operand(); op.Kind() == celast.IdentKind && op.AsIdent() == "args" {
			if !slices.Contains(a.fields, sel.FieldName()) {
				a.fields = append(a.fields, sel.FieldName())
			}
			return true
		}
		return a.walk(sel.Operand())
	case celast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() && !a.walk(c.Target()) {
			return false
		}
		return a.all(c.Args())
	case celast.ListKind:
		return a.all(e.AsList().Elements())
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			if m := en.AsMapEntry(); !a.walk(m.Key()) || !a.walk(m.Value()) {
				return false
			}
		}
		return true
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			if !a.walk(f.AsStructField().Value()) {
				return false
			}
		}
		return true
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		if c.IterVar() == "args" || c.IterVar2() == "args" || c.AccuVar() == "args" {
			return false // a variable of its own named args: not worth telling apart
		}
		return a.all([]celast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()})
	case celast.LiteralKind:
		return true
	}
	return false
}

func (a *argFields) all(es []celast.Expr) bool {
	for _, e := range es {
		if !a.walk(e) {
			return false
		}
	}
	return true
}

// programOptions are a condition's program options: the cost limit when
// it has a comprehension.
func programOptions(native *celast.AST) []cel.ProgramOption {
	for _, m := range native.SourceInfo().MacroCalls() {
		if m.Kind() == celast.CallKind && m.AsCall().FunctionName() != "has" {
			return []cel.ProgramOption{cel.CostLimit(costLimit)}
		}
	}
	return nil
}

// anyArgs is the program of the conditions of rules (indexes of s.rules)
// joined by ||, compiled once per set of rules; nil when it cannot be had
// (the rules are then evaluated one by one, which decides the same).
func (s *Set) anyArgs(rules []int) cel.Program {
	var key strings.Builder
	for _, i := range rules {
		key.WriteString(strconv.Itoa(i) + ",")
	}
	s.mu.Lock()
	prg, ok := s.anyOf[key.String()]
	full := len(s.anyOf) >= maxAnyOf
	s.mu.Unlock()
	if ok || full {
		return prg
	}
	conds := make([]string, len(rules))
	for k, i := range rules {
		conds[k] = "(" + s.rules[i].When + ")"
	}
	e, err := celEnv()
	if err == nil {
		ast, iss := e.Compile(strings.Join(conds, " || "))
		if err = iss.Err(); err == nil {
			prg, err = e.Program(ast, append(programOptions(ast.NativeRep()), cel.EvalOptions(cel.OptOptimize))...)
		}
	}
	if err != nil {
		prg = nil
	}
	s.mu.Lock()
	if s.anyOf == nil {
		s.anyOf = map[string]cel.Program{}
	}
	s.anyOf[key.String()] = prg
	s.mu.Unlock()
	return prg
}

// Input is what a decision is about.
type Input struct {
	Caller   *mcpflow.Caller // nil: a caller known only by UserID
	UserID   string
	ThreadID string
	Tool     *mcpflow.Tool
}

// Decision is the outcome for one tool or call.
type Decision struct {
	Allowed bool
	// Approval, on an allowed call, says it waits for an approver first
	// (an Approve rule held; Rule names it).
	Approval *mcpflow.ApprovalRequest
	// Hidden: refused whatever the arguments (the tool is not listed, and
	// its calls are answered as unknown).
	Hidden bool
	// Rule names the rule that decided; "" when a default did.
	Rule string
	// Failed: Rule's condition could not be evaluated (refused).
	Failed bool
}

// Refusal is the error of a call a rule refused because of its
// arguments; it names the rule and never the arguments.
func (d Decision) Refusal() error {
	if d.Rule == "" {
		return mcpflow.Errorf(mcpflow.EForbidden, "the call is refused by policy: no rule allows it")
	}
	if d.Failed {
		return mcpflow.Errorf(mcpflow.EForbidden, "the call is refused by policy rule %q (its condition could not be evaluated)", d.Rule)
	}
	return mcpflow.Errorf(mcpflow.EForbidden, "the call is refused by policy rule %q", d.Rule)
}

// Approvers are the approvers every approve rule names, each once.
func (s *Set) Approvers() []string {
	if s == nil {
		return nil
	}
	var out []string
	for i := range s.rules {
		for _, a := range s.rules[i].Approvers {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// checkApproval checks an approve rule's approvers and timeout, and that
// other rules name neither.
func checkApproval(field string, r Rule) error {
	if r.Effect != Approve {
		if len(r.Approvers) > 0 || r.ApprovalTimeoutSeconds != 0 {
			return &CompileError{Field: field + ".approvers", Message: `only a rule whose effect is "approve" names approvers and an approval timeout`}
		}
		return nil
	}
	if len(r.Approvers) == 0 {
		return &CompileError{Field: field + ".approvers", Message: `an approve rule needs approvers ("group:<name>" or "user:<id>")`}
	}
	for i, a := range r.Approvers {
		kind, name, _ := strings.Cut(a, ":")
		if (kind != "group" && kind != "user") || strings.TrimSpace(name) == "" || strings.Contains(name, ",") || len(a) > 255 {
			return &CompileError{Field: fmt.Sprintf("%s.approvers[%d]", field, i), Message: fmt.Sprintf(`must be "group:<name>" or "user:<id>" (got %q)`, mcpflow.TruncateChars(a, 64))}
		}
	}
	if t := time.Duration(r.ApprovalTimeoutSeconds) * time.Second; r.ApprovalTimeoutSeconds != 0 && (t < MinApprovalTimeout || t > MaxApprovalTimeout) {
		return &CompileError{Field: field + ".approval_timeout_seconds", Message: fmt.Sprintf("must be between %d and %d (got %d)",
			int(MinApprovalTimeout.Seconds()), int(MaxApprovalTimeout.Seconds()), r.ApprovalTimeoutSeconds)}
	}
	return nil
}

// approval is what a decision of an approve rule asks for.
func (r *rule) approval() *mcpflow.ApprovalRequest {
	t := DefaultApprovalTimeout
	if r.ApprovalTimeoutSeconds > 0 {
		t = time.Duration(r.ApprovalTimeoutSeconds) * time.Second
	}
	return &mcpflow.ApprovalRequest{Rule: r.Name, Approvers: r.Approvers, Timeout: t}
}

// outcome of one condition.
type outcome int

const (
	holds outcome = iota
	fails
	unknown // depends on the arguments
	broken  // could not be evaluated
)

func (r *rule) matches(t *mcpflow.Tool) bool {
	return matchAny(r.Servers, t.Server) && matchAny(r.Tools, t.Name)
}

func matchAny(globs []string, s string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return true
		}
	}
	return false
}

func (r *rule) eval(prg cel.Program, act any) outcome {
	if prg == nil {
		return holds
	}
	out, _, err := prg.Eval(act)
	switch {
	case err != nil:
		return broken
	case types.IsUnknown(out):
		return unknown
	case out == types.True:
		return holds
	case out == types.False:
		return fails
	}
	return broken // not a boolean
}

func (s *Set) defaultFor(server string) string {
	if d, ok := s.servers[server]; ok {
		return d
	}
	return s.def
}

// Visible decides whether in.Tool is listed for the caller: it is hidden
// when a deny rule holds (or fails to evaluate) without looking at
// arguments, or when no allow rule can hold and the default denies.
func (s *Set) Visible(in Input) Decision {
	if s == nil {
		return Decision{Allowed: true}
	}
	return s.visible(in).d
}

// visible is Visible with what the call's decision reuses (shared: read
// only).
func (s *Set) visible(in Input) visEntry {
	k := visKey{user: in.UserID, thread: in.ThreadID, tool: in.Tool.Name, original: in.Tool.OriginalName,
		server: in.Tool.Server, annot: string(in.Tool.Annotations), task: in.Tool.TaskToolset != nil}
	if c := in.Caller; c != nil {
		if c.UserID != "" {
			k.user = c.UserID
		}
		k.admin, k.provider, k.scopes = c.Admin, c.Provider, strings.Join(c.Scopes, " ")
		if c.Claims != nil {
			k.claims = claimsKey(c.Claims)
		}
	}
	s.mu.Lock()
	if s.seen == nil {
		s.seen = lru.New[visKey, visEntry](10_000)
	}
	e, ok := s.seen.Get(k)
	s.mu.Unlock()
	if ok {
		return e
	}
	v := vars(in)
	e, argRules := s.decideVisible(in, v)
	e.base, _ = interpreter.NewActivation(v) // a map never fails
	s.withNoArgs(in, &e, argRules)
	s.mu.Lock()
	s.seen.Add(k, e)
	s.mu.Unlock()
	return e
}

// decideVisible is the visibility decision of in.Tool, and the rules that
// apply to it and read the arguments.
func (s *Set) decideVisible(in Input, v map[string]any) (visEntry, []int) {
	var partial any
	allowable := false
	e := visEntry{known: make([]outcome, len(s.rules))}
	var argRules []int
	for i := range s.rules {
		r := &s.rules[i]
		if !r.matches(in.Tool) {
			continue
		}
		var o outcome
		if r.partial == nil {
			o = r.eval(r.prg, v)
			e.known[i] = o
		} else {
			e.readsArgs = true
			argRules = append(argRules, i)
			if partial == nil {
				var err error
				if partial, err = cel.PartialVars(v, cel.AttributePattern("args")); err != nil {
					e.d = Decision{Hidden: true, Rule: r.Name, Failed: true}
					return e, nil
				}
			}
			o = r.eval(r.partial, partial)
		}
		switch {
		case r.Effect == Deny && o == broken:
			e.d = Decision{Hidden: true, Rule: r.Name, Failed: true}
			return e, nil
		case r.Effect == Deny && o == holds:
			e.d = Decision{Hidden: true, Rule: r.Name}
			return e, nil
		case r.Effect != Deny && (o == holds || o == unknown):
			allowable = true // an approve rule lets a tool be seen
		}
	}
	e.d = Decision{Hidden: true}
	if allowable || s.defaultFor(in.Tool.Server) == Allow {
		e.d = Decision{Allowed: true}
	}
	if len(argRules) > 1 && !e.d.Hidden {
		e.anyArgs = s.anyArgs(argRules)
	}
	return e, argRules
}

// withNoArgs adds to a visible e the argument fields argRules (the rules
// that apply and read the arguments) read and the decision of a call
// whose arguments name none of them, when every one of those rules reads
// the arguments only by field.
func (s *Set) withNoArgs(in Input, e *visEntry, argRules []int) {
	if e.d.Hidden {
		return
	}
	var fields []string
	for _, i := range argRules {
		if s.rules[i].fields == nil {
			return
		}
		for _, f := range s.rules[i].fields {
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
	}
	d := s.decideArgs(in, *e, nil)
	e.noArgs, e.fields = &d, fields
}

// Decide decides a call of in.Tool with args (decoded JSON; nil is {}).
func (s *Set) Decide(in Input, args map[string]any) Decision {
	if s == nil {
		return Decision{Allowed: true}
	}
	e := s.visible(in)
	if e.d.Hidden {
		return e.d
	}
	return s.decideArgs(in, e, args)
}

// decideArgs is Decide for a tool visible() found visible (e): the rules
// that do not read the arguments decided there already.
func (s *Set) decideArgs(in Input, e visEntry, args map[string]any) Decision {
	if args == nil {
		args = map[string]any{}
	}
	v := interpreter.NewHierarchicalActivation(e.base, argsVars{args})
	// None of the rules that read the arguments holds or fails to
	// evaluate: each of them is false, known in one evaluation.
	none := false
	if e.anyArgs != nil {
		out, _, err := e.anyArgs.Eval(v)
		none = err == nil && out == types.False
	}
	allowedBy, allowed := "", false
	var approve *rule
	for i := range s.rules {
		r := &s.rules[i]
		if !r.matches(in.Tool) {
			continue
		}
		o := e.known[i]
		switch {
		case r.partial != nil && none:
			o = fails
		case r.partial != nil:
			o = r.eval(r.prg, v)
		}
		switch {
		case r.Effect != Allow && (o == broken || o == unknown):
			return Decision{Rule: r.Name, Failed: true} // a deny or approve that cannot be decided refuses
		case r.Effect == Deny && o == holds:
			return Decision{Rule: r.Name}
		case r.Effect == Approve && o == holds && approve == nil:
			approve = r
		case r.Effect == Allow && o == holds && !allowed:
			allowedBy, allowed = r.Name, true
		}
	}
	if approve != nil { // deny over approve over allow
		return Decision{Allowed: true, Rule: approve.Name, Approval: approve.approval()}
	}
	if allowed {
		return Decision{Allowed: true, Rule: allowedBy}
	}
	return Decision{Allowed: s.defaultFor(in.Tool.Server) == Allow}
}

// argsVars is the activation of a call's arguments (the variable "args").
type argsVars struct{ args map[string]any }

// ResolveName implements interpreter.Activation.
func (a argsVars) ResolveName(name string) (any, bool) {
	if name == "args" {
		return a.args, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (argsVars) Parent() interpreter.Activation { return nil }

// vars are a condition's variables without "args" (unknown under partial
// evaluation; a call's decision adds them, argsVars).
func vars(in Input) map[string]any {
	user := map[string]any{"id": in.UserID, "admin": false, "provider": "", "scopes": []string{}, "claims": map[string]any{}}
	if c := in.Caller; c != nil {
		if c.UserID != "" {
			user["id"] = c.UserID
		}
		user["admin"], user["provider"] = c.Admin, c.Provider
		if c.Scopes != nil {
			user["scopes"] = c.Scopes
		}
		claims := make(map[string]any, len(c.Claims))
		for k, raw := range c.Claims {
			var v any
			if json.Unmarshal(raw, &v) == nil {
				claims[k] = v
			}
		}
		user["claims"] = claims
	}
	t := in.Tool
	v := map[string]any{
		"user": user,
		"tool": map[string]any{"name": t.Name, "original_name": t.OriginalName, "server": t.Server,
			"task": t.TaskToolset != nil, "annotations": annotations(t.Annotations)},
		"server": t.Server,
		"thread": in.ThreadID,
	}
	return v
}

// annotations are a tool's annotations with MCP's defaults for the hints
// it left out: readOnlyHint false, destructiveHint true, idempotentHint
// false, openWorldHint true.
func annotations(raw json.RawMessage) map[string]any {
	annotationsMu.RLock()
	a, ok := annotationsSeen[string(raw)]
	annotationsMu.RUnlock()
	if ok {
		return a
	}
	a = readAnnotations(raw)
	annotationsMu.Lock()
	if len(annotationsSeen) >= 10_000 {
		clear(annotationsSeen)
	}
	annotationsSeen[string(raw)] = a
	annotationsMu.Unlock()
	return a
}

// annotationsSeen caches annotations by the tool's raw annotations: a
// tool's are read once, not on every call (the maps are only read).
var (
	annotationsMu   sync.RWMutex
	annotationsSeen = map[string]map[string]any{}
)

func readAnnotations(raw json.RawMessage) map[string]any {
	a := map[string]any{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &a)
		if a == nil {
			a = map[string]any{}
		}
	}
	for k, def := range map[string]bool{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true} {
		if _, ok := a[k].(bool); !ok {
			a[k] = def
		}
	}
	return a
}
