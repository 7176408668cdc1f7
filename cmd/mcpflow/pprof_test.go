package main

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// The profiler is off unless MCPFLOW_PPROF_ADDR names a loopback address.
func TestPprofListener(t *testing.T) {
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) { return v, k == envPprofAddr && v != "" }
	}
	log := slog.New(slog.DiscardHandler)
	stop, err := startPprof(env(""), log)
	require.NoError(t, err)
	require.Nil(t, stop)

	for _, bad := range []string{"0.0.0.0:6060", ":6060", "192.0.2.1:6060", "nonsense"} {
		_, err := startPprof(env(bad), log)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), envPprofAddr)
	}

	addr := testenv.FreeAddr(t)
	stop, err = startPprof(env(addr), log)
	require.NoError(t, err)
	resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.NotEmpty(t, b)
	stop()
	_, err = http.Get("http://" + addr + "/debug/pprof/cmdline")
	require.Error(t, err, "stopped")
}
