package mcpflow

import (
	"context"
	"encoding/json"
	"fmt"
)

// Routing is the effective routing hint of a tool (spec §1.6, §3.9).
type Routing struct {
	Mode     string   `json:"mode"`
	Priority int      `json:"priority"`
	Keywords []string `json:"keywords"`
}

// Tool is an MCP tool as an agent sees it through mcpflow.
type Tool struct {
	Name         string          `json:"name"`          // visible name (prefixed unless tool_name_prefix is false)
	Description  string          `json:"description"`   // as the server gave it (plus the task suffix for submit wrappers)
	InputSchema  json.RawMessage `json:"input_schema"`  // JSON Schema of the arguments
	Server       string          `json:"server"`        // the server that produced it: calls route here
	OriginalName string          `json:"original_name"` // the server's own (raw) tool name
	Routing      *Routing        `json:"routing"`       // nil when routing mode is off
	TaskToolset  *string         `json:"task_toolset"`  // toolset name for a submit wrapper, else nil
	// The server's own fields of the tool, as it gave them (absent when
	// it gave none): what MCP hosts show and use.
	Title        string          `json:"title,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`   // readOnlyHint, destructiveHint, …
	OutputSchema json.RawMessage `json:"output_schema,omitempty"` // JSON Schema of the structured content
	Icons        json.RawMessage `json:"icons,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
	Execution    json.RawMessage `json:"execution,omitempty"` // 2025-11-25's taskSupport
}

// ToolCall is one call of a tool for a user's thread.
type ToolCall struct {
	UserID    string
	ThreadID  string
	Tool      string         // visible name
	Arguments map[string]any // nil means {} (or RawArguments)
	// RawArguments are the arguments as the caller wrote them (one JSON
	// object, checked by the edge), used when Arguments is nil: an
	// ordinary call sends them upstream as they are, never decoded;
	// CallArguments decodes them where a map is needed.
	RawArguments json.RawMessage
	Secrets      map[string]string // request-scoped credentials; never logged or stored
	RunID        *string
	ToolCallID   *string
	// IdempotencyKey is the caller's key for a durable submit (REST header
	// Idempotency-Key, MCP _meta IdempotencyKeyMeta; checked with
	// ValidIdempotencyKey): the task's id derives from (user, thread, key),
	// so a retry answers the task the first attempt started. "" for none.
	IdempotencyKey string
	// Relay is set for a call an MCP client made through the MCP endpoint:
	// what mcpflow passes on to the MCP server and back (nil for REST).
	Relay *CallRelay
}

// CallArguments are the call's arguments as a map (numbers as
// json.Number): Arguments, else RawArguments decoded; nil means {}.
func (c *ToolCall) CallArguments() (map[string]any, error) {
	if c.Arguments != nil || len(c.RawArguments) == 0 {
		return c.Arguments, nil
	}
	return DecodeArguments(c.RawArguments)
}

// CallRelay is what an MCP client's call carries through mcpflow to the
// MCP server and back, so that mcpflow is transparent to it.
type CallRelay struct {
	// ClientCapabilities are the capabilities declared to the server for
	// the call (2026-07-28: per request): the client's own, so the server
	// asks it only what it can answer.
	ClientCapabilities json.RawMessage
	// PassInput returns a server's request for input (2026-07-28,
	// resultType "input_required") to the client as it is
	// (ToolResult.InputRequired); the client's retry brings InputResponses
	// and RequestState back.
	PassInput      bool
	InputResponses json.RawMessage
	RequestState   string
	// Ask, when set, answers a server's input requests during the call by
	// asking the client (a 2025-11-25 client: as requests on its stream);
	// keyed as the server keyed them.
	Ask func(ctx context.Context, requests map[string]json.RawMessage) (map[string]json.RawMessage, error)
	// Progress, when set, receives the server's progress notifications of
	// the call (their params, without the server's progressToken).
	Progress func(params map[string]any)
	// Log, when set, receives the server's log messages of the call (the
	// params of notifications/message, logger naming the server), and
	// LogLevel is the level asked of a 2026-07-28 server for it.
	Log      func(params map[string]any)
	LogLevel string
}

// RPCError is a JSON-RPC error an MCP server answered a relayed call with
// that is its caller's to hear as it is (-32021: the call needs a client
// capability the caller did not declare). ToolRuntime.CallTool returns it
// for calls with a CallRelay only.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// ToolResult is what a tool call returned. Content holds MCP content blocks
// as JSON objects (text, image, audio, resource_link, resource). A tool
// that reported an error returns IsError with a nil Go error.
type ToolResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent any               `json:"structured_content"`
	IsError           bool              `json:"is_error"`
	// Task is the local id of the durable task the call started (a submit
	// wrapper, or a call the server answered with a task), whose handle
	// the result is; "" otherwise. The MCP endpoint answers such a call
	// as a task to clients of the Tasks extension.
	Task string `json:"-"`
	// Adopted is set by the task submitter when the durable task Task took
	// over the remote task the MCP server answered an ordinary call with
	// (2026-07-28, resultType "task"). Without it that remote task is not
	// tracked, and the runtime cancels it upstream.
	Adopted bool `json:"-"`
	// InputRequired is the server's request for input (2026-07-28,
	// resultType "input_required"), for a call with CallRelay.PassInput:
	// the MCP endpoint answers it to the client as it is.
	InputRequired json.RawMessage `json:"-"`
}

// ToolRuntime lists and calls MCP tools. Errors are domain errors: ENotFound
// for an unknown tool, EInvalid for arguments the server rejected,
// EUpstream for an unreachable or failing server, EUnavailable for a tool
// of a server that is down (or no free stdio session), ETimeout for a call
// or session start that ran out of time.
type ToolRuntime interface {
	ListTools(ctx context.Context, userID, threadID string) ([]Tool, error)
	// UnavailableServers names the enabled servers whose tools are missing
	// from ListTools for userID (with the caller of ctx), and why.
	UnavailableServers(ctx context.Context, userID string) ([]UnavailableServer, error)
	CallTool(ctx context.Context, call ToolCall) (*ToolResult, error)
	// RoutingHints renders the <mcp_routing_hints> prompt section for tools.
	RoutingHints(tools []Tool) string
	// ResetCache drops discovered tools and pooled sessions in this process.
	ResetCache()
}

// SurfaceRuntime is implemented by a ToolRuntime that relays its servers'
// prompts and resources: listings of JSON objects as the servers write them
// (prompts renamed as the runtime lists them), and results as written. An
// error a server answered is an *RPCError, for the client to hear; an
// unknown prompt or resource is an *RPCError -32602 (a resource's with
// its URI in data, SEP-2164).
type SurfaceRuntime interface {
	ListPrompts(ctx context.Context, userID, threadID string) ([]json.RawMessage, error)
	// GetPrompt sends params (arguments; a 2026-07-28 retry's
	// inputResponses and requestState) with the prompt's own name.
	GetPrompt(ctx context.Context, userID, threadID, name string, params map[string]any) (json.RawMessage, error)
	ListResources(ctx context.Context, userID, threadID string) ([]json.RawMessage, error)
	ListResourceTemplates(ctx context.Context, userID, threadID string) ([]json.RawMessage, error)
	ReadResource(ctx context.Context, userID, threadID, uri string) (json.RawMessage, error)
	// Complete answers completion/complete for a prompt's argument or a
	// resource template's variable (params as the client sent them).
	Complete(ctx context.Context, userID, threadID string, params map[string]any) (json.RawMessage, error)
	// SubscribeResource subscribes to uri at its server and calls updated
	// at each update the server announces, until unsubscribe.
	SubscribeResource(ctx context.Context, userID, threadID, uri string, updated func()) (unsubscribe func(), err error)
	// WatchLists calls changed with the method of each
	// notifications/prompts/list_changed and resources/list_changed of
	// the thread's servers, until stop.
	WatchLists(ctx context.Context, userID, threadID string, changed func(method string)) (stop func(), err error)
}

type serverFilterKey struct{}

type serverCheckKey struct{}

// WithServerCheck makes a SurfaceRuntime ask check before it answers a
// prompts/get or resources/read with the server it picked (the policies'
// rate limits); an error of check is the answer.
func WithServerCheck(ctx context.Context, check func(server string) error) context.Context {
	return context.WithValue(ctx, serverCheckKey{}, check)
}

// CheckServer runs WithServerCheck's check in ctx, if any, for server.
func CheckServer(ctx context.Context, server string) error {
	if check, _ := ctx.Value(serverCheckKey{}).(func(string) error); check != nil {
		return check(server)
	}
	return nil
}

// WithServerFilter limits a SurfaceRuntime's prompts and resources in ctx
// to the servers allow admits (the policies' decision for the caller).
func WithServerFilter(ctx context.Context, allow func(server string) bool) context.Context {
	return context.WithValue(ctx, serverFilterKey{}, allow)
}

// ServerAllowed reports whether WithServerFilter's filter in ctx, if any,
// admits server.
func ServerAllowed(ctx context.Context, server string) bool {
	allow, _ := ctx.Value(serverFilterKey{}).(func(string) bool)
	return allow == nil || allow(server)
}

// UnknownPrompt is the answer to a prompt the caller has none of.
func UnknownPrompt(name string) *RPCError {
	return &RPCError{Code: -32602, Message: fmt.Sprintf("unknown prompt '%s'", TruncateChars(name, 200))}
}

// UnknownResource is the answer to a resource the caller has none of:
// -32602 with the URI in data (SEP-2164).
func UnknownResource(uri string) *RPCError {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &RPCError{Code: -32602, Message: "Resource not found", Data: data}
}

// ToolLookup is implemented by a ToolRuntime that finds one tool of its
// listing by name without copying the listing (a call's path): the tool as
// ListTools lists it, or nil (and no error) when the listing has none.
type ToolLookup interface {
	LookupTool(ctx context.Context, userID, threadID, name string) (*Tool, error)
}

// ToolViews is implemented by a ToolRuntime that serves virtual servers:
// named sets of its tools at their own MCP URLs (a request to one carries
// WithToolView).
type ToolViews interface {
	HasView(ctx context.Context, name string) (bool, error)
}

type toolViewKey struct{}

// WithToolView marks ctx as a request to the virtual server name (the
// MCP endpoint /mcp/v/{name}): its tools only, as it names them.
func WithToolView(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, toolViewKey{}, name)
}

// ToolViewFrom returns the virtual server WithToolView put in ctx ("" for
// none: every tool).
func ToolViewFrom(ctx context.Context) string {
	v, _ := ctx.Value(toolViewKey{}).(string)
	return v
}

// ConfigAdmin manages the MCP servers file (extensions_config.json) for the
// admin API. Bodies and answers are JSON: requests {"mcp_servers": {...}}
// and answers {"mcp_servers": {name: masked server}}, keys in file order.
// actor names the admin in the audit log. Errors are domain errors:
// EInvalid (a refused or invalid write), ENotFound, EConflict, EInternal.
type ConfigAdmin interface {
	MCPConfig(ctx context.Context) ([]byte, error)
	ReplaceMCPServers(ctx context.Context, actor string, body []byte) ([]byte, error)
	AddMCPServers(ctx context.Context, actor string, body []byte) ([]byte, error)
	SetMCPServerEnabled(ctx context.Context, actor, server string, enabled bool) ([]byte, error)
	// PolicyConfig answers {"policies": the tool policies block or null};
	// ReplacePolicies writes one ({"policies": null} removes it) after
	// compiling it: a condition that does not compile is EInvalid with
	// its field, line and column.
	PolicyConfig(ctx context.Context) ([]byte, error)
	ReplacePolicies(ctx context.Context, actor string, body []byte) ([]byte, error)
	// VirtualServers and ReplaceVirtualServers are the same for
	// {"virtualServers": {...}}.
	VirtualServers(ctx context.Context) ([]byte, error)
	ReplaceVirtualServers(ctx context.Context, actor string, body []byte) ([]byte, error)
}

// UnavailableServer is an enabled MCP server whose tools are missing from
// the listing: its connection settings are missing or invalid, or its tool
// discovery failed (then it is retried). Reason never holds a secret.
type UnavailableServer struct {
	Server string `json:"server"`
	Reason string `json:"reason"`
}

// UnknownTool is the ENotFound error of a call to a tool the caller cannot
// see; the name, client text, is cut to 200 characters.
func UnknownTool(name string) error {
	return Errorf(ENotFound, "unknown tool '%s'", TruncateChars(name, 200))
}
