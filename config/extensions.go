package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"time"

	"github.com/mcpflow/mcpflow/policy"
)

// Transport types accepted in mcpServers.<name>.type (exact, case-sensitive).
const (
	TransportStdio = "stdio"
	TransportSSE   = "sse"
	TransportHTTP  = "http"
)

// Routing modes (spec §1.6).
const (
	RoutingOff    = "off"
	RoutingPrefer = "prefer"
)

// OnMissing policies of user_auth and headers_from_context (spec §1.4, §1.5).
const (
	OnMissingDeny        = "deny"
	OnMissingPassthrough = "passthrough"
)

// OAuth grant types (spec §1.3).
const (
	GrantClientCredentials = "client_credentials"
	GrantRefreshToken      = "refresh_token"
	// GrantTokenExchange (RFC 8693, an mcpflow extension) exchanges the
	// access token of the caller signed in with an identity provider for a
	// token of the MCP server's own audience, per call. It applies to
	// sse/http servers only and takes no refresh_token. The short alias
	// "token_exchange" is accepted in the file and decoded to this URN.
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
)

// MCP protocol revisions a server can be pinned to (protocol_version).
const (
	ProtocolVersion20251125 = "2025-11-25"
	ProtocolVersion20260728 = "2026-07-28"
)

// Defaults and limits of extensions_config.json.
const (
	// DefaultSessionInitTimeout is session_init_timeout when the key is absent, in seconds.
	DefaultSessionInitTimeout = 60.0
	// MaxTaskServerNameLength bounds the name of a server with task_toolsets.
	MaxTaskServerNameLength = 128
	// MaxTaskToolsetNameLength bounds task_toolsets[].name.
	MaxTaskToolsetNameLength = 255
)

// Extensions is the typed, env-resolved, validated content of
// extensions_config.json (spec §1.1–1.7).
type Extensions struct {
	// Servers are the mcpServers entries in declaration order.
	Servers []Server
	// Skills maps skill name to its state.
	Skills map[string]Skill
	// Middlewares are "module.path:ClassName" entries (kept for compatibility).
	Middlewares []string
	// MCPInterceptors are the mcpInterceptors entries; a single string is
	// normalized to a one-element list.
	MCPInterceptors []string
	// PolicyConfig is the "policies" block, nil when absent; Policies is
	// it compiled (nil: every caller may see and call every tool).
	PolicyConfig *policy.Config
	Policies     *policy.Set
	// VirtualServers are the "virtualServers" block: named sets of tools
	// at their own MCP URLs (nil: none).
	VirtualServers map[string]*policy.VirtualServer
	// Extra holds unknown top-level keys in order (env-resolved values).
	Extra *Object
	// Warnings are non-fatal findings (priority clamping, ignored
	// mcpInterceptors values), in document order.
	Warnings []string

	raw *RawDocument
}

// Skill is the state of one skill.
type Skill struct {
	Enabled bool // default true
}

