package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
)

// historyLength is the number of events of a workflow's history so far.
func historyLength(t *testing.T, id string) int {
	t.Helper()
	it := temporal.Client().GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		_, err := it.Next()
		require.NoError(t, err)
		n++
	}
	return n
}

// A server's progress message reaches the task's detail and the CLI's
// watch line as it changes, while the task's Temporal history does not grow
// with it.
func TestProgressMessage(t *testing.T) {
	e := startTaskEnv(t)
	id := e.submit(t, "pm", "demo_submit_job", `{"duration_seconds": 8, "progress": true}`)
	e.waitDetail(t, "pm", id, "status_message", "25% done")
	events := historyLength(t, id)
	e.waitDetail(t, "pm", id, "status_message", "50% done")
	e.waitDetail(t, "pm", id, "status_message", "75% done")
	require.Equal(t, events, historyLength(t, id), "a new progress message records nothing in Temporal")

	// The CLI's watch prints a line per message.
	var out, errOut strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, []string{"tasks", "watch", id, "--url", e.m.URL(), "--token", testUserToken, "--thread", "pm"}, noEnv, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), `"75% done"`)
	require.Contains(t, out.String(), "completed")
	d := e.waitStatus(t, "pm", id, "completed")
	require.Nil(t, d["status_message"], "a finished task has no progress message")
}
