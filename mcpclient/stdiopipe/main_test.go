package stdiopipe_test

import (
	"testing"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// TestMain fails the run when a goroutine outlives the tests.
func TestMain(m *testing.M) { testenv.Main(m) }