// Server is one mcpServers entry (spec §1.2) with defaults applied.
type Server struct {
	// Name is the key under mcpServers.
	Name string
	// Enabled: disabled servers are ignored everywhere. Default true.
	Enabled bool
	// Type is the transport after the alias rule: "stdio" (default), "sse" or "http".
	Type string
	// Command is the stdio executable ("" when absent or null).
	Command string
	// Args is the stdio argv after Command.
	Args []string
	// Env is the stdio subprocess environment.
	Env map[string]string
	// URL is the sse/http endpoint ("" when absent or null).
	URL string
	// Headers are static HTTP headers for sse/http. No two names differ only in case.
	Headers map[string]string
	// OAuth is the oauth block, nil when absent or null.
	OAuth *OAuth
	// UserAuth is the user_auth block, nil when absent or null.
	UserAuth *UserAuth
	// HeadersFromContext is the headers_from_context block, nil when absent or null.
	HeadersFromContext *HeadersFromContext
	// Description is presentation only.
	Description string
	// Routing holds the server-level routing hints.
	Routing Routing
	// Tools maps an original (raw) tool name to its overrides.
	Tools map[string]ToolOverride
	// ToolNamePrefix prefixes visible tool names with "<server>_". Default true.
	ToolNamePrefix bool
	// ToolCallTimeout in seconds; nil means no call-level timeout. When set it
	// is finite and > 0.
	ToolCallTimeout *float64
	// SessionInitTimeout in seconds; 60 when the key is absent, nil when it is
	// an explicit JSON null (no bound). When set it is finite and > 0.
	SessionInitTimeout *float64
	// Cwd is the stdio working directory ("" = workspace default).
	Cwd string
	// TaskToolsets are the durable submit/status/cancel groups.
	TaskToolsets []TaskToolset
	// NativeTasks (key "native_tasks", an mcpflow extension; default false)
	// makes the server's tools whose execution.taskSupport is "optional"
	// durable native MCP tasks. Tools whose taskSupport is "required" are
	// durable whatever it says.
	NativeTasks bool
	// ProtocolVersion (key "protocol_version", an mcpflow extension) pins
	// the MCP revision mcpflow speaks to the server:
	// ProtocolVersion20251125 (the initialize handshake, without the
	// server/discover probe) or ProtocolVersion20260728 (not with type
	// sse). A server that answers in another revision fails to connect.
	// "" (the key absent or null, the default) speaks the newest revision
	// the server offers.
	ProtocolVersion string
	// ForwardRoots (key "forward_roots", an mcpflow extension; default
	// false; type http only) declares roots to the server on 2025-11-25,
	// and a roots/list it asks during an ordinary call goes to that call's
	// caller. Off by default: a 2025-11-25 session's roots belong to the
	// session, and mcpflow's session to the server serves every caller, so
	// a server that keeps the roots it was given would show one caller's
	// to the next.
	ForwardRoots bool
	// Extra holds unknown keys in order, including a raw "transport".
	Extra *Object
}

// OAuth is the oauth block of a server (spec §1.3).
//
// With GrantTokenExchange the subject token is the calling user's access
// token (never configured): token_url is required, client_id and
// client_secret are optional client authentication, audience, scope and
// extra_token_params (e.g. "resource") name what the exchanged token is
// for, and refresh_token must not be set; token_url must be https (http
// only on loopback: it receives callers' tokens); the server must be
// sse/http and have no task_toolsets or native_tasks (a durable task's
// steps run without the caller).
type OAuth struct {
	Enabled            bool   // default true
	TokenURL           string // required
	GrantType          string // GrantClientCredentials (default), GrantRefreshToken or GrantTokenExchange
	ClientID           string // "" when null
	ClientSecret       string // "" when null
	RefreshToken       string // "" when null
	Scope              string // "" when null
	Audience           string // "" when null
	TokenField         string // default "access_token"
	TokenTypeField     string // default "token_type"
	ExpiresInField     string // default "expires_in"
	DefaultTokenType   string // default "Bearer"
	RefreshSkewSeconds int    // default 60; negative values become 0
	ExtraTokenParams   map[string]string
	Extra              *Object // unknown keys in order
}

// UserAuth is the user_auth block of a server (spec §1.4).
type UserAuth struct {
	Enabled   bool              // default true
	Header    string            // default "Authorization"; never blank
	Users     map[string]string // user id → full header value (env-resolved)
	OnMissing string            // OnMissingDeny (default) or OnMissingPassthrough
	Extra     *Object           // unknown keys in order
}

// HeadersFromContext is the headers_from_context block of a server (spec §1.5).
type HeadersFromContext struct {
	Enabled bool // default true
	// Headers maps an HTTP header name to a key of the request's
	// config.context.secrets. Values are names and are never env-resolved.
	Headers   map[string]string
	OnMissing string  // OnMissingDeny (default) or OnMissingPassthrough
	Extra     *Object // unknown keys in order
}

// Routing holds routing hints (spec §1.6).
type Routing struct {
	Mode     string // RoutingOff (default) or RoutingPrefer
	Priority int    // clamped to 0..100
	Keywords []string
}

// RoutingOverride is a per-tool routing override; nil fields were not set and
// keep the server's value.
type RoutingOverride struct {
	Mode     *string
	Priority *int
	Keywords *[]string
}

