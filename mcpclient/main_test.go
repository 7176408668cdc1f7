package mcpclient

import (
	"testing"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// TestMain fails the run when a goroutine outlives the tests; idle
// keep-alive connections of the shared HTTP transport are closed first.
func TestMain(m *testing.M) { testenv.Main(m, session.CloseIdleConnections) }
