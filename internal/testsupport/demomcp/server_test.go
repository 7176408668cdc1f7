package demomcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

func newServer(t *testing.T) *Server {
	t.Helper()
	srv, err := New(Config{Workdir: t.TempDir()})
	require.NoError(t, err)
	return srv
}

// TestTransports runs the same basic conversation over every transport.
func TestTransports(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		connect func(t *testing.T) *client.Client
	}{
		{"streamable-http", func(t *testing.T) *client.Client { return connectHTTP(t, newServer(t), "") }},
		{"streamable-http-2025-11-25", func(t *testing.T) *client.Client {
			return connectHTTP(t, newServer(t), mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		}},
		{"sse", func(t *testing.T) *client.Client { return connectSSE(t, newServer(t)) }},
		{"stdio", func(t *testing.T) *client.Client { return connectStdio(t, nil, "", "--workdir", t.TempDir()) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tc.connect(t)

			tools, err := c.ListTools(testContext(t), mcp.ListToolsRequest{})
			require.NoError(t, err)
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			require.ElementsMatch(t, ToolNames, names)

			res := callTool(t, c, ToolEcho, map[string]any{"message": "hello"})
			require.False(t, res.IsError)
			require.Equal(t, "hello", firstText(res))

			sum := callTool(t, c, ToolAdd, map[string]any{"a": 2, "b": 0.5})
			require.False(t, sum.IsError)
			require.Equal(t, "2.5", firstText(sum))
			require.Equal(t, map[string]any{"sum": 2.5}, structuredOf(t, sum))

			failed := callTool(t, c, ToolFail, map[string]any{"message": "nope"})
			require.True(t, failed.IsError)
			require.Equal(t, "nope", firstText(failed))

			sub := callStructured(t, c, ToolSubmitJob, map[string]any{"duration_seconds": 0})
			id, _ := sub["task_id"].(string)
			require.Equal(t, map[string]any{"task_id": id, "status": "running"}, sub)
			done := waitStatus(t, c, id, "completed")
			require.Equal(t, map[string]any{"answer": float64(42)}, done["result"])
		})
	}
}

func TestEchoRequiresMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := callTool(t, b.client, ToolEcho, map[string]any{})
	require.True(t, res.IsError)
	require.Contains(t, firstText(res), "message")
}

func TestAddRejectsNonNumbers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := callTool(t, b.client, ToolAdd, map[string]any{"a": "one", "b": 2})
	require.True(t, res.IsError)
}

func TestSlow(t *testing.T) {
	t.Parallel()
	b := setup(t)

	res := callTool(t, b.client, ToolSlow, map[string]any{"seconds": 0.05, "message": "awake"})
	require.False(t, res.IsError)
	require.Equal(t, "awake", firstText(res))

	// A caller that gives up cancels the sleep; the call returns an error
	// instead of waiting for the 600 s cap.
	ctx, cancel := context.WithTimeout(testContext(t), 200*time.Millisecond)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = ToolSlow
	req.Params.Arguments = map[string]any{"seconds": 10000}
	_, err := b.client.CallTool(ctx, req)
	require.Error(t, err)
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	workdir := b.workdir

	res := callTool(t, b.client, ToolWriteFile, map[string]any{"name": "reports/q1/out.json", "content": `{"ok":true}`})
	require.False(t, res.IsError, firstText(res))
	want := filepath.Join(workdir, "reports", "q1", "out.json")
	require.Equal(t, "Wrote "+want, firstText(res))
	require.Len(t, res.Content, 2)
	link, ok := res.Content[1].(mcp.ResourceLink)
	require.True(t, ok, "second block is %T", res.Content[1])
	require.Equal(t, "resource_link", link.Type)
	require.Equal(t, "file://"+want, link.URI)
	require.Equal(t, "out.json", link.Name)
	require.Equal(t, "application/json", link.MIMEType)
	got, err := os.ReadFile(want)
	require.NoError(t, err)
	require.Equal(t, `{"ok":true}`, string(got))

	res = callTool(t, b.client, ToolWriteFile, map[string]any{"name": "notes.txt", "content": "hi"})
	require.False(t, res.IsError, firstText(res))
	require.Equal(t, "text/plain", res.Content[1].(mcp.ResourceLink).MIMEType)
}

func TestWriteFileRejectsEscapes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	outside := t.TempDir()
	// A symlink inside the workdir that points outside it.
	require.NoError(t, os.Symlink(outside, filepath.Join(b.workdir, "link")))

	for _, name := range []string{
		"../escape.txt",
		"a/../../escape.txt",
		filepath.Join(outside, "abs.txt"),
		"/abs.txt",
		"",
		"link/through-symlink.txt",
	} {
		res := callTool(t, b.client, ToolWriteFile, map[string]any{"name": name, "content": "x"})
		require.True(t, res.IsError, "name %q was accepted: %s", name, firstText(res))
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, entries)
	_, err = os.Stat(filepath.Join(filepath.Dir(b.workdir), "escape.txt"))
	require.True(t, os.IsNotExist(err))
}

// TestStdioChildUsesSpawnerCwdAndEnv checks what a stdio child inherits:
// its working directory (write_file without --workdir) and environment.
func TestStdioChildUsesSpawnerCwdAndEnv(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	c := connectStdio(t, []string{"DEMO_MCP_TEST_MARKER=from-spawner"}, dir)

	res := callTool(t, c, ToolWriteFile, map[string]any{"name": "hello.md", "content": "# hi"})
	require.False(t, res.IsError, firstText(res))
	require.Equal(t, "Wrote "+filepath.Join(dir, "hello.md"), firstText(res))
	require.Equal(t, "text/markdown", res.Content[1].(mcp.ResourceLink).MIMEType)
	_, err = os.Stat(filepath.Join(dir, "hello.md"))
	require.NoError(t, err)

	one := callStructured(t, c, ToolEnv, map[string]any{"name": "DEMO_MCP_TEST_MARKER"})
	require.Equal(t, map[string]any{"env": map[string]any{"DEMO_MCP_TEST_MARKER": "from-spawner"}}, one)

	all := callStructured(t, c, ToolEnv, nil)
	env, ok := all["env"].(map[string]any)
	require.True(t, ok)
	require.Equal(t, "from-spawner", env["DEMO_MCP_TEST_MARKER"])
	require.Equal(t, os.Getenv("PATH"), env["PATH"])

	missing := callStructured(t, c, ToolEnv, map[string]any{"name": "DEMO_MCP_TEST_UNSET_" + strings.Repeat("X", 3)})
	require.Equal(t, map[string]any{"env": map[string]any{}}, missing)
}
