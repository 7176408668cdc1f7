package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/workflows"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
)

var temporal *testenv.Temporal

func TestMain(m *testing.M) {
	var err error
	// No search attributes on the command line: mcpflow must register them.
	temporal, err = testenv.StartTemporal(context.Background(), testenv.TemporalOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = temporal.Stop()
	testenv.CleanupBinaries()
	os.Exit(code)
}

const (
	testAdminToken = "e2e-admin-token"
	testUserToken  = "e2e-user-token"
)

// writeConfig writes a config.yaml (and extensions_config.json when ext is
// not empty) into a fresh directory and returns the config path.
func writeConfig(t *testing.T, extra string, ext string) string {
	t.Helper()
	return writeConfigUsers(t, fmt.Sprintf("{ id: alice, token: %q }", testUserToken), extra, ext)
}

// writeConfigUsers is writeConfig with the static users given (YAML flow
// maps, comma-separated) instead of alice alone.
func writeConfigUsers(t *testing.T, users, extra, ext string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`server: { addr: %q, worker_addr: %q, shutdown_timeout_seconds: 2 }
database: { backend: sqlite, dsn: mcpflow.db }
temporal: { address: %q, namespace: default, task_queue: e2e-%d }
auth:
  admin_tokens: [%q]
  users: [ %s ]
%s`, testenv.FreeAddr(t), testenv.FreeAddr(t), temporal.HostPort, time.Now().UnixNano(), testAdminToken, users, extra)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600))
	if ext != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "extensions_config.json"), []byte(ext), 0o600))
	}
	return filepath.Join(dir, "config.yaml")
}

