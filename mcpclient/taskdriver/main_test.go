package taskdriver

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// TestMain removes the binaries the tests built and fails the run when a
// goroutine outlives the tests. Idle keep-alive connections of the shared
// HTTP transport are closed first: their read/write loops are not leaks.
func TestMain(m *testing.M) {
	code := m.Run()
	session.CloseIdleConnections()
	testenv.CleanupBinaries()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