// ToolOverride is a tools.<original name> entry.
type ToolOverride struct {
	Routing *RoutingOverride // nil when the override has no routing key
	Extra   *Object          // unknown keys in order
}

// TaskToolset is one task_toolsets entry (spec §1.7). Tool names are raw MCP
// tool names (before any "<server>_" prefix).
type TaskToolset struct {
	Name       string
	SubmitTool string
	StatusTool string
	CancelTool string
	// InputTool is the optional input_tool: the raw name of the tool that
	// receives a user's answer to the question of a task in input_required
	// (an mcpflow extension; "" when not configured, and then such a
	// question cannot be answered through mcpflow).
	InputTool string
	// Native marks the toolset the runtime makes up for a tool run as a
	// native MCP task (never configured): Name and SubmitTool are the raw
	// tool name, StatusTool and CancelTool are empty.
	Native bool `json:"-"`
	// Adopt, with Native, is the remote id of a task the server already
	// started: it answered an ordinary tools/call of SubmitTool with it
	// (2026-07-28, resultType "task"). Never configured.
	Adopt string `json:"-"`
}

// HiddenTools returns the raw names of the toolset's tools that agents do
// not see: the status and cancel tools, and the input tool when set.
func (ts TaskToolset) HiddenTools() []string {
	out := []string{ts.StatusTool, ts.CancelTool}
	if ts.InputTool != "" {
		out = append(out, ts.InputTool)
	}
	return out
}

// Tools returns the raw names of all of the toolset's configured tools.
func (ts TaskToolset) Tools() []string {
	return append([]string{ts.SubmitTool}, ts.HiddenTools()...)
}

// Lookup returns the server called name.
func (e *Extensions) Lookup(name string) (*Server, bool) {
	for i := range e.Servers {
		if e.Servers[i].Name == name {
			return &e.Servers[i], true
		}
	}
	return nil, false
}

// Raw returns a deep copy of the unresolved document the model was decoded
// from ($VAR placeholders and unknown keys intact), for writers.
func (e *Extensions) Raw() *RawDocument {
	if e.raw == nil {
		return &RawDocument{Root: NewObject()}
	}
	return e.raw.Clone()
}

// EffectiveRouting is the routing of one tool: the server routing with the
// fields explicitly set in tools.<tool>.routing overriding it (spec §1.6).
func (s *Server) EffectiveRouting(tool string) Routing {
	r := s.Routing
	if o, ok := s.Tools[tool]; ok && o.Routing != nil {
		r = o.Routing.apply(r)
	}
	r.Keywords = slices.Clone(r.Keywords)
	return r
}

// SessionInitTimeoutDuration returns session_init_timeout as a duration and
// false when there is no bound.
func (s *Server) SessionInitTimeoutDuration() (time.Duration, bool) {
	return secondsDuration(s.SessionInitTimeout)
}

// ToolCallTimeoutDuration returns tool_call_timeout as a duration and false
// when there is no call-level timeout.
func (s *Server) ToolCallTimeoutDuration() (time.Duration, bool) {
	return secondsDuration(s.ToolCallTimeout)
}

func secondsDuration(p *float64) (time.Duration, bool) {
	if p == nil {
		return 0, false
	}
	if ns := *p * float64(time.Second); ns < float64(math.MaxInt64) {
		return time.Duration(ns), true
	}
	return time.Duration(math.MaxInt64), true
}

// ConnectionProblem reports a problem that makes the runtime skip this server
// (logging the reason) rather than fail loading the file: a stdio server
// without command, an sse/http server without url, or a static header value
// that fails CheckHeaderValue. The message never contains a header value.
func (s *Server) ConnectionProblem() error {
	switch s.Type {
	case TransportStdio:
		if s.Command == "" {
			return fmt.Errorf("MCP server '%s' with stdio transport requires 'command' field", s.Name)
		}
	case TransportSSE, TransportHTTP:
		if s.URL == "" {
			return fmt.Errorf("MCP server '%s' with %s transport requires 'url' field", s.Name, s.Type)
		}
		for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
			if err := CheckHeaderValue(s.Headers[name]); err != nil {
				return fmt.Errorf("MCP server '%s' header '%s' %w", s.Name, name, err)
			}
		}
	default:
		return fmt.Errorf("MCP server '%s' has unsupported transport type '%s'", s.Name, s.Type)
	}
	return nil
}

