package store

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConcurrentSQLiteMigrationsAcrossProcesses opens one fresh SQLite file
// from several processes at once (serve and worker starting together): the
// migration runs once and every open succeeds.
func TestConcurrentSQLiteMigrationsAcrossProcesses(t *testing.T) {
	if os.Getenv("MCPFLOW_STORE_OPEN_CHILD") != "" {
		db, err := Open(context.Background(), BackendSQLite, os.Getenv("MCPFLOW_STORE_OPEN_CHILD"))
		if err != nil {
			t.Fatal(err)
		}
		_ = db.Close()
		return
	}
	for round := 0; round < 3; round++ {
		path := filepath.Join(t.TempDir(), "shared.db")
		var wg sync.WaitGroup
		errs := make([]error, 6)
		outs := make([][]byte, 6)
		for i := range errs {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				cmd := exec.Command(os.Args[0], "-test.run", "^TestConcurrentSQLiteMigrationsAcrossProcesses$", "-test.count=1")
				cmd.Env = append(os.Environ(), "MCPFLOW_STORE_OPEN_CHILD="+path)
				outs[i], errs[i] = cmd.CombinedOutput()
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "process %d: %s", i, outs[i])
		}
	}
}
