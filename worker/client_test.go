package worker

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/workflows"
)

func toolText(t *testing.T, r *mcpflow.ToolResult) string {
	t.Helper()
	require.True(t, r.IsError)
	require.Len(t, r.Content, 1)
	var c mcp.TextContent
	require.NoError(t, json.Unmarshal(r.Content[0], &c))
	return c.Text
}

// What the agent sees of a failed submit: the messages of known failures,
// a fixed text for anything else inside mcpflow (never its details), 409
// for a duplicate handle, 503 without Temporal, 504 when the request ended.
func TestSubmitError(t *testing.T) {
	t.Parallel()
	live := context.Background()
	for _, typ := range []string{workflows.ErrTypeSubmit, workflows.ErrTypeProtocol, workflows.ErrTypePersist, workflows.ErrTypeSubmitUnknown} {
		res, err := submitError(temporal.NewNonRetryableApplicationError("shown: "+typ, typ, errors.New("hidden cause")), live)
		require.NoError(t, err)
		require.Equal(t, "shown: "+typ, toolText(t, res))
	}

	res, err := submitError(temporal.NewApplicationError("record that the submit is being sent: rpc error: code = Unavailable desc = 10.0.0.3:7233", "wrapError"), live)
	require.NoError(t, err)
	require.Equal(t, "mcpflow could not run this submit (an internal error; the worker's log has the details)", toolText(t, res))

	_, err = submitError(temporal.NewNonRetryableApplicationError("Remote MCP task is already tracked", workflows.ErrTypeDuplicate, nil), live)
	require.Equal(t, mcpflow.EConflict, mcpflow.ErrorCode(err))

	res, err = submitError(temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil), live)
	require.NoError(t, err)
	require.Contains(t, toolText(t, res), "the remote task may have started, but it is not tracked")

	_, err = submitError(errors.New("connection refused"), live)
	require.Equal(t, mcpflow.EUnavailable, mcpflow.ErrorCode(err))
	require.Equal(t, "the durable task runtime is unavailable", mcpflow.ErrorMessage(err))

	done, cancel := context.WithCancel(live)
	cancel()
	_, err = submitError(errors.New("context canceled"), done)
	require.Equal(t, mcpflow.ETimeout, mcpflow.ErrorCode(err))
}