func startMain(t *testing.T, mode, configPath string, logs io.Writer) *Main {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	m := &Main{Mode: mode, ConfigPath: configPath, Env: noEnv,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	require.NoError(t, m.Open(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	return m
}

func noEnv(string) (string, bool) { return "", false }

func get(t *testing.T, url, token string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestDevModeEndToEnd(t *testing.T) {
	logs := &testenv.SyncBuffer{}
	m := startMain(t, ModeDev, writeConfig(t, "", `{"mcpServers": {"demo": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}`), logs)

	require.Eventually(t, func() bool {
		code, _ := get(t, m.URL()+"/readyz", "")
		return code == 200
	}, 30*time.Second, 100*time.Millisecond, "readyz never became 200")
	_, body := get(t, m.URL()+"/readyz", "")
	require.Equal(t, map[string]any{"database": "ok", "temporal": "ok"}, body["checks"])

	code, body := get(t, m.URL()+"/api/features", "")
	require.Equal(t, 200, code)
	require.Equal(t, map[string]any{"mcp_tasks": map[string]any{"enabled": false}}, body)

	code, _ = get(t, m.URL()+"/api/threads/t1", "")
	require.Equal(t, 401, code)
	req, _ := http.NewRequest("POST", m.URL()+"/api/threads", strings.NewReader(`{"thread_id":"t1"}`))
	req.Header.Set("Authorization", "Bearer "+testUserToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 201, resp.StatusCode)
	code, body = get(t, m.URL()+"/api/threads/t1", testUserToken)
	require.Equal(t, 200, code)
	require.Equal(t, "t1", body["thread_id"])
	code, _ = get(t, m.URL()+"/api/threads/t1", testAdminToken)
	require.Equal(t, 403, code)

	// The worker registered the custom search attributes on the namespace.
	require.Eventually(t, func() bool {
		resp, err := temporal.Client().OperatorService().ListSearchAttributes(context.Background(),
			&operatorservice.ListSearchAttributesRequest{Namespace: "default"})
		if err != nil {
			return false
		}
		for _, n := range workflows.SearchAttributeNames {
			if _, ok := resp.GetCustomAttributes()[n]; !ok {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond)

	require.NotContains(t, logs.String(), testUserToken)
	require.NotContains(t, logs.String(), testAdminToken)
}

func TestServeAndWorkerModes(t *testing.T) {
	cfg := writeConfig(t, "", "")
	s := startMain(t, ModeServe, cfg, nil)
	require.NotEmpty(t, s.URL())
	require.Nil(t, s.workerDone, "serve runs no worker")
	// The same config on the same host: the worker's own listener (health,
	// readiness, metrics) is on server.worker_addr, beside serve's.
	w := startMain(t, ModeWorker, cfg, nil)
	require.Eventually(t, func() bool {
		code, _ := get(t, s.URL()+"/readyz", "")
		return code == 200
	}, 30*time.Second, 100*time.Millisecond)
	code, _ := get(t, w.URL()+"/healthz", "")
	require.Equal(t, 200, code)
	code, _ = get(t, w.URL()+"/api/threads/t1", testUserToken)
	require.Equal(t, 404, code, "a worker serves no user API")
	code, _ = get(t, w.URL()+"/openapi.json", "")
	require.Equal(t, 404, code, "nor its description")
	resp, err := http.Get(w.URL() + "/metrics")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}

func TestPostgresBackend(t *testing.T) {
	dsn := testenv.PostgresURL(t)
	cfg := writeConfig(t, "", "")
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	b = bytes.Replace(b, []byte("database: { backend: sqlite, dsn: mcpflow.db }"),
		[]byte(fmt.Sprintf("database: { backend: postgres, dsn: %q }", dsn)), 1)
	require.NoError(t, os.WriteFile(cfg, b, 0o600))
	pg := startMain(t, ModeServe, cfg, nil)
	require.Equal(t, "postgres", pg.DB.Backend())
	require.Eventually(t, func() bool {
		code, _ := get(t, pg.URL()+"/readyz", "")
		return code == 200
	}, 30*time.Second, 100*time.Millisecond)
}

func TestGracefulShutdown(t *testing.T) {
	m := startMain(t, ModeServe, writeConfig(t, "", ""), nil)
	started := make(chan string, 2)
	cancelled := make(chan struct{})
	admin := m.API.Admin()
	admin.GET("/test-slow", func(c *gin.Context) {
		started <- "slow"
		time.Sleep(300 * time.Millisecond)
		c.JSON(200, gin.H{"done": true})
	})
	admin.GET("/test-hung", func(c *gin.Context) {
		started <- "hung"
		<-c.Request.Context().Done() // a hung upstream call that honours ctx
		close(cancelled)
		c.Status(499)
	})
	call := func(path string) chan int {
		ch := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest("GET", m.URL()+path, nil)
			req.Header.Set("Authorization", "Bearer "+testAdminToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				ch <- -1
				return
			}
			resp.Body.Close()
			ch <- resp.StatusCode
		}()
		return ch
	}
	slow, hung := call("/api/test-slow"), call("/api/test-hung")
	<-started
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = m.Close(ctx)
	require.Equal(t, 200, <-slow, "an in-flight request finishes during shutdown")
	select {
	case <-cancelled:
	default:
		t.Fatal("the hung request's context was not cancelled within the shutdown budget")
	}
	<-hung
	_, err := http.Get(m.URL() + "/healthz")
	require.Error(t, err, "the listener is closed")
}

func TestBrokenConfigExitsWithOneLine(t *testing.T) {
	okExt := `{"mcpServers": {"demo": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}`
	cases := []struct {
		name, yaml, ext, want string
	}{
		{"bad yaml value", "mcp_tasks: { poll_interval_seconds: 0 }\n", okExt, "config.yaml: mcp_tasks.poll_interval_seconds"},
		{"unknown yaml key", "mcp_taskz: {}\n", okExt, "config.yaml: mcp_taskz"},
		{"bad json", "", `{"mcpServers": {`, "extensions_config.json is not valid JSON"},
		{"unknown transport", "", `{"mcpServers": {"x": {"type": "websocket", "url": "http://h"}}}`, "extensions_config.json: mcpServers.x.type"},
		{"NaN timeout", "", `{"mcpServers": {"x": {"type": "http", "url": "http://h", "tool_call_timeout": NaN}}}`, "extensions_config.json: mcpServers.x.tool_call_timeout"},
		{"task tool in two roles", "", `{"mcpServers": {"x": {"type": "http", "url": "http://h", "task_toolsets": [
			{"name": "a", "submit_tool": "s", "status_tool": "st", "cancel_tool": "c"},
			{"name": "b", "submit_tool": "st", "status_tool": "st2", "cancel_tool": "c2"}]}}}`, "must be unique across task_toolsets and roles"},
		{"missing explicit extensions file", "extensions_config: nope.json\n", "", "nope.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, tc.yaml, tc.ext)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"serve", "--config", cfg}, noEnv, &stdout, &stderr)
			require.Equal(t, 2, code, stderr.String())
			out := stderr.String()
			require.Equal(t, 1, strings.Count(out, "\n"), "exactly one line: %q", out)
			require.True(t, strings.HasPrefix(out, "mcpflow: "), out)
			require.Contains(t, out, tc.want)
			require.NotContains(t, out, "panic")
			require.NotContains(t, out, "goroutine")
			require.NotContains(t, out, testAdminToken)
		})
	}
}

func TestUsageErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), nil, noEnv, &stdout, &stderr))
	require.Contains(t, stdout.String(), "usage: mcpflow")
	require.Equal(t, 2, run(context.Background(), []string{"frobnicate"}, noEnv, &stdout, &stderr))
	require.Equal(t, 2, run(context.Background(), []string{"serve", "--log-format", "xml"}, noEnv, &stdout, &stderr))
	require.Equal(t, 0, run(context.Background(), []string{"--help"}, noEnv, &stdout, &stderr))
}

// TestBinarySignals runs the real binary and stops it with SIGINT and
// SIGTERM: it must exit 0, promptly, and leave nothing running.
func TestBinarySignals(t *testing.T) {
	bin := testenv.Binary(t, "./cmd/mcpflow")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cfg := writeConfig(t, "", "")
		cmd := exec.Command(bin, "dev", "--config", cfg, "--log-format", "json")
		stderr := &testenv.SyncBuffer{}
		cmd.Stderr = stderr
		require.NoError(t, cmd.Start())
		require.Eventually(t, func() bool {
			return strings.Contains(stderr.String(), `"msg":"worker polling"`)
		}, 30*time.Second, 50*time.Millisecond, stderr.String())
		require.NoError(t, cmd.Process.Signal(sig))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			require.NoError(t, err, "exit status after %v; stderr: %s", sig, stderr.String())
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("mcpflow did not stop after %v", sig)
		}
		require.Contains(t, stderr.String(), `"msg":"shutting down","signal":"`+map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[sig]+`"`)
		require.Contains(t, stderr.String(), `"msg":"stopped"`)
	}
}

func TestHealthcheckCommand(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			w.WriteHeader(503)
		}
	}))
	defer ok.Close()
	var out bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"healthcheck", ok.URL + "/readyz"}, noEnv, &out, &out))
	require.Equal(t, 1, run(context.Background(), []string{"healthcheck", ok.URL + "/down"}, noEnv, &out, &out))
	require.Contains(t, out.String(), "answered 503")
	require.Equal(t, 1, run(context.Background(), []string{"healthcheck", "http://" + testenv.FreeAddr(t) + "/readyz"}, noEnv, &out, &out))
}
