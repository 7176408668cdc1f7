package config

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpflow/mcpflow"
)

// extDecoder turns a resolved document into the typed model. The first
// error sticks (errorf keeps it, later ones are dropped), so a reader
// method reports a problem and returns a zero value, decoding goes on, and
// extensions returns that first error at the end. Warnings accumulate.
type extDecoder struct {
	source   string
	err      error
	warnings []string
	// fromEnv maps each value a $VAR placeholder resolved to to the
	// placeholder, which errors show instead of the value.
	fromEnv map[string]string
}

func (d *extDecoder) errorf(path, format string, args ...any) {
	if d.err == nil {
		d.err = &FieldError{Source: d.source, Field: path, Message: fmt.Sprintf(format, args...)}
	}
}

func (d *extDecoder) warnf(path, format string, args ...any) {
	d.warnings = append(d.warnings, singleLine(path+": "+fmt.Sprintf(format, args...)))
}

// falsy reports whether Python would treat a decoded JSON value as false.
func falsy(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case string:
		return t == ""
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		return err == nil && f == 0
	case []any:
		return len(t) == 0
	case *Object:
		return t.Len() == 0
	}
	return false
}

// objReader reads the keys of one JSON object and remembers which ones it
// knows, so the rest can be kept as extras or rejected.
type objReader struct {
	d     *extDecoder
	obj   *Object
	path  string
	known map[string]bool
}

func (d *extDecoder) reader(obj *Object, path string) *objReader {
	return &objReader{d: d, obj: obj, path: path, known: map[string]bool{}}
}

func (r *objReader) p(key string) string {
	if r.path == "" {
		return key
	}
	return r.path + "." + key
}

func (r *objReader) get(key string) (any, bool) {
	r.known[key] = true
	return r.obj.Get(key)
}

// extras returns the unknown keys in order (values deep-copied).
func (r *objReader) extras() *Object {
	out := NewObject()
	for _, k := range r.obj.keys {
		if !r.known[k] {
			out.Set(k, cloneValue(r.obj.vals[k]))
		}
	}
	return out
}

// forbidExtras fails on the first unknown key.
func (r *objReader) forbidExtras(allowed string) {
	for _, k := range r.obj.keys {
		if !r.known[k] {
			r.d.errorf(r.p(k), "unknown key (%s)", allowed)
			return
		}
	}
}

func (r *objReader) boolean(key string, def bool) bool {
	v, ok := r.get(key)
	if !ok {
		return def
	}
	b, isBool := v.(bool)
	if !isBool {
		r.d.errorf(r.p(key), "must be a boolean (got %s)", r.d.describeValue(v))
	}
	return b
}

// str reads a string; nullable strings read null as "".
func (r *objReader) str(key, def string, nullable bool) string {
	v, ok := r.get(key)
	if !ok {
		return def
	}
	s, isStr := v.(string)
	if !isStr && (v != nil || !nullable) {
		r.d.errorf(r.p(key), "must be a string (got %s)", kindOf(v))
	}
	return s
}

func (r *objReader) requiredStr(key string) string {
	if !r.obj.Has(key) {
		r.known[key] = true
		r.d.errorf(r.p(key), "is required")
		return ""
	}
	return r.str(key, "", false)
}

func (r *objReader) enum(key, def string, allowed ...string) string {
	v, ok := r.get(key)
	if !ok {
		return def
	}
	if s, isStr := v.(string); isStr && slices.Contains(allowed, s) {
		return s
	}
	r.d.errorf(r.p(key), "must be %s (got %s)", quoteAlternatives(allowed), r.d.describeValue(v))
	return ""
}

func (r *objReader) strList(key string) []string {
	v, ok := r.get(key)
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		r.d.errorf(r.p(key), "must be a list of strings (got %s)", kindOf(v))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			r.d.errorf(fmt.Sprintf("%s[%d]", r.p(key), i), "must be a string (got %s)", kindOf(e))
		}
		out = append(out, s)
	}
	return out
}

