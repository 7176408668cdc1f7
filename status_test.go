package mcpflow_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

func TestParseStatus(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in      string
		want    mcpflow.Status
		wantErr bool
	}{
		{in: "submitted", want: mcpflow.StatusSubmitted},
		{in: "working", want: mcpflow.StatusWorking},
		{in: "input_required", want: mcpflow.StatusInputRequired},
		{in: "completed", want: mcpflow.StatusCompleted},
		{in: "failed", want: mcpflow.StatusFailed},
		{in: "cancelled", want: mcpflow.StatusCancelled},
		{in: "", wantErr: true},
		{in: "running", wantErr: true},
		{in: "queued", wantErr: true},
		{in: "canceled", wantErr: true},
		{in: "Completed", wantErr: true},
		{in: " completed", wantErr: true},
		{in: "completed\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := mcpflow.ParseStatus(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				require.Contains(t, err.Error(), "unknown MCP task status")
				require.Empty(t, got)
				require.False(t, mcpflow.Status(tt.in).Valid())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.True(t, got.Valid())
		})
	}
}

func TestStatusesLifecycleOrder(t *testing.T) {
	t.Parallel()

	require.Equal(t, []mcpflow.Status{
		mcpflow.StatusSubmitted, mcpflow.StatusWorking, mcpflow.StatusInputRequired,
		mcpflow.StatusCompleted, mcpflow.StatusFailed, mcpflow.StatusCancelled,
	}, mcpflow.Statuses)
}

func TestStatusSets(t *testing.T) {
	t.Parallel()

	tests := []struct {
		status    mcpflow.Status
		pollable  bool
		terminal  bool
		attention bool
	}{
		{status: mcpflow.StatusSubmitted, pollable: true},
		{status: mcpflow.StatusWorking, pollable: true},
		{status: mcpflow.StatusInputRequired, pollable: true, attention: true},
		{status: mcpflow.StatusCompleted, terminal: true, attention: true},
		{status: mcpflow.StatusFailed, terminal: true, attention: true},
		{status: mcpflow.StatusCancelled, terminal: true, attention: true},
		{status: "unknown"},
		{status: ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.pollable, tt.status.IsPollable(), "pollable")
			require.Equal(t, tt.terminal, tt.status.IsTerminal(), "terminal")
			require.Equal(t, tt.attention, tt.status.NeedsAttention(), "attention")

			snap := mcpflow.Snapshot{Status: tt.status}
			require.Equal(t, tt.pollable, snap.IsPollable(), "snapshot pollable")
			require.Equal(t, tt.attention, snap.NeedsAttention(), "snapshot attention")
		})
	}
}

func TestStatusSetsPartitionKnownStatuses(t *testing.T) {
	t.Parallel()

	for _, s := range mcpflow.Statuses {
		require.NotEqual(t, s.IsPollable(), s.IsTerminal(), "%s must be exactly one of pollable or terminal", s)
	}
}
