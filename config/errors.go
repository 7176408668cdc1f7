package config

import "strings"

// FieldError is a configuration error that names where the bad value came
// from (Source: a file path, "env MCPFLOW_X", or empty) and which field holds
// it (Field: a dotted path such as "mcp_tasks.poll_interval_seconds" or
// "mcpServers.demo.tool_call_timeout", possibly empty). Message never contains
// a token, secret or header value.
type FieldError struct {
	Source  string
	Field   string
	Message string
}

// Error renders "source: field: message", leaving out empty parts. The result
// is always a single line.
func (e *FieldError) Error() string {
	parts := make([]string, 0, 3)
	if e.Source != "" {
		parts = append(parts, e.Source)
	}
	if e.Field != "" {
		parts = append(parts, e.Field)
	}
	parts = append(parts, e.Message)
	return singleLine(strings.Join(parts, ": "))
}

// singleLine replaces line breaks so an error message stays on one line.
func singleLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
