package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/worker"
	"github.com/mcpflow/mcpflow/workflows"
)

// TestEnsureApprovalAttributes: an API whose workers have not registered
// the custom search attributes yet (a new namespace here) registers them
// at its first approval, before it starts the approval's workflow.
func TestEnsureApprovalAttributes(t *testing.T) {
	if _, err := testenv.TemporalCLIPath(); err != nil {
		testenv.MissingDependency(t, "%v", err)
	}
	srv := testenv.StartTemporalT(t, testenv.TemporalOptions{})
	ns := fmt.Sprintf("approvals-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := srv.Client().WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
	require.NoError(t, err)
	c, err := client.Dial(client.Options{HostPort: srv.HostPort, Namespace: ns})
	require.NoError(t, err)
	defer c.Close()
	custom := func() map[string]bool {
		resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
		require.NoError(t, err)
		have := map[string]bool{}
		for name := range resp.GetCustomAttributes() {
			have[name] = true
		}
		return have
	}
	require.False(t, custom()["McpApprovers"], "a new namespace has none")

	tc := &worker.TaskClient{Client: c, Namespace: ns}
	worker.EnsureApprovalAttributes(ctx, tc)
	have := custom()
	for _, name := range workflows.SearchAttributeNames {
		require.True(t, have[name], "%s registered: %v", name, have)
	}
}
