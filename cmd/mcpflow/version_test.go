package main

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/stretchr/testify/require"
)

// mcpflow version and --version print the version make build stamps, Go's
// version and the platform; the usage lists the command.
func TestCLIVersion(t *testing.T) {
	saved := buildVersion
	t.Cleanup(func() { buildVersion = saved })
	buildVersion = "v1.2.3-4-gabcdef"
	want := "mcpflow v1.2.3-4-gabcdef " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"

	for _, arg := range []string{"version", "--version"} {
		r := runWith(t.Context(), noEnv, arg)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, want, r.stdout, arg)
		require.Empty(t, r.stderr)
	}
	r := runWith(t.Context(), noEnv, "version", "extra")
	require.Equal(t, 2, r.code)
	require.Equal(t, "mcpflow: version takes no arguments (got \"extra\")\n", r.stderr)

	r = runWith(t.Context(), noEnv, "--help")
	require.Equal(t, 0, r.code)
	require.Regexp(t, `(?m)^  version  print mcpflow's version`, r.stdout)
}

// A binary built as make build builds it (-ldflags "-X
// main.buildVersion=...") prints its stamp with mcpflow version, and its
// MCP endpoint answers initialize with the same stamp as
// serverInfo.version, not the "(devel)" of an unreleased module.
func TestVersionStampReachesTheMCPEndpoint(t *testing.T) {
	const stamp = "vtest-stamp-1a2b3c"
	bin := testenv.VersionedBinary(t, "./cmd/mcpflow", stamp)

	out, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	require.Equal(t, "mcpflow "+stamp+" "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n", string(out))

	cfg := writeConfig(t, "", "")
	base := "http://" + configuredAddr(t, cfg)
	serve := exec.Command(bin, ModeServe, "--config", cfg)
	serve.Env = os.Environ()
	logs := &testenv.SyncBuffer{}
	serve.Stdout, serve.Stderr = logs, logs
	require.NoError(t, serve.Start())
	exited := make(chan struct{})
	go func() {
		_ = serve.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = serve.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = serve.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("mcpflow serve output:\n%s", logs.String())
		}
	})
	require.Eventually(t, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		a, err := sendRPC(base, "GET", rpc{path: "/healthz"})
		return err == nil && a.status == 200
	}, 30*time.Second, 100*time.Millisecond)
	select {
	case <-exited:
		t.Fatalf("mcpflow serve exited at start-up:\n%s", logs.String())
	default:
	}

	a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/version", token: testUserToken, body: initBody})
	require.Equal(t, 200, a.status, a.raw)
	info, ok := a.result()["serverInfo"].(map[string]any)
	require.True(t, ok, a.raw)
	require.Equal(t, map[string]any{"name": "mcpflow", "version": stamp}, info)
}