// strMap reads an object of strings; it also returns the object for key order.
func (r *objReader) strMap(key string) (map[string]string, *Object) {
	v, ok := r.get(key)
	if !ok {
		return nil, nil
	}
	obj, ok := v.(*Object)
	if !ok {
		r.d.errorf(r.p(key), "must be an object of strings (got %s)", kindOf(v))
		return nil, nil
	}
	out := make(map[string]string, obj.Len())
	for _, k := range obj.keys {
		s, ok := obj.vals[k].(string)
		if !ok {
			r.d.errorf(r.p(key)+"."+k, "must be a string (got %s)", kindOf(obj.vals[k]))
		}
		out[k] = s
	}
	return out, obj
}

// object reads an optional object; null gives nil when nullable.
func (r *objReader) object(key string, nullable bool) *Object {
	v, ok := r.get(key)
	if !ok || (v == nil && nullable) {
		return nil
	}
	obj, isObj := v.(*Object)
	if !isObj {
		r.d.errorf(r.p(key), "must be an object (got %s)", kindOf(v))
	}
	return obj
}

// integer reads an integral JSON number (60 and 60.0 both work).
func (r *objReader) integer(key string, def int) int {
	v, ok := r.get(key)
	if !ok {
		return def
	}
	n, ok := integral(v)
	if !ok {
		r.d.errorf(r.p(key), "must be an integer (got %s)", r.d.describeValue(v))
	}
	return n
}

// timeout reads a timeout in seconds: absent gives def, null gives nil, and a
// value must be a finite number greater than zero (DeerFlow issue #4917).
func (r *objReader) timeout(key string, def *float64) *float64 {
	v, ok := r.get(key)
	if !ok {
		return def
	}
	if v == nil {
		return nil
	}
	if n, isNum := v.(json.Number); isNum {
		f, err := strconv.ParseFloat(string(n), 64)
		if err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && f > 0 {
			return &f
		}
	}
	r.d.errorf(r.p(key), "must be a finite number greater than 0 (got %s)", r.d.describeValue(v))
	return nil
}

// integral converts an integral JSON number that fits an int.
func integral(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(n), 10, 0); err == nil {
		return int(i), true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || f > math.MaxInt32 || f < math.MinInt32 {
		return 0, false
	}
	return int(f), true
}

// describeValue renders a value for "(got ...)": JSON scalars as written
// (strings quoted, shortened), containers by kind, and a string that a
// $VAR placeholder resolved to as "the value of $VAR". Use it only for
// fields whose values are not secrets (timeouts, enums, numbers).
func (d *extDecoder) describeValue(v any) string {
	if s, ok := v.(string); ok {
		if name, ok := d.fromEnv[s]; ok {
			return "the value of " + name
		}
	}
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(t)
	case json.Number:
		return string(t)
	case string:
		if utf8.RuneCountInString(t) > 64 {
			t = string([]rune(t)[:64]) + "…"
		}
		return strconv.Quote(t)
	default:
		return kindOf(v)
	}
}

