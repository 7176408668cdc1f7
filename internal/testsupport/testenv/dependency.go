package testenv

import (
	"fmt"
	"os"
	"testing"
)

// RequireAllEnv names the environment variable that turns a missing test
// dependency from a skip into a failure. CI (.ci/run) sets it to 1, so a
// run that could not test everything does not pass; locally it is unset
// and such tests skip, and `make test` lists them at the end.
const RequireAllEnv = "MCPFLOW_TEST_REQUIRE_ALL"

// MissingDependencyTag starts the message of every test MissingDependency
// skips or fails; `make test` collects the skips by it.
const MissingDependencyTag = "missing test dependency"

// RequireAll reports whether MCPFLOW_TEST_REQUIRE_ALL=1: a missing
// dependency fails the test instead of skipping it.
func RequireAll() bool { return os.Getenv(RequireAllEnv) == "1" }

// MissingDependency ends t because something the test needs from its
// environment is not there (node or npm, the npm test packages, PostgreSQL,
// the Temporal CLI, a commit of the repository's history, a command):
// reason says what is missing and how to get it. It skips t, or, with
// MCPFLOW_TEST_REQUIRE_ALL=1, fails it with the same reason. Both messages
// read "missing test dependency [<test name>]: <reason>".
//
// A deliberate opt-out (-short, a recorder that runs only when asked) is
// not a missing dependency: those tests call t.Skip themselves.
func MissingDependency(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf("%s [%s]: %s", MissingDependencyTag, t.Name(), fmt.Sprintf(format, args...))
	if RequireAll() {
		t.Fatalf("%s (%s=1: a missing dependency fails the run)", msg, RequireAllEnv)
	}
	t.Skip(msg)
}
