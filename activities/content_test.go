package activities_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
)

// TestFingerprintContent: a completed native task's content blocks are
// part of its fingerprint (the MCP endpoint shows them), and a snapshot
// without them keeps the fingerprint older workers computed, which
// workflow histories hold.
func TestFingerprintContent(t *testing.T) {
	t.Parallel()
	plain := mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"a": "b"}}
	// What a worker before content blocks encoded for this snapshot.
	old := sha256.Sum256([]byte(`{"status":"completed","result":{"a":"b"}}`))
	require.Equal(t, hex.EncodeToString(old[:]), activities.Fingerprint(plain), "the fingerprint of a snapshot without blocks is unchanged")

	withBlocks := plain
	withBlocks.Content = json.RawMessage(`[{"type":"text","text":"b"}]`)
	withBlocks.ResultStructured = true
	other := withBlocks
	other.Content = json.RawMessage(`[{"type":"text","text":"c"}]`)
	unflagged := withBlocks
	unflagged.ResultStructured = false
	fps := map[string]bool{}
	for _, s := range []mcpflow.Snapshot{plain, withBlocks, other, unflagged} {
		fps[activities.Fingerprint(s)] = true
	}
	require.Len(t, fps, 4, "each is a different thing to show")
}

// TestPollWritesContent: a poll that finds the native task completed
// bounds its content blocks with the result's bound and writes them to the
// row with the flag; blocks too large for the bound are dropped and the
// task still completes, with its result.
func TestPollWritesContent(t *testing.T) {
	t.Parallel()
	blocks := `[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"text","text":"a chart"}]`
	for _, tt := range []struct {
		name       string
		bounds     mcpflow.Bounds
		content    string
		wantBlocks string
	}{
		{name: "kept", bounds: mcpflow.DefaultBounds(), content: " " + blocks + "\n", wantBlocks: blocks},
		{name: "too large: dropped", bounds: mcpflow.Bounds{MaxResultBytes: 1024, ResultPreviewMaxChars: 64},
			content: `[{"type":"text","text":"` + strings.Repeat("z", 2000) + `"}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newFence(t)
			snap := mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"points": json.Number("3")},
				Content: json.RawMessage(tt.content), ResultStructured: true}
			a := &activities.Activities{Driver: &statusDriver{snap: snap}, Tasks: b.db, Threads: b.db, Events: b.db}
			in := b.in
			in.Bounds = tt.bounds
			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.RegisterActivity(a)
			val, err := env.ExecuteActivity(a.Poll, in)
			require.NoError(t, err)
			var out activities.PollOutput
			require.NoError(t, val.Get(&out))
			require.NotNil(t, out.Snapshot)
			require.Equal(t, activities.Fingerprint(*out.Snapshot), out.Fingerprint)

			got, err := b.db.GetTask(context.Background(), b.task.ID)
			require.NoError(t, err)
			require.Equal(t, mcpflow.StatusCompleted, got.Status)
			require.Equal(t, map[string]any{"points": json.Number("3")}, got.Result, "the result is as before")
			if tt.wantBlocks == "" {
				require.Nil(t, out.Snapshot.Content)
				require.Nil(t, got.Content)
				require.False(t, got.ResultStructured)
				return
			}
			require.Equal(t, tt.wantBlocks, string(out.Snapshot.Content))
			require.Equal(t, tt.wantBlocks, string(got.Content))
			require.True(t, got.ResultStructured)
		})
	}
}