func quoteAlternatives(allowed []string) string {
	q := make([]string, len(allowed))
	for i, a := range allowed {
		q[i] = strconv.Quote(a)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// ---- the document ----

func (d *extDecoder) extensions(root *Object) (*Extensions, error) {
	ext := &Extensions{Skills: map[string]Skill{}}
	r := d.reader(root, "")

	servers := r.object("mcpServers", false)
	for _, name := range servers.Keys() {
		if d.err != nil {
			break
		}
		ext.Servers = append(ext.Servers, d.server(name, servers.vals[name], "mcpServers."+name))
	}

	skills := r.object("skills", false)
	for _, name := range skills.Keys() {
		path := "skills." + name
		obj, ok := skills.vals[name].(*Object)
		if !ok {
			d.errorf(path, "must be an object (got %s)", kindOf(skills.vals[name]))
			break
		}
		ext.Skills[name] = Skill{Enabled: d.reader(obj, path).boolean("enabled", true)}
	}

	ext.Middlewares = r.strList("middlewares")

	if v, ok := r.get("mcpInterceptors"); ok {
		switch t := v.(type) {
		case nil:
		case string:
			ext.MCPInterceptors = []string{t}
		case []any:
			for i, e := range t {
				s, ok := e.(string)
				if !ok {
					d.warnf(fmt.Sprintf("mcpInterceptors[%d]", i), "ignoring entry that is %s, not a string", kindOf(e))
					continue
				}
				ext.MCPInterceptors = append(ext.MCPInterceptors, s)
			}
		default:
			d.warnf("mcpInterceptors", "expected a list of strings or a string, got %s; ignoring it", kindOf(v))
		}
	}

	ext.PolicyConfig, ext.Policies = d.policies(r)
	ext.VirtualServers = d.virtualServers(r)

	ext.Extra = r.extras()

	for _, s := range ext.Servers {
		if len(s.TaskToolsets) > 0 && (strings.TrimSpace(s.Name) == "" || utf8.RuneCountInString(s.Name) > MaxTaskServerNameLength) {
			d.errorf("mcpServers."+s.Name, "MCP task server name must contain 1 to %d characters", MaxTaskServerNameLength)
		}
	}
	ext.Warnings = d.warnings
	if d.err != nil {
		return nil, d.err
	}
	return ext, nil
}

func (d *extDecoder) server(name string, v any, path string) Server {
	obj, ok := v.(*Object)
	if !ok {
		d.errorf(path, "must be an object (got %s)", kindOf(v))
		return Server{}
	}
	r := d.reader(obj, path)
	s := Server{Name: name, Enabled: r.boolean("enabled", true)}
	s.Type = d.transport(r)
	s.Command = r.str("command", "", true)
	s.Args = r.strList("args")
	s.Env, _ = r.strMap("env")
	s.URL = r.str("url", "", true)
	var headerObj *Object
	s.Headers, headerObj = r.strMap("headers")
	if a, b, dup := checkHeaderSpellings(headerObj.Keys()); dup {
		d.errorf(r.p("headers"), "headers maps the same HTTP header under two spellings (%s and %s); header names are case-insensitive", pyRepr(a), pyRepr(b))
	}
	s.OAuth = d.oauth(r)
	if s.OAuth != nil && s.OAuth.GrantType == GrantTokenExchange && s.Type == TransportStdio {
		d.errorf(r.p("oauth")+".grant_type", "the token-exchange grant applies to sse/http MCP servers only: a stdio server's pooled process is shared, while an exchanged token belongs to one caller")
	}
	s.UserAuth = d.userAuth(r)
	s.HeadersFromContext = d.headersFromContext(r)
	s.Description = r.str("description", "", false)
	s.Routing = Routing{Mode: RoutingOff}
	if rv, ok := r.get("routing"); ok {
		s.Routing = d.routing(rv, r.p("routing")).apply(s.Routing)
	}
	s.Tools = d.tools(r)
	s.ToolNamePrefix = r.boolean("tool_name_prefix", true)
	s.ToolCallTimeout = r.timeout("tool_call_timeout", nil)
	def := DefaultSessionInitTimeout
	s.SessionInitTimeout = r.timeout("session_init_timeout", &def)
	s.Cwd = r.str("cwd", "", true)
	s.TaskToolsets = d.taskToolsets(r)
	s.NativeTasks = r.boolean("native_tasks", false)
	if s.ForwardRoots = r.boolean("forward_roots", false); s.ForwardRoots && s.Type != TransportHTTP {
		d.errorf(r.p("forward_roots"), "applies to type \"http\" servers only: a stdio server runs on mcpflow's host, where a caller's roots would name this host's files, and the sse transport cannot ask the caller")
	}
	if v, _ := r.get("protocol_version"); v != nil {
		s.ProtocolVersion = r.enum("protocol_version", "", ProtocolVersion20260728, ProtocolVersion20251125)
		if s.Type == TransportSSE && s.ProtocolVersion == ProtocolVersion20260728 {
			d.errorf(r.p("protocol_version"), "the sse transport (HTTP+SSE) ends at 2025-11-25: use type \"http\" to speak 2026-07-28")
		}
	}
	if s.OAuth != nil && s.OAuth.GrantType == GrantTokenExchange {
		// A durable task's submit, polls and cancel run in Temporal
		// activities, without the caller and so without a token to exchange.
		for _, f := range []struct {
			key string
			set bool
		}{{"task_toolsets", len(s.TaskToolsets) > 0}, {"native_tasks", s.NativeTasks}} {
			if f.set {
				d.errorf(r.p(f.key), "cannot be used with oauth.grant_type token_exchange: a durable task's steps run later without the caller, so there is no caller token to exchange for them")
			}
		}
	}
	s.Extra = r.extras()
	return s
}

// transport applies the alias rule: type wins; when it is absent, null or
// empty, a non-empty transport is used; otherwise stdio. The raw transport key
// stays an extra.
func (d *extDecoder) transport(r *objReader) string {
	typ := ""
	if v, ok := r.get("type"); ok {
		switch t := v.(type) {
		case nil:
		case string:
			typ = t
		default:
			d.errorf(r.p("type"), "must be a string (got %s)", d.describeValue(v))
			return ""
		}
	}
	from := ""
	if typ == "" {
		if v, ok := r.obj.Get("transport"); ok && !falsy(v) {
			t, isStr := v.(string)
			if !isStr {
				d.errorf(r.p("transport"), "must be a string (got %s)", d.describeValue(v))
				return ""
			}
			typ, from = t, " (from transport)"
		}
	}
	if typ == "" {
		typ = TransportStdio
	}
	switch typ {
	case TransportStdio, TransportSSE, TransportHTTP:
		return typ
	}
	d.errorf(r.p("type"), "unsupported transport type %s%s; expected \"stdio\", \"sse\" or \"http\"", d.describeValue(typ), from)
	return ""
}

func (d *extDecoder) oauth(parent *objReader) *OAuth {
	obj := parent.object("oauth", true)
	if obj == nil {
		return nil
	}
	r := d.reader(obj, parent.p("oauth"))
	o := &OAuth{Enabled: r.boolean("enabled", true), TokenURL: r.requiredStr("token_url")}
	o.GrantType = r.enum("grant_type", GrantClientCredentials, GrantClientCredentials, GrantRefreshToken, GrantTokenExchange, grantTokenExchangeAlias)
	if o.GrantType == grantTokenExchangeAlias {
		o.GrantType = GrantTokenExchange
	}
	o.ClientID = r.str("client_id", "", true)
	o.ClientSecret = r.str("client_secret", "", true)
	o.RefreshToken = r.str("refresh_token", "", true)
	o.Scope = r.str("scope", "", true)
	o.Audience = r.str("audience", "", true)
	o.TokenField = r.str("token_field", "access_token", false)
	o.TokenTypeField = r.str("token_type_field", "token_type", false)
	o.ExpiresInField = r.str("expires_in_field", "expires_in", false)
	o.DefaultTokenType = r.str("default_token_type", "Bearer", false)
	o.RefreshSkewSeconds = max(r.integer("refresh_skew_seconds", 60), 0)
	o.ExtraTokenParams, _ = r.strMap("extra_token_params")
	if o.GrantType == GrantTokenExchange {
		d.checkTokenExchange(r, o)
	}
	o.Extra = r.extras()
	return o
}

// grantTokenExchangeAlias is the short spelling of GrantTokenExchange
// accepted in oauth.grant_type.
const grantTokenExchangeAlias = "token_exchange"

// checkTokenExchange checks an oauth block with the token-exchange grant:
// its token endpoint gets the callers' access tokens, so it must be an
// absolute http(s) URL, and the subject token is always the caller's, so a
// configured refresh_token is a mistake. (The sse/http-only rule is the
// server's, see server.) Messages never show a value.
func (d *extDecoder) checkTokenExchange(r *objReader, o *OAuth) {
	if u, err := url.Parse(o.TokenURL); err != nil || u.Host == "" || !mcpflow.SecureURL(o.TokenURL) {
		d.errorf(r.p("token_url"), "the token-exchange grant sends callers' access tokens to token_url: it must be an absolute https URL (http only for a loopback host)")
	}
	if o.RefreshToken != "" {
		d.errorf(r.p("refresh_token"), "must not be set with the token-exchange grant: the subject token is always the signed-in caller's access token (remove it; through the admin API send \"\" to clear it)")
	}
}

func (d *extDecoder) userAuth(parent *objReader) *UserAuth {
	obj := parent.object("user_auth", true)
	if obj == nil {
		return nil
	}
	r := d.reader(obj, parent.p("user_auth"))
	u := &UserAuth{Enabled: r.boolean("enabled", true), Header: r.str("header", "Authorization", false)}
	if strings.TrimSpace(u.Header) == "" {
		d.errorf(r.p("header"), "user_auth.header must not be empty")
	}
	u.Users, _ = r.strMap("users")
	u.OnMissing = r.enum("on_missing", OnMissingDeny, OnMissingDeny, OnMissingPassthrough)
	u.Extra = r.extras()
	return u
}

func (d *extDecoder) headersFromContext(parent *objReader) *HeadersFromContext {
	obj := parent.object("headers_from_context", true)
	if obj == nil {
		return nil
	}
	r := d.reader(obj, parent.p("headers_from_context"))
	h := &HeadersFromContext{Enabled: r.boolean("enabled", true)}
	if headers := r.object("headers", false); headers != nil {
		h.Headers = make(map[string]string, headers.Len())
		seen := map[string]string{}
		for _, name := range headers.keys {
			if strings.TrimSpace(name) == "" {
				d.errorf(r.p("headers"), "headers_from_context.headers must not contain a blank header name")
			}
			key, ok := headers.vals[name].(string)
			if !ok || strings.TrimSpace(key) == "" {
				d.errorf(r.p("headers")+"."+name, "headers_from_context.headers[%s] must name a non-blank secret key from config.context.secrets", pyRepr(name))
			}
			lower := strings.ToLower(name)
			if prev, dup := seen[lower]; dup {
				d.errorf(r.p("headers"), "headers_from_context.headers maps the same HTTP header under two spellings (%s and %s); header names are case-insensitive, so keep only one", pyRepr(prev), pyRepr(name))
			}
			seen[lower] = name
			h.Headers[name] = key
		}
	}
	h.OnMissing = r.enum("on_missing", OnMissingDeny, OnMissingDeny, OnMissingPassthrough)
	h.Extra = r.extras()
	return h
}

// routing decodes a routing object; only the keys present are set.
func (d *extDecoder) routing(v any, path string) RoutingOverride {
	obj, ok := v.(*Object)
	if !ok {
		d.errorf(path, "must be an object (got %s)", kindOf(v))
		return RoutingOverride{}
	}
	r := d.reader(obj, path)
	var o RoutingOverride
	if r.obj.Has("mode") {
		mode := r.enum("mode", RoutingOff, RoutingOff, RoutingPrefer)
		o.Mode = &mode
	}
	if pv, ok := r.get("priority"); ok {
		n, isNum := pv.(json.Number)
		f, err := strconv.ParseFloat(string(n), 64)
		var p int
		switch {
		case !isNum || err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f):
			d.errorf(r.p("priority"), "must be an integer (got %s)", d.describeValue(pv))
		case f < 0:
			d.warnf(r.p("priority"), "MCP routing priority %s is below 0; clamping to 0.", n)
		case f > 100:
			p = 100
			d.warnf(r.p("priority"), "MCP routing priority %s is above 100; clamping to 100.", n)
		default:
			p = int(f)
		}
		o.Priority = &p
	}
	if r.obj.Has("keywords") {
		kw := r.strList("keywords")
		o.Keywords = &kw
	}
	r.forbidExtras("routing allows only mode, priority and keywords")
	return o
}

// apply returns base with the override's set fields replaced.
func (o RoutingOverride) apply(base Routing) Routing {
	if o.Mode != nil {
		base.Mode = *o.Mode
	}
	if o.Priority != nil {
		base.Priority = *o.Priority
	}
	if o.Keywords != nil {
		base.Keywords = *o.Keywords
	}
	return base
}

func (d *extDecoder) tools(parent *objReader) map[string]ToolOverride {
	obj := parent.object("tools", false)
	if obj == nil {
		return nil
	}
	out := make(map[string]ToolOverride, obj.Len())
	for _, name := range obj.keys {
		path := parent.p("tools") + "." + name
		tobj, ok := obj.vals[name].(*Object)
		if !ok {
			d.errorf(path, "must be an object (got %s)", kindOf(obj.vals[name]))
			return nil
		}
		r := d.reader(tobj, path)
		var t ToolOverride
		if rv, ok := r.get("routing"); ok {
			o := d.routing(rv, r.p("routing"))
			t.Routing = &o
		}
		t.Extra = r.extras()
		out[name] = t
	}
	return out
}

func (d *extDecoder) taskToolsets(parent *objReader) []TaskToolset {
	v, ok := parent.get("task_toolsets")
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		d.errorf(parent.p("task_toolsets"), "must be a list of objects (got %s)", kindOf(v))
		return nil
	}
	out := make([]TaskToolset, 0, len(arr))
	claimed := map[string]string{}
	for i, e := range arr {
		path := fmt.Sprintf("%s[%d]", parent.p("task_toolsets"), i)
		obj, ok := e.(*Object)
		if !ok {
			d.errorf(path, "must be an object (got %s)", kindOf(e))
			return nil
		}
		r := d.reader(obj, path)
		ts := TaskToolset{Name: r.requiredStr("name")}
		if strings.TrimSpace(ts.Name) == "" {
			d.errorf(r.p("name"), "MCP task toolset name must not be empty")
		}
		if n := utf8.RuneCountInString(ts.Name); n > MaxTaskToolsetNameLength {
			d.errorf(r.p("name"), "must be at most %d characters (got %d)", MaxTaskToolsetNameLength, n)
		}
		roles := []struct {
			key string
			dst *string
		}{
			{"submit_tool", &ts.SubmitTool},
			{"status_tool", &ts.StatusTool},
			{"cancel_tool", &ts.CancelTool},
		}
		for _, role := range roles {
			if *role.dst = r.requiredStr(role.key); *role.dst == "" {
				d.errorf(r.p(role.key), "must not be empty")
			}
		}
		// input_tool (an mcpflow extension) is optional; when present it is
		// a role like the others.
		if r.obj.Has("input_tool") {
			if ts.InputTool = r.str("input_tool", "", false); strings.TrimSpace(ts.InputTool) == "" {
				d.errorf(r.p("input_tool"), "must not be empty")
			}
			roles = append(roles, struct {
				key string
				dst *string
			}{"input_tool", &ts.InputTool})
		}
		r.forbidExtras("task_toolsets entries allow only name, submit_tool, status_tool, cancel_tool and input_tool")
		for _, role := range roles {
			here := ts.Name + "." + role.key
			if prev, dup := claimed[*role.dst]; dup {
				d.errorf(r.p(role.key), "MCP task tool %s must be unique across task_toolsets and roles; it is configured as both %s and %s", pyRepr(*role.dst), prev, here)
			}
			claimed[*role.dst] = here
		}
		out = append(out, ts)
	}
	return out
}
