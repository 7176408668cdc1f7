package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

const tenantSecret = "s3cr3t-tenant-value-77"

// credTaskExt is the demo server (recording the credentials of every call)
// with user_auth, headers_from_context and the job toolset.
func credTaskExt(url string) string {
	return fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 10,
  "user_auth": {"users": {"alice": "Bearer alice-cred"}},
  "headers_from_context": {"headers": {"X-Tenant-Token": "tenant_token"}},
  %s}}}`, url, jobToolset)
}

type recordedCall struct {
	Tool    string              `json:"tool"`
	Headers map[string][]string `json:"headers"`
}

// A durable task on a server with user_auth and headers_from_context: the
// submit carries the request's secret, the polls carry the owner's
// credential and not the secret, and the secret is in neither the workflow
// history nor the database.
func TestDurableTaskCredentials(t *testing.T) {
	demo := testenv.StartDemo(t, "http", "--record-calls", "--state", filepath.Join(t.TempDir(), "jobs.json"))
	logs := &testenv.SyncBuffer{}
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", credTaskExt(demo.URL))
	m := startMain(t, ModeDev, cfg, logs)
	waitForWorker(t, logs)
	e := &taskEnv{m: m}
	require.Contains(t, logs.String(), "has both headers_from_context and task_toolsets", "the §3.7 start-up warning")

	code, out := e.post(t, "/api/threads/c1/tools/demo_submit_job/call",
		`{"arguments": {"duration_seconds": 2}, "secrets": {"tenant_token": "`+tenantSecret+`", "unused": "other-secret-88"}}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, false, out["is_error"], out)
	id := out["structured_content"].(map[string]any)["task_id"].(string)
	e.waitStatus(t, "c1", id, "completed")

	// What the server saw, read through mcpflow (this call sends another
	// tenant value, so it cannot be mistaken for the submit's).
	code, out = e.post(t, "/api/threads/c1/tools/demo_headers/call",
		`{"arguments": {"history": true}, "secrets": {"tenant_token": "reader"}}`)
	require.Equal(t, 200, code, out)
	raw, err := json.Marshal(out["structured_content"].(map[string]any)["history"])
	require.NoError(t, err)
	var calls []recordedCall
	require.NoError(t, json.Unmarshal(raw, &calls))
	var submits, polls int
	for _, c := range calls {
		h := http.Header(c.Headers)
		switch c.Tool {
		case "submit_job":
			submits++
			require.Equal(t, []string{tenantSecret}, h.Values("X-Tenant-Token"), "the submit carries the request's secret")
			require.Equal(t, []string{"Bearer alice-cred"}, h.Values("Authorization"))
			require.Empty(t, h.Values("Unused"))
		case "get_job_status":
			polls++
			require.Empty(t, h.Values("X-Tenant-Token"), "polls run without the request's secrets")
			require.Equal(t, []string{"Bearer alice-cred"}, h.Values("Authorization"), "polls carry the owner's credential")
		}
	}
	require.Equal(t, 1, submits)
	require.Positive(t, polls)

	hist := historyBytes(t, id)
	require.False(t, bytes.Contains(hist, []byte(tenantSecret)), "the secret is not in Temporal history")
	require.True(t, bytes.Contains(hist, []byte("sealed_secrets")), "only its ciphertext is")

	// Neither the database file nor its write-ahead log holds it.
	dir := filepath.Dir(cfg)
	matches, err := filepath.Glob(filepath.Join(dir, "mcpflow.db*"))
	require.NoError(t, err)
	require.NotEmpty(t, matches)
	for _, f := range matches {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.False(t, bytes.Contains(b, []byte(tenantSecret)), "the secret is not in %s", filepath.Base(f))
	}
	require.NotContains(t, logs.String(), tenantSecret)

	// A submit without the secret is refused before anything reaches the
	// server, naming only the missing key.
	code, out = e.post(t, "/api/threads/c1/tools/demo_submit_job/call", `{"arguments": {"duration_seconds": 1}}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, true, out["is_error"], out)
	require.Contains(t, fmt.Sprint(out["content"]), "needs request-scoped credential(s) tenant_token")
}

// serve and worker running apart must share mcp_tasks.secrets_key when a
// task server uses headers_from_context.
func TestSecretsKeyRequiredWhenServeAndWorkerRunApart(t *testing.T) {
	for _, mode := range []string{ModeServe, ModeWorker} {
		cfg := writeConfig(t, "mcp_tasks: { enabled: true }\n", credTaskExt("http://127.0.0.1:1/mcp"))
		m := &Main{Mode: mode, ConfigPath: cfg, Env: noEnv, Logger: slog.New(slog.DiscardHandler)}
		err := m.Open(t.Context())
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%s: %v", mode, err)
		require.Contains(t, err.Error(), "mcp_tasks.secrets_key: must be set (the same on serve and worker) because task server(s) demo use headers_from_context")
		_ = m.Close(t.Context())
	}
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, secrets_key: shared-key-of-serve-and-worker }\n", credTaskExt("http://127.0.0.1:1/mcp"))
	m := startMain(t, ModeServe, cfg, nil)
	require.NotEmpty(t, m.URL())
}
