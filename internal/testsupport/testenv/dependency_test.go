package testenv

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// childEnv marks a run of this test binary by TestMissingDependency.
const childEnv = "MCPFLOW_TESTENV_DEPENDENCY_CHILD"

// TestMissingDependencyChild is the test TestMissingDependency runs in a
// child process; on its own it does nothing.
func TestMissingDependencyChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		return
	}
	MissingDependency(t, "the frobnicator is not installed: run `make %s`", "frob")
	t.Log("reached after MissingDependency")
}

// MissingDependency skips a test (the run passes) unless
// MCPFLOW_TEST_REQUIRE_ALL=1, where it fails it (the run fails), with the
// same message either way; the test never goes on past it. Run as a real
// `go test` child process, so the outcome is go test's own.
func TestMissingDependency(t *testing.T) {
	t.Parallel()
	want := "missing test dependency [TestMissingDependencyChild]: the frobnicator is not installed: run `make frob`"
	run := func(t *testing.T, requireAll string) (string, int) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingDependencyChild$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"=1", RequireAllEnv+"="+requireAll)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		require.NoError(t, err, "%s", out)
		return string(out), 0
	}

	for _, v := range []string{"", "0", "yes"} {
		out, code := run(t, v)
		require.Equal(t, 0, code, "%s=%q skips:\n%s", RequireAllEnv, v, out)
		require.Contains(t, out, "--- SKIP: TestMissingDependencyChild", out)
		require.Contains(t, out, want, out)
		require.NotContains(t, out, "reached after", out)
	}

	out, code := run(t, "1")
	require.Equal(t, 1, code, "%s=1 fails the run:\n%s", RequireAllEnv, out)
	require.Contains(t, out, "--- FAIL: TestMissingDependencyChild", out)
	require.Contains(t, out, want+" (MCPFLOW_TEST_REQUIRE_ALL=1: a missing dependency fails the run)", out)
	require.NotContains(t, out, "reached after", out)
	require.False(t, strings.Contains(out, "--- SKIP"), out)
}
