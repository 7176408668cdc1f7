package deployments_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// make dev checks its ports before it starts anything: a port another
// program holds, or one given to two settings, stops it with the setting
// named, and no process is started.
func TestDevChecksItsPorts(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer held.Close()
	taken := strconv.Itoa(held.Addr().(*net.TCPAddr).Port)
	for _, tc := range []struct {
		name     string
		api, ui  string
		want     string
		wantCode int
	}{
		{"taken", taken, freePort(t), "make dev: port " + taken + " (DEV_API_PORT, mcpflow's API) is taken by another program; choose a free port: make dev DEV_API_PORT=<port>", 2},
		{"twice", "18081", "18081", "make dev: DEV_API_PORT and DEV_UI_PORT are both 18081: give each its own port", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := filepath.Join(t.TempDir(), ".dev")
			cmd := exec.Command("bash", "dev/run.sh")
			cmd.Env = hermeticEnv("DEV_API_PORT="+tc.api, "DEV_UI_PORT="+tc.ui, "DEV_TEMPORAL_PORT="+freePort(t),
				"DEV_DEMO_PORT="+freePort(t), "DEV_DIR="+dev)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "run.sh must fail: %v\n%s", err, out)
			require.Equal(t, tc.wantCode, ee.ExitCode(), "%s", out)
			require.Contains(t, string(out), tc.want)
			_, err = os.Stat(dev)
			require.True(t, os.IsNotExist(err), "nothing was started or written")
		})
	}
}
