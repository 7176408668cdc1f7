package config

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A stdio command written as a $VAR placeholder is refused with the
// placeholder named (what was written) and never its value, which may be a
// path or a secret; the same program written out by name and allowlisted
// passes. This is make dev's "files" server before and after issue 17.
func TestLaunchPolicyNamesAPlaceholderCommand(t *testing.T) {
	t.Parallel()
	const value = "/home/dev/mcpflow/bin/demo-mcp-SECRET"
	env := mapEnv(map[string]string{"DEMO_MCP_BIN": value, EnvStdioAllowlist: "demo-mcp"})
	policy := NewLaunchPolicy(env)
	server := func(command string) *Object {
		var o Object
		require.NoError(t, o.UnmarshalJSON([]byte(`{"type": "stdio", "command": "`+command+`", "args": ["--transport", "stdio"]}`)))
		return &o
	}

	err := policy.Check("files", server("$DEMO_MCP_BIN"), env)
	var pe *PolicyError
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, "MCP server 'files' command '$DEMO_MCP_BIN' is a $VAR placeholder; the stdio launch policy needs the command "+
		"written out as a single executable name on the allowlist (demo-mcp, npx, uvx; MCPFLOW_MCP_STDIO_COMMAND_ALLOWLIST extends it).", pe.Message)
	require.NotContains(t, pe.Message, value)

	// Unset, it is still named.
	err = NewLaunchPolicy(nil).Check("files", server("$UNSET_BIN"), noEnv)
	require.ErrorContains(t, err, "command '$UNSET_BIN' is a $VAR placeholder")

	require.NoError(t, policy.Check("files", server("demo-mcp"), env))
	require.ErrorContains(t, NewLaunchPolicy(nil).Check("files", server("demo-mcp"), noEnv), "uses disallowed stdio command 'demo-mcp'")
}
