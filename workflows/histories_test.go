package workflows_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/workflows"
)

// historiesDir holds the task workflow's histories recorded from a
// Temporal dev server (TestRecordHistories, `make histories`): one file per
// run, named <shape>_<path>.json, or <shape>_<path>_runN.json for the runs
// of a continue-as-new chain.
var historiesDir = filepath.Join("testdata", "histories")

// shapeNames name the history shapes (TaskConfig.Shape) in file names.
var shapeNames = map[int]string{workflows.ShapeApproval: "approval", workflows.ShapeReport: "report", workflows.ShapeLean: "lean", 0: "classic"}

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

// earlierDir holds histories that earlier builds of mcpflow recorded;
// its manifest.json names the commit of each.
var earlierDir = filepath.Join(historiesDir, "earlier")

// earlierManifest is earlier/manifest.json.
type earlierManifest struct {
	About  string `json:"about"`
	Builds []struct {
		Commit string   `json:"commit"` // the build's full commit id
		Shape  string   `json:"shape"`  // the newest shape at that commit: the one its API started tasks with
		Why    string   `json:"why"`
		Files  []string `json:"files"`
	} `json:"builds"`
}

// Histories that real earlier builds wrote (each commit's own mcpflow
// binary, at a commit where that shape was the newest; see
// earlier/manifest.json) replay on the current TaskWorkflow: tasks an
// older deployment started go on after an upgrade to this code. The
// manifest and the directory agree, every shape has at least two
// histories, and, where the repository's history is there, each commit
// really has that shape as its newest and workflow code other than this.
func TestReplayEarlierBuildHistories(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(earlierDir, "manifest.json"))
	require.NoError(t, err)
	var m earlierManifest
	require.NoError(t, json.Unmarshal(b, &m))
	shapes := map[string]int{}
	for n, name := range shapeNames {
		shapes[name] = n
	}
	commitOf := map[string]string{} // file → commit
	perShape := map[string]int{}
	for _, build := range m.Builds {
		require.Regexp(t, `^[0-9a-f]{40}$`, build.Commit)
		require.Contains(t, shapes, build.Shape, "build %s", build.Commit)
		for _, f := range build.Files {
			require.NotContains(t, commitOf, f, "%s is listed twice", f)
			require.True(t, strings.HasPrefix(f, build.Shape+"_"), "%s of build %s is named after its shape %s", f, build.Commit, build.Shape)
			commitOf[f] = build.Commit
			perShape[build.Shape]++
		}
	}
	newestEarlier := 0
	for _, build := range m.Builds {
		newestEarlier = max(newestEarlier, shapes[build.Shape])
	}
	for name, shape := range shapes {
		if shape > newestEarlier {
			// No earlier build has run it with other workflow code yet
			// (ShapeApproval: the code is unchanged since it was added);
			// its recorded histories replay in TestReplayRecordedHistories.
			continue
		}
		require.GreaterOrEqual(t, perShape[name], 2, "at least two histories of the %s shape from an earlier build", name)
	}
	files, err := filepath.Glob(filepath.Join(earlierDir, "*.json"))
	require.NoError(t, err)
	var stored []string
	for _, f := range files {
		if base := filepath.Base(f); base != "manifest.json" {
			stored = append(stored, base)
		}
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(commitOf)), stored, "%s: the files and the manifest agree", earlierDir)

	for _, build := range m.Builds {
		t.Run("commit_"+build.Commit[:7], func(t *testing.T) {
			t.Parallel()
			requireEarlierBuild(t, build.Commit, shapes[build.Shape])
		})
	}
	for _, f := range stored {
		t.Run(strings.TrimSuffix(f, ".json"), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(earlierDir, f)
			requireRecordedShape(t, path)
			require.NoError(t, replayHistoryFile(path), "%s, recorded by commit %s, replays on this code", f, commitOf[f])
		})
	}
}

// shapeConst finds the shape constants in workflows/types.go.
var shapeConst = regexp.MustCompile(`\bShape(?:Lean|Report|Approval)\s*=\s*(\d+)`)

// requireEarlierBuild checks, from the repository's history, that shape
// is the newest history shape of commit's workflows/types.go and that the
// commit's workflow code (workflows/*.go but the tests) differs from this
// checkout's. Without the commit (a shallow clone) it is a missing test
// dependency.
func requireEarlierBuild(t *testing.T, commit string, shape int) {
	t.Helper()
	root := testenv.RepoRoot()
	if err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		testenv.MissingDependency(t, "commit %s is not in this clone's history (a shallow clone?): run `git fetch --unshallow` (.ci/run does) to check where the earlier-build histories come from: %v", commit, err)
	}
	types, err := exec.Command("git", "-C", root, "show", commit+":workflows/types.go").Output()
	require.NoError(t, err)
	newest := 0
	for _, m := range shapeConst.FindAllSubmatch(types, -1) {
		n, err := strconv.Atoi(string(m[1]))
		require.NoError(t, err)
		newest = max(newest, n)
	}
	require.Equal(t, shape, newest, "the newest shape at %s", commit)
	diff := exec.Command("git", "-C", root, "diff", "--quiet", commit, "--",
		":(glob)workflows/*.go", ":(exclude,glob)workflows/*_test.go")
	err = diff.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit) && exit.ExitCode() == 1,
		"the workflow code of %s differs from this checkout's (git diff --quiet: %v)", commit, err)
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
