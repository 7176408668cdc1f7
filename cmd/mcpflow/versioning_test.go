package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/worker"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// stop sends SIGTERM and waits for a clean exit.
func (p *workerProc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the worker did not stop on SIGTERM:\n%s", p.logs.String())
	}
	require.NoError(t, p.err, "the worker stops cleanly on SIGTERM:\n%s", p.logs.String())
}

// currentBuild is the worker deployment's current build id ("" when none).
func currentBuild(t *testing.T, deployment string) string {
	t.Helper()
	d, err := temporal.Client().WorkerDeploymentClient().GetHandle(deployment).Describe(context.Background(), client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return ""
	}
	if cur := d.Info.RoutingConfig.CurrentVersion; cur != nil {
		return cur.BuildID
	}
	return ""
}

// waitRouted waits until the switch to build reached the task queue: a
// probe task submitted now runs on it. Describe shows a new current version
// at once, while the task queues learn it a little later (seconds on a busy
// machine); a task that changes in between may still take a step on the
// older build.
func waitRouted(t *testing.T, base, thread, build string) {
	t.Helper()
	require.Eventually(t, func() bool {
		id, err := submitTask(base, thread, `{"duration_seconds": 0}`)
		if err != nil {
			return false
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if got, _ := runBuild(t, id); got != "" {
				return got == build
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}, 60*time.Second, 10*time.Millisecond, "new tasks never ran on build %s", build)
}

// requireFinishedOn waits until every task completed with the demo's
// result, its workflow last ran on build, it was submitted once and nothing
// was cancelled.
func requireFinishedOn(t *testing.T, e *taskEnv, thread string, ids, labels []string, build string) {
	t.Helper()
	for _, id := range ids {
		d := e.waitStatus(t, thread, id, "completed")
		require.Equal(t, map[string]any{"answer": 42.0}, d["result"], id)
		require.Nil(t, d["error"], id)
		got, _ := runBuild(t, id)
		require.Equal(t, build, got, "task %s finished on build %s", id, build)
	}
	// One submit per task, never a cancel (the probes of waitRouted are
	// other jobs of the same demo server).
	stats := jobStats(t, e, thread)
	for i, id := range ids {
		job, ok := stats.Jobs[remoteID(t, e.m, id)]
		require.True(t, ok, "task %s tracks a job the demo server knows", id)
		require.Equal(t, 1, job.Submits, "task %s: %+v", id, job)
		require.Equal(t, labels[i], job.Label, "task %s tracks the job it submitted", id)
		require.Equal(t, "completed", job.Status, "task %s", id)
		require.Zero(t, job.CancelCalls, "an upgrade never cancels: task %s", id)
	}
	submitted := 0
	for _, job := range stats.Jobs {
		if strings.HasPrefix(job.Label, strings.TrimRight(labels[0], "0123456789")) {
			submitted++
		}
	}
	require.Equal(t, len(ids), submitted, "one remote job per task")
}

// runBuild is the build id of the deployment version a task workflow's
// latest workflow task ran on, and its versioning behaviour.
func runBuild(t *testing.T, id string) (string, enums.VersioningBehavior) {
	t.Helper()
	d, err := temporal.Client().DescribeWorkflow(context.Background(), id, "")
	require.NoError(t, err)
	vi := d.RawResponse.GetWorkflowExecutionInfo().GetVersioningInfo()
	return vi.GetDeploymentVersion().GetBuildId(), vi.GetBehavior()
}

// TestRollingUpgradeWithWorkerVersioning is a rolling upgrade under Worker
// Versioning, with two builds of the binary whose build ids come from their
// version stamps: tasks started on build A are working when build B's
// worker starts and promotes itself (temporal.promote newest) and A stops
// (SIGTERM). Every task then finishes on B, submitted once and never
// cancelled; a new task runs on B; and a restarted A, older than B, does
// not take the deployment back. A stdio task (activities on the worker
// process's own queue) runs on a versioned worker too.
func TestRollingUpgradeWithWorkerVersioning(t *testing.T) {
	deployment := fmt.Sprintf("e2e-deploy-%d", time.Now().UnixNano())
	buildA := testenv.VersionedBinary(t, "./cmd/mcpflow", "vtest-a")
	buildB := testenv.VersionedBinary(t, "./cmd/mcpflow", "vtest-b")

	url := demoHTTP(t)
	ext := fmt.Sprintf(`{"mcpServers": {
  "demo": {"type": "http", "url": %q, "tool_call_timeout": 10, %s},
  "local": {"type": "stdio", "command": %q, "args": ["--transport", "stdio"], %s}
}}`, url, jobToolset, testenv.Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp"), jobToolset)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, lease_seconds: 5 }\n", ext)
	// writeConfig owns the temporal section: the versioning keys come from
	// the environment, as a deployment may set them.
	env := []string{"MCPFLOW_TEMPORAL_WORKER_VERSIONING=true", "MCPFLOW_TEMPORAL_DEPLOYMENT_NAME=" + deployment}
	s := startMain(t, ModeServe, cfg, nil)
	e := &taskEnv{m: s}

	// Build A is the deployment's first version: "first" promotes it.
	a := startWorkerBinary(t, buildA, cfg, append(env, "MCPFLOW_TEMPORAL_PROMOTE=first")...)
	require.Eventually(t, func() bool { return currentBuild(t, deployment) == "vtest-a" }, 60*time.Second, 100*time.Millisecond,
		"build A never became current:\n%s", a.logs.String())
	require.Contains(t, a.logs.String(), `"build_id":"vtest-a"`)

	labels := drillLabels("upgrade", 8)
	ids := submitMany(t, s.URL(), "tv", labels, func(label string) string {
		return fmt.Sprintf(`{"duration_seconds": 20, "poll_after_seconds": 1, "label": %q}`, label)
	})
	// A stdio task started on A: its job lives in A's subprocess.
	stdio := e.submit(t, "tvs", "local_submit_job", `{"duration_seconds": 20}`)
	e.waitStatus(t, "tvs", stdio, "working")
	for _, id := range append([]string{stdio}, ids...) {
		if id != stdio {
			e.waitStatus(t, "tv", id, "working")
		}
		build, behaviour := runBuild(t, id)
		require.Equal(t, "vtest-a", build, "task %s started on build A", id)
		require.Equal(t, enums.VERSIONING_BEHAVIOR_AUTO_UPGRADE, behaviour)
	}

	// Build B starts and takes over; A stops as a rolling upgrade stops it.
	b := startWorkerBinary(t, buildB, cfg, env...)
	require.Eventually(t, func() bool { return currentBuild(t, deployment) == "vtest-b" }, 60*time.Second, 100*time.Millisecond,
		"build B never became current:\n%s", b.logs.String())
	waitRouted(t, s.URL(), "tv-probe", "vtest-b")
	stats := jobStats(t, e, "tv")
	for _, id := range ids {
		require.NotEqual(t, "completed", stats.Jobs[remoteID(t, s, id)].Status,
			"the upgrade must happen mid-task; raise duration_seconds if this machine is slow")
	}
	// While A still runs, the stdio task's calls still reach A's
	// subprocess: it completes. Which build ran its last step is
	// Temporal's choice, not checked: one CI run saw it on A 16 s after B
	// had become current and a probe had run on B, most likely because A
	// still had the workflow cached (sticky execution).
	d := e.waitStatus(t, "tvs", stdio, "completed")
	require.Equal(t, map[string]any{"answer": 42.0}, d["result"])
	a.stop(t)

	requireFinishedOn(t, e, "tv", ids, labels, "vtest-b")

	// New tasks run on B.
	id := e.submit(t, "tv2", "demo_submit_job", `{"duration_seconds": 0.5}`)
	e.waitStatus(t, "tv2", id, "completed")
	build, _ := runBuild(t, id)
	require.Equal(t, "vtest-b", build)
	// A stdio task's activities run on the worker holding its subprocess
	// (a queue of that process, unversioned): it works under versioning.
	id = e.submit(t, "tv2", "local_submit_job", `{"duration_seconds": 1.5}`)
	require.Equal(t, map[string]any{"answer": 42.0}, e.waitStatus(t, "tv2", id, "completed")["result"])
	build, _ = runBuild(t, id)
	require.Equal(t, "vtest-b", build)

	// A restarted build A is older than B: it polls but is not promoted,
	// and says how to promote it.
	again := startWorkerBinary(t, buildA, cfg, env...)
	require.Eventually(t, func() bool { return strings.Contains(again.logs.String(), "this worker version is not current") },
		60*time.Second, 100*time.Millisecond, "the older build never reported itself not current:\n%s", again.logs.String())
	require.Contains(t, again.logs.String(), "temporal worker deployment set-current-version --deployment-name "+deployment+" --build-id vtest-a")
	require.Equal(t, "vtest-b", currentBuild(t, deployment))
	id = e.submit(t, "tv3", "demo_submit_job", `{"duration_seconds": 0.5}`)
	e.waitStatus(t, "tv3", id, "completed")
	build, _ = runBuild(t, id)
	require.Equal(t, "vtest-b", build, "the current build B runs new tasks while the older A polls")

	// A newer version with temporal.promote never (and its build id from
	// temporal.build_id) waits for the operator.
	c := startWorkerBinary(t, buildB, cfg, append(env, "MCPFLOW_TEMPORAL_BUILD_ID=vtest-c", "MCPFLOW_TEMPORAL_PROMOTE=never")...)
	require.Eventually(t, func() bool { return strings.Contains(c.logs.String(), "this worker version is not current") },
		60*time.Second, 100*time.Millisecond, "the never-promoting build never reported itself not current:\n%s", c.logs.String())
	require.Contains(t, c.logs.String(), `"build_id":"vtest-c"`)
	require.Contains(t, c.logs.String(), "temporal.promote is never")
	require.Equal(t, "vtest-b", currentBuild(t, deployment))
}

// The build id is the binary's stamp unless temporal.build_id names one; a
// binary without a version refuses to run versioned without it.
func TestWorkerVersioningBuildID(t *testing.T) {
	saved := buildVersion
	t.Cleanup(func() { buildVersion = saved })
	sec := config.TemporalSection{DeploymentName: "mcpflow", Promote: config.PromoteNewest}

	buildVersion = "v1.2.3-4-gabcdef"
	v, err := workerVersioning(sec)
	require.NoError(t, err)
	require.Equal(t, worker.Versioning{DeploymentName: "mcpflow", BuildID: "v1.2.3-4-gabcdef", Promote: "newest"}, *v)

	sec.BuildID = "release-7"
	v, err = workerVersioning(sec)
	require.NoError(t, err)
	require.Equal(t, "release-7", v.BuildID, "temporal.build_id wins over the stamp")

	buildVersion, sec.BuildID = "", ""
	if version() != "dev" {
		t.Skipf("this test binary carries a version (%s); the unversioned case needs one without", version())
	}
	_, err = workerVersioning(sec)
	require.ErrorContains(t, err, "set temporal.build_id")
}

// earlierBuild is the last commit before the report shape (cd57495): its
// API starts tasks in the lean shape (TaskConfig.Shape 1) and its workers
// know no Worker Versioning.
const earlierBuild = "d84c3df"

// buildEarlier builds ./cmd/mcpflow of commit rev from this repository's
// history (git archive, no change to the checkout). When the commit is not
// there (a shallow clone) it skips the test, saying how to get it, or
// fails it under MCPFLOW_TEST_REQUIRE_ALL=1 (.ci/run fetches the whole
// history of a shallow clone first).
func buildEarlier(t *testing.T, rev string) string {
	t.Helper()
	root := testenv.RepoRoot()
	if err := exec.Command("git", "-C", root, "cat-file", "-e", rev+"^{commit}").Run(); err != nil {
		shallow, _ := exec.Command("git", "-C", root, "rev-parse", "--is-shallow-repository").Output()
		testenv.MissingDependency(t, "commit %s is not in this clone's history (shallow clone: %s), so the earlier build cannot be made: "+
			"run `git fetch --unshallow` (.ci/run does): %v", rev, strings.TrimSpace(string(shallow)), err)
	}
	dir := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", rev)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	require.NoError(t, err)
	untar.Stdin = pipe
	require.NoError(t, untar.Start())
	require.NoError(t, archive.Run())
	require.NoError(t, untar.Wait())
	bin := filepath.Join(dir, "mcpflow-"+rev)
	build := exec.Command("go", "build", "-ldflags", "-X main.buildVersion="+rev, "-o", bin, "./cmd/mcpflow")
	build.Dir = dir
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build at %s: %s", rev, out)
	return bin
}

// TestUpgradeFromAnEarlierBuild upgrades a real earlier build to this one
// while its tasks run, turning Worker Versioning on at the same time: the
// earlier build (commit earlierBuild, unversioned, its API starting
// lean-shape tasks) runs tasks; this build's versioned worker starts,
// becomes the deployment's first current version, and the earlier process
// stops. Every task finishes on this build from the history the earlier
// one wrote, submitted once, never cancelled.
func TestUpgradeFromAnEarlierBuild(t *testing.T) {
	old := buildEarlier(t, earlierBuild)
	current := testenv.VersionedBinary(t, "./cmd/mcpflow", "vtest-current")
	deployment := fmt.Sprintf("e2e-upgrade-%d", time.Now().UnixNano())

	url := demoHTTP(t)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, lease_seconds: 5 }\n", demoTaskExt(url))
	a := startProc(t, old, ModeDev, cfg)
	base := "http://" + configuredAddr(t, cfg)
	require.Eventually(t, func() bool { code, _ := get(t, base+"/readyz", ""); return code == 200 }, 30*time.Second, 100*time.Millisecond)

	labels := drillLabels("earlier", 6)
	ids := submitMany(t, base, "tu", labels, func(label string) string {
		return fmt.Sprintf(`{"duration_seconds": 20, "poll_after_seconds": 1, "label": %q}`, label)
	})
	for _, id := range ids {
		require.Eventually(t, func() bool {
			_, d := get(t, base+"/api/threads/tu/mcp-tasks/"+id, testUserToken)
			return d["status"] == "working"
		}, 30*time.Second, 100*time.Millisecond)
		require.True(t, bytes.Contains(historyBytes(t, id), []byte(`"Shape":1`)), "the earlier build started task %s in the lean shape", id)
		build, _ := runBuild(t, id)
		require.Empty(t, build, "the earlier build's workers are unversioned")
	}

	// The probe thread exists before this build migrates the database: from
	// migration 00009 on (thread ids per user) an earlier build's API can
	// no longer create threads, only use those that exist
	// (docs/operations.md, "Upgrading to per-user thread ids").
	code, _, out := send(t, "POST", base+"/api/threads", testUserToken, `{"thread_id": "tu-probe"}`)
	require.Equal(t, 201, code, out)
	b := startWorkerBinary(t, current, cfg, "MCPFLOW_TEMPORAL_WORKER_VERSIONING=true", "MCPFLOW_TEMPORAL_DEPLOYMENT_NAME="+deployment)
	require.Eventually(t, func() bool { return currentBuild(t, deployment) == "vtest-current" }, 60*time.Second, 100*time.Millisecond,
		"this build never became current:\n%s", b.logs.String())
	waitRouted(t, base, "tu-probe", "vtest-current")
	a.stop(t)

	// The API is rolled too: this build serves the same database.
	e := &taskEnv{m: waitServing(t, startMain(t, ModeServe, cfg, nil))}
	requireFinishedOn(t, e, "tu", ids, labels, "vtest-current")
	require.NotContains(t, b.logs.String(), "nondeterministic", "this build replays the earlier build's histories")
}

// configuredAddr is server.addr of a config writeConfig wrote.
func configuredAddr(t *testing.T, cfg string) string {
	t.Helper()
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	m := regexp.MustCompile(`server: \{ addr: "([^"]+)"`).FindSubmatch(b)
	require.NotNil(t, m)
	return string(m[1])
}

// waitServing waits until a serve-mode Main answers /readyz.
func waitServing(t *testing.T, m *Main) *Main {
	t.Helper()
	require.Eventually(t, func() bool { code, _ := get(t, m.URL()+"/readyz", ""); return code == 200 }, 30*time.Second, 100*time.Millisecond)
	return m
}
