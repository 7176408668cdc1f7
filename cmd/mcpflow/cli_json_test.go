package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"
)

// compareExpr is text with the three characters an HTML-safe JSON encoder
// escapes; windowsPath holds a backslash followed by "u003c", which must
// stay an escaped backslash in JSON.
const (
	compareExpr = "a < b && b > c"
	windowsPath = `C:\u003cdir`
)

// startCompareServer serves an in-process mcp-go server over streamable
// HTTP with one tool, compare, whose description, argument schema and
// answer hold "<", ">" and "&"; it returns the server's URL.
func startCompareServer(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("html", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("compare",
		mcp.WithDescription("Is "+compareExpr+"?\nAnswers the expression."),
		mcp.WithString("expr", mcp.Description("an expression such as a<b & b>c")),
		mcp.WithString("path", mcp.Description("a path such as "+windowsPath)),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultStructured(map[string]any{"expr": compareExpr, "path": windowsPath}, compareExpr), nil
	})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL + "/mcp"
}

// htmlEscape is an HTML escape of json.Marshal (\u003c, \u003e, \u0026)
// that is not an escaped backslash followed by "u003c".
var htmlEscape = `(^|[^\\])\\u00(3c|3e|26)`

// The client prints JSON as people write it: "<", ">" and "&" as they are,
// not as the \u003c, \u003e and \u0026 the API's encoder writes, in a
// tool's schema, a call's structured content and --json output alike; an
// escaped backslash stays escaped.
func TestCLIPrintsJSONWithoutHTMLEscapes(t *testing.T) {
	ext := fmt.Sprintf(`{"mcpServers": {"html": {"type": "http", "url": %q}}}`, startCompareServer(t))
	e := &taskEnv{m: waitServing(t, startMain(t, ModeServe, writeConfig(t, "", ext), nil))}

	r := e.cli(t, "tools", "html_compare")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Is "+compareExpr+"?\nAnswers the expression.\n")
	require.Contains(t, r.stdout, `"description": "an expression such as a<b & b>c"`)
	require.Contains(t, r.stdout, `"description": "a path such as C:\\u003cdir"`, "an escaped backslash stays escaped")
	require.NotRegexp(t, htmlEscape, r.stdout)

	for _, args := range [][]string{{"tools", "html_compare", "--json"}, {"tools", "--json"}} {
		r = e.cli(t, args...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, `"description":"an expression such as a<b & b>c"`, args)
		require.Contains(t, r.stdout, `"description":"a path such as C:\\u003cdir"`, args)
		require.NotRegexp(t, htmlEscape, r.stdout, args)
		require.True(t, json.Valid([]byte(r.stdout)), "%v printed %s", args, r.stdout)
	}

	r = e.cli(t, "call", "html_compare")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, compareExpr+"\nstructured content:\n{\n  \"expr\": \""+compareExpr+"\",\n  \"path\": \"C:\\\\u003cdir\"\n}\n", r.stdout)

	r = e.cli(t, "call", "html_compare", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"structured_content":{"expr":"`+compareExpr+`","path":"C:\\u003cdir"}`)
	require.NotRegexp(t, htmlEscape, r.stdout)
	var ans callAnswer
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ans), r.stdout)
	require.Equal(t, map[string]any{"expr": compareExpr, "path": windowsPath}, ans.StructuredContent)
	require.Equal(t, 1, strings.Count(r.stdout, "\n"), "one line")
}
