package workflows_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/mcpflow/mcpflow/workflows"
)

// historiesDir holds the task workflow's histories recorded from a
// Temporal dev server (TestRecordHistories, `make histories`): one file per
// run, named <shape>_<path>.json, or <shape>_<path>_runN.json for the runs
// of a continue-as-new chain.
var historiesDir = filepath.Join("testdata", "histories")

// shapeNames name the history shapes (TaskConfig.Shape) in file names.
var shapeNames = map[int]string{workflows.ShapeReport: "report", workflows.ShapeLean: "lean", 0: "classic"}

// Every stored history replays on the current TaskWorkflow without a
// non-determinism error: a change to the workflow's commands that running
// tasks (of any shape, on any path) would trip over fails here. The set of
// files is checked against the recorder's paths, and each file's recorded
// input against the shape its name claims.
func TestReplayRecordedHistories(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(historiesDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded histories in %s: run `make histories`", historiesDir)

	have := map[string]bool{}
	for _, f := range files {
		have[filepath.Base(f)] = true
	}
	for _, p := range recPaths {
		for _, shape := range p.shapeList() {
			base := shapeNames[shape] + "_" + p.name
			require.True(t, have[base+".json"] || have[base+"_run1.json"],
				"%s: no recorded history of path %q in shape %s: run `make histories`", historiesDir, p.name, shapeNames[shape])
		}
	}

	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			t.Parallel()
			requireRecordedShape(t, f)
			require.NoError(t, replayHistoryFile(f))
		})
	}
}

// replayHistoryFile replays one stored history on the current
// TaskWorkflow, registered under its name as the worker registers it.
func replayHistoryFile(path string) error {
	r := sdkworker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.TaskWorkflow, workflow.RegisterOptions{Name: workflows.TaskWorkflowName})
	return r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), path)
}

// quietLogger drops the replayer's logs (a failure comes back as an error).
func quietLogger() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// requireRecordedShape checks that the history's workflow input runs the
// shape its file name starts with.
func requireRecordedShape(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, h.GetEvents())
	start := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	require.NotNil(t, start, "the history starts with WorkflowExecutionStarted")
	require.Equal(t, workflows.TaskWorkflowName, start.GetWorkflowType().GetName())
	payloads := start.GetInput().GetPayloads()
	require.Len(t, payloads, 1)
	var in workflows.TaskInput
	require.NoError(t, json.Unmarshal(payloads[0].GetData(), &in))
	name := filepath.Base(path)
	prefix, _, _ := strings.Cut(name, "_")
	require.Equal(t, prefix, shapeNames[in.Config.Shape], "%s records shape %d", name, in.Config.Shape)
}