// RawDocument is an extensions_config.json document as written, before
// placeholder resolution: key order, $VAR placeholders, unknown keys and extra
// keys are all kept, so a writer can change one thing and write the rest back
// unchanged.
type RawDocument struct {
	Root *Object
}

// ParseRawDocument parses data as a JSON object. Bare NaN, Infinity and
// -Infinity are accepted as numbers. A syntax error is a *SyntaxError.
func ParseRawDocument(data []byte) (*RawDocument, error) {
	v, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	root, ok := v.(*Object)
	if !ok {
		return nil, &FieldError{Message: "top level must be a JSON object (got " + kindOf(v) + ")"}
	}
	return &RawDocument{Root: root}, nil
}

// Clone returns a deep copy of d.
func (d *RawDocument) Clone() *RawDocument {
	return &RawDocument{Root: d.Root.Clone()}
}

// MarshalJSON writes the document as JSON indented by two spaces (the layout
// of Python's json.dump(indent=2)), keys in their stored order, without a
// trailing newline. (json.Marshal of a RawDocument compacts this again.)
func (d *RawDocument) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	root := d.Root
	if root == nil {
		root = NewObject()
	}
	if err := encodeValue(&buf, root, "", "  "); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode resolves placeholders (except headers_from_context.headers values),
// decodes and validates the document. Errors are *FieldError values whose
// Source is source and whose Field is the JSON path of the bad value, e.g.
// "mcpServers.demo.tool_call_timeout". A nil env means os.LookupEnv.
func (d *RawDocument) Decode(source string, env func(string) (string, bool)) (*Extensions, error) {
	if env == nil {
		env = os.LookupEnv
	}
	root := d.Root
	if root == nil {
		root = NewObject()
	}
	// Values that came from the environment are named, not shown, in
	// errors: a misplaced $SECRET must not reach an error message.
	fromEnv := map[string]string{}
	recording := func(k string) (string, bool) {
		v, ok := env(k)
		if ok && v != "" {
			fromEnv[v] = "$" + k
		}
		return v, ok
	}
	resolved := resolveDocument(root, recording)
	dec := &extDecoder{source: source, fromEnv: fromEnv}
	ext, err := dec.extensions(resolved)
	if err != nil {
		return nil, err
	}
	ext.raw = &RawDocument{Root: root.Clone()}
	return ext, nil
}

// LoadExtensions reads, parses, resolves, decodes and validates the
// extensions config at path. An empty path gives the empty config (no
// servers, no skills). A nil env means os.LookupEnv.
//
// Invalid JSON is reported as "Extensions config file at <path> is not valid
// JSON: <line>:<col>: <detail>"; every other problem as
// "<path>: <field path>: <message>" (a *FieldError).
func LoadExtensions(path string, env func(string) (string, bool)) (*Extensions, error) {
	if path == "" {
		return (&RawDocument{Root: NewObject()}).Decode("", env)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read extensions config: %w", err)
	}
	return ParseExtensions(data, path, env)
}

// InvalidJSONError reports an extensions config file that is not valid JSON.
type InvalidJSONError struct {
	Path string
	Err  *SyntaxError
}

// Error renders DeerFlow's wording: "Extensions config file at <path> is not
// valid JSON: <line>:<col>: <detail>".
func (e *InvalidJSONError) Error() string {
	return "Extensions config file at " + e.Path + " is not valid JSON: " + e.Err.Error()
}

// Unwrap returns the *SyntaxError.
func (e *InvalidJSONError) Unwrap() error { return e.Err }

// ParseExtensions is LoadExtensions for content already in memory; source
// names it in errors.
func ParseExtensions(data []byte, source string, env func(string) (string, bool)) (*Extensions, error) {
	doc, err := ParseRawDocument(data)
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return nil, &InvalidJSONError{Path: source, Err: se}
		}
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.Source = source
		}
		return nil, err
	}
	return doc.Decode(source, env)
}
