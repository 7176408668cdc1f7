package taskdriver

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestDriversRouter pins the dispatch on driver data.
func TestDriversRouter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, err := (&Drivers{}).Status(ctx, mcpflow.TaskReference{DriverData: map[string]string{mcpflow.DriverDataNativeTool: "x"}})
	require.True(t, mcpflow.IsProtocolError(err))
	require.ErrorContains(t, err, "no native MCP task driver")
	_, err = (&Drivers{}).Cancel(ctx, mcpflow.TaskReference{DriverData: map[string]string{mcpflow.DriverDataStatusTool: "s"}})
	require.ErrorContains(t, err, "no ordinary MCP task driver")
}
