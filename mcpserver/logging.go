package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Logging: a caller hears an upstream's log messages during its call at or
// above its level, which a 2025-11-25 session sets with logging/setLevel
// (stored with the session, so every replica reads it, within its few
// seconds of session cache) and a 2026-07-28
// request names in _meta (io.modelcontextprotocol/logLevel); without a
// level none is relayed (relay.go).

// logLevels are the syslog severities MCP names, least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logSeverity is level's rank in logLevels, -1 for none.
func logSeverity(level string) int { return slices.Index(logLevels, level) }

// setLevel answers logging/setLevel (2025-11-25): the session's level from
// now on, answered {}.
func (c *call) setLevel(ctx context.Context) (any, *rpcError) {
	p := c.msg.Params
	switch {
	case c.msg.paramsErr != nil:
		return nil, c.msg.paramsErr
	case logSeverity(p.Level) < 0:
		return nil, invalidParams("params.level must be one of %s", strings.Join(logLevels, ", "))
	}
	if err := c.s.opts.Sessions.SetMCPSessionLogLevel(ctx, c.session, p.Level); err != nil {
		return nil, c.domainError("set the log level", err)
	}
	c.s.sessions.forget(c.session) // re-read with its level
	return struct{}{}, nil
}

// callLogLevel is the level of log messages the caller asked for: the
// session's, or the request's _meta; "" for none.
func (c *call) callLogLevel() string {
	if !c.modern {
		return c.logLevel
	}
	var level string
	if raw, ok := c.msg.Params.Meta[mcp.MetaKeyLogLevel]; ok && json.Unmarshal(raw, &level) == nil && logSeverity(level) >= 0 {
		return level
	}
	return ""
}

// logRelay relays the log messages of a call at or above level as
// notifications/message on the call's stream.
func (c *call) logRelay(level string) func(params map[string]any) {
	least := logSeverity(level)
	return func(params map[string]any) {
		if l, _ := params["level"].(string); logSeverity(l) < least {
			return
		}
		_ = c.notify(notification{JSONRPC: mcp.JSONRPC_VERSION, Method: string(mcp.MethodNotificationMessage), Params: params})
	}
}
