package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/worker"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// withTemporalSection replaces the temporal section writeConfig wrote.
func withTemporalSection(t *testing.T, cfg, section string) {
	t.Helper()
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	re := regexp.MustCompile(`(?m)^temporal: \{[^}]*\}$`)
	require.True(t, re.Match(b))
	out := re.ReplaceAllLiteral(b, []byte("temporal: "+section))
	require.NoError(t, os.WriteFile(cfg, out, 0o600))
}

// runTaskThrough starts mcpflow dev with cfg and env, runs one durable task
// to completion and returns the process's logs.
func runTaskThrough(t *testing.T, cfg string, env map[string]string) string {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	m := &Main{Mode: ModeDev, ConfigPath: cfg, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	require.NoError(t, m.Open(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	e := &taskEnv{m: waitReady(t, m)}
	id := e.submit(t, "tls", "demo_submit_job", `{"duration_seconds": 1}`)
	require.Equal(t, map[string]any{"answer": 42.0}, e.waitStatus(t, "tls", id, "completed")["result"])
	return logs.String()
}

// TestTemporalTLS runs durable tasks through a TLS-terminating proxy in
// front of the dev server, with the connection configured from each of the
// three places mcpflow reads it: config.yaml keys (TLS with a private CA and
// a server name), the TEMPORAL_* variables (mTLS) and a temporal.toml
// profile written by the temporal CLI (an API key). No secret reaches the
// logs; a client without the certificate the proxy requires cannot connect.
func TestTemporalTLS(t *testing.T) {
	files := testenv.NewTLSFiles(t)
	url := demoHTTP(t)
	ext := demoTaskExt(url)
	const tasks = "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n"
	noFile := map[string]string{"TEMPORAL_CONFIG_FILE": filepath.Join(t.TempDir(), "absent.toml")}

	t.Run("TLS from config.yaml", func(t *testing.T) {
		p := testenv.StartTLSProxy(t, testenv.TLSProxyOptions{Backend: temporal.HostPort, Files: files})
		cfg := writeConfig(t, tasks, ext)
		// localhost is not a name of the certificate: tls_server_name must be
		// applied for the handshake to succeed.
		withTemporalSection(t, cfg, fmt.Sprintf(`{ address: %q, task_queue: e2e-tls-%d, tls_ca_file: %q, tls_server_name: %s }`,
			localhost(p.Addr), time.Now().UnixNano(), files.CA, testenv.TLSServerName))
		logs := runTaskThrough(t, cfg, noFile)
		require.Positive(t, p.Requests())
		require.Contains(t, logs, "temporal_tls=true temporal_auth=none")
	})

	t.Run("mTLS from TEMPORAL_* variables", func(t *testing.T) {
		p := testenv.StartTLSProxy(t, testenv.TLSProxyOptions{Backend: temporal.HostPort, Files: files, RequireClientCert: true})
		cfg := writeConfig(t, tasks, ext)
		withTemporalSection(t, cfg, fmt.Sprintf(`{ task_queue: e2e-mtls-%d }`, time.Now().UnixNano()))
		env := map[string]string{
			"TEMPORAL_CONFIG_FILE":             noFile["TEMPORAL_CONFIG_FILE"],
			"TEMPORAL_ADDRESS":                 localhost(p.Addr),
			"TEMPORAL_TLS_SERVER_CA_CERT_PATH": files.CA,
			"TEMPORAL_TLS_SERVER_NAME":         testenv.TLSServerName,
			"TEMPORAL_TLS_CLIENT_CERT_PATH":    files.ClientCert,
			"TEMPORAL_TLS_CLIENT_KEY_PATH":     files.ClientKey,
		}
		logs := runTaskThrough(t, cfg, env)
		require.Contains(t, p.ClientCNs(), testenv.TLSClientCN)
		require.Contains(t, logs, "temporal="+localhost(p.Addr)+" namespace=default temporal_tls=true temporal_auth=mtls")

		// Without the client certificate the handshake fails.
		delete(env, "TEMPORAL_TLS_CLIENT_CERT_PATH")
		delete(env, "TEMPORAL_TLS_CLIENT_KEY_PATH")
		opts, sum, err := worker.ClientOptions(worker.Connection{}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		require.NoError(t, err)
		require.False(t, sum.MTLS)
		opts.ConnectionOptions.GetSystemInfoTimeout = 3 * time.Second
		c, err := client.Dial(opts)
		if err == nil {
			c.Close()
		}
		require.Error(t, err, "a client without a certificate must not reach an mTLS frontend")
	})

	t.Run("API key from a CLI-written profile", func(t *testing.T) {
		const key = "tmprl-e2e-7f3c-api-key"
		p := testenv.StartTLSProxy(t, testenv.TLSProxyOptions{Backend: temporal.HostPort, Files: files, RequireAPIKey: key})
		toml := filepath.Join(t.TempDir(), "temporal.toml")
		for _, kv := range [][2]string{
			{"address", p.Addr}, {"api_key", key},
			{"tls.server_ca_cert_path", files.CA}, {"tls.server_name", testenv.TLSServerName},
		} {
			out, err := exec.Command(temporalCLI(t), "config", "set", "--config-file", toml, "--profile", "e2e",
				"--prop", kv[0], "--value", kv[1]).CombinedOutput()
			require.NoError(t, err, "temporal config set %s: %s", kv[0], out)
		}
		cfg := writeConfig(t, tasks, ext)
		withTemporalSection(t, cfg, fmt.Sprintf(`{ task_queue: e2e-key-%d, config_file: %q, profile: e2e }`, time.Now().UnixNano(), toml))
		logs := runTaskThrough(t, cfg, nil)
		require.Contains(t, p.Authorizations(), "Bearer "+key)
		require.Zero(t, p.Rejected())
		require.Contains(t, logs, "temporal_tls=true temporal_auth=api_key temporal_profile=e2e")
		require.NotContains(t, logs, key)
	})
}

// localhost turns 127.0.0.1:port into localhost:port.
func localhost(addr string) string {
	_, port, _ := strings.Cut(addr, ":")
	return "localhost:" + port
}

// temporalCLI is the Temporal CLI make tools built.
func temporalCLI(t *testing.T) string {
	t.Helper()
	p := os.Getenv("TEMPORAL_CLI")
	if p == "" {
		p = filepath.Join(testenv.RepoRoot(), "bin", "temporal")
	}
	_, err := os.Stat(p)
	require.NoError(t, err, "the Temporal CLI (make tools)")
	return p
}

// With temporal.web_ui_url set, a task's detail, the CLI and the MCP
// endpoint link its workflow in the Temporal Web UI, in the namespace the
// client resolved.
func TestTaskWebUILink(t *testing.T) {
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", demoTaskExt(demoHTTP(t)))
	withTemporalSection(t, cfg, fmt.Sprintf(`{ address: %q, task_queue: e2e-link-%d, web_ui_url: "http://127.0.0.1:8233/" }`,
		temporal.HostPort, time.Now().UnixNano()))
	e := &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
	id := e.submit(t, "link", "demo_submit_job", `{"duration_seconds": 0.5}`)
	d := e.waitStatus(t, "link", id, "completed")
	link := "http://127.0.0.1:8233/namespaces/default/workflows/" + id
	require.Equal(t, link, d["temporal_ui_url"])
	// The CLI shows it.
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"tasks", "get", id, "--url", e.m.URL(), "--token", testUserToken, "--thread", "link"},
		noEnv, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), "Temporal: "+link)
	// So does the MCP endpoint's statusMessage.
	c, _ := mcpGoClient(t, e.m.URL()+"/mcp/threads/link", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
	require.NoError(t, err)
	require.Equal(t, "Temporal Web UI: "+link, got.StatusMessage)

	plain := startTaskEnv(t)
	id = plain.submit(t, "link", "demo_submit_job", `{"duration_seconds": 0.5}`)
	require.NotContains(t, plain.waitStatus(t, "link", id, "completed"), "temporal_ui_url")
}
