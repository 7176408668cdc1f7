package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// mapEnv is a LookupEnv over a map.
func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

var noEnv = mapEnv(nil)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

const testHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestLoadServiceDefaults(t *testing.T) {
	t.Parallel()
	s, err := LoadService("", noEnv)
	require.NoError(t, err)
	want := DefaultService()
	require.Equal(t, &want, s)
	require.Equal(t, "127.0.0.1:8080", s.Server.Addr)
	require.Equal(t, "mcpflow.db", s.Database.DSN)
	require.Equal(t, "mcpflow-tasks", s.Temporal.TaskQueue)
	require.False(t, s.MCPTasks.Enabled)
	require.Equal(t, 5, s.MCPTasks.PollIntervalSeconds)
	require.Equal(t, 32, s.Server.MaxWaitsPerUser)
	require.Equal(t, 32, s.Server.MaxMCPStreamsPerUser)
	require.Equal(t, 100, s.Server.MaxMCPSessionsPerUser)
	require.Empty(t, s.Path)
	require.Empty(t, s.Dir)
	require.NoError(t, want.Validate())

	// An empty file is the defaults too.
	dir := t.TempDir()
	s, err = LoadService(writeFile(t, dir, "config.yaml", ""), noEnv)
	require.NoError(t, err)
	require.Equal(t, want.Server, s.Server)
	require.Equal(t, filepath.Join(dir, "config.yaml"), s.Path)
	require.Equal(t, dir, s.Dir)
}

func TestLoadServicePrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, dir, "config.yaml", `
server: { addr: "0.0.0.0:9000", shutdown_timeout_seconds: 30 }
database: { backend: postgres, dsn: "postgres://file/db" }
temporal: { namespace: file-ns }
mcp_tasks: { enabled: true, poll_interval_seconds: 7, lease_seconds: 60 }
tool_search: { enabled: true, auto_promote_top_k: 9 }
auth:
  admin_tokens: ["file-admin"]
  users: [ { id: alice, token: file-alice } ]
notifications: { webhook_url: "http://127.0.0.1:9000/hook", webhook_secret: file-secret }
`)
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, s *Service)
	}{
		{
			name: "file beats defaults",
			check: func(t *testing.T, s *Service) {
				require.Equal(t, "0.0.0.0:9000", s.Server.Addr)
				require.Equal(t, 30, s.Server.ShutdownTimeoutSeconds)
				require.Equal(t, "postgres://file/db", s.Database.DSN)
				require.Equal(t, "file-ns", s.Temporal.Namespace)
				require.Empty(t, s.Temporal.Address)                   // unset: Temporal's own config or the built-in default decides
				require.Equal(t, "mcpflow", s.Temporal.DeploymentName) // default kept
				require.Equal(t, PromoteNewest, s.Temporal.Promote)
				require.True(t, s.MCPTasks.Enabled)
				require.Equal(t, 7, s.MCPTasks.PollIntervalSeconds)
				require.Equal(t, 60, s.MCPTasks.LeaseSeconds)
				require.Equal(t, 8, s.MCPTasks.MaxConcurrentPolls) // default kept
				require.Equal(t, 5, s.ToolSearch.AutoPromoteTopK)  // clamped
				require.Equal(t, []string{"file-admin"}, s.Auth.AdminTokens)
				require.Equal(t, []User{{ID: "alice", Token: "file-alice"}}, s.Auth.Users)
				require.Equal(t, "file-secret", s.Notifications.WebhookSecret)
			},
		},
		{
			name: "env beats file",
			env: map[string]string{
				"MCPFLOW_SERVER_ADDR":                     "127.0.0.1:0",
				"MCPFLOW_DATABASE_BACKEND":                "sqlite",
				"MCPFLOW_DATABASE_DSN":                    "env.db",
				"MCPFLOW_MCP_TASKS_ENABLED":               "0",
				"MCPFLOW_MCP_TASKS_POLL_INTERVAL_SECONDS": "11",
				"MCPFLOW_NOTIFICATIONS_WEBHOOK_SECRET":    "env-secret",
				"MCPFLOW_EXTENSIONS_CONFIG":               "env/ext.json",
				"MCPFLOW_AUTH_ADMIN_TOKENS":               " a1 , a2 ,,",
				"MCPFLOW_AUTH_ADMIN_TOKEN_SHA256":         testHex,
				"MCPFLOW_AUTH_USERS":                      "bob:tok-b, carol:sha256:" + strings.ToUpper(testHex),
				"MCPFLOW_TOOL_SEARCH_AUTO_PROMOTE_TOP_K":  "0",
			},
			check: func(t *testing.T, s *Service) {
				require.Equal(t, "127.0.0.1:0", s.Server.Addr)
				require.Equal(t, 30, s.Server.ShutdownTimeoutSeconds) // file kept
				require.Equal(t, BackendSQLite, s.Database.Backend)
				require.Equal(t, "env.db", s.Database.DSN) // env: stays relative to cwd
				require.False(t, s.MCPTasks.Enabled)
				require.Equal(t, 11, s.MCPTasks.PollIntervalSeconds)
				require.Equal(t, 60, s.MCPTasks.LeaseSeconds) // file kept
				require.Equal(t, "env-secret", s.Notifications.WebhookSecret)
				require.Equal(t, "env/ext.json", s.ExtensionsConfig)
				require.Equal(t, []string{"a1", "a2"}, s.Auth.AdminTokens)
				require.Equal(t, []string{testHex}, s.Auth.AdminTokenSHA256)
				require.Equal(t, []User{{ID: "bob", Token: "tok-b"}, {ID: "carol", TokenSHA256: strings.ToUpper(testHex)}}, s.Auth.Users)
				require.Equal(t, 1, s.ToolSearch.AutoPromoteTopK) // clamped
			},
		},
		{
			name: "empty env value is unset",
			env:  map[string]string{"MCPFLOW_SERVER_ADDR": "", "MCPFLOW_AUTH_ADMIN_TOKENS": ""},
			check: func(t *testing.T, s *Service) {
				require.Equal(t, "0.0.0.0:9000", s.Server.Addr)
				require.Equal(t, []string{"file-admin"}, s.Auth.AdminTokens)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := LoadService(path, mapEnv(tc.env))
			require.NoError(t, err)
			tc.check(t, s)
		})
	}

	// env beats defaults without a file.
	s, err := LoadService("", mapEnv(map[string]string{"MCPFLOW_TEMPORAL_TASK_QUEUE": "q2", "MCPFLOW_MCP_TASKS_ENABLED": "true"}))
	require.NoError(t, err)
	require.Equal(t, "q2", s.Temporal.TaskQueue)
	require.True(t, s.MCPTasks.Enabled)
}

func TestMCPTasksBounds(t *testing.T) {
	t.Parallel()
	bounds := []struct {
		key      string
		min, max int
	}{
		{"poll_interval_seconds", 1, 300},
		{"lease_seconds", 5, 3600},
		{"max_concurrent_polls", 1, 64},
		{"max_poll_backoff_seconds", 1, 3600},
		{"input_required_poll_interval_seconds", 5, 3600},
		{"tracking_degraded_after_errors", 1, 100},
		{"max_result_bytes", 1024, 10485760},
		{"result_preview_max_chars", 64, 100000},
		{"max_running_tasks_per_user", 1, 1000000},
		{"max_pinned_sessions_per_user", 1, 100000},
	}
	require.Len(t, bounds, len(mcpTaskBounds))
	dir := t.TempDir()
	for _, b := range bounds {
		for _, tc := range []struct {
			val int
			ok  bool
		}{{b.min - 1, false}, {b.min, true}, {b.max, true}, {b.max + 1, false}} {
			name := fmt.Sprintf("%s=%d", b.key, tc.val)
			file := writeFile(t, dir, name+".yaml", fmt.Sprintf("mcp_tasks:\n  %s: %d\n", b.key, tc.val))
			envName := "MCPFLOW_MCP_TASKS_" + strings.ToUpper(b.key)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s, err := LoadService(file, noEnv)
				sEnv, errEnv := LoadService("", mapEnv(map[string]string{envName: fmt.Sprint(tc.val)}))
				if tc.ok {
					require.NoError(t, err)
					require.NoError(t, errEnv)
					got := reflectInt(t, s.MCPTasks, b.key)
					require.Equal(t, tc.val, got)
					require.Equal(t, tc.val, reflectInt(t, sEnv.MCPTasks, b.key))
					return
				}
				msg := fmt.Sprintf("must be between %d and %d (got %d)", b.min, b.max, tc.val)
				require.EqualError(t, err, file+": mcp_tasks."+b.key+": "+msg)
				require.EqualError(t, errEnv, "env "+envName+": "+msg)
			})
		}
	}

	t.Run("enabled", func(t *testing.T) {
		t.Parallel()
		for val, want := range map[string]bool{"true": true, "false": false, "1": true, "0": false, "TRUE": true} {
			s, err := LoadService("", mapEnv(map[string]string{"MCPFLOW_MCP_TASKS_ENABLED": val}))
			require.NoError(t, err, val)
			require.Equal(t, want, s.MCPTasks.Enabled, val)
		}
		_, err := LoadService("", mapEnv(map[string]string{"MCPFLOW_MCP_TASKS_ENABLED": "yes"}))
		require.EqualError(t, err, `env MCPFLOW_MCP_TASKS_ENABLED: must be true, false, 1 or 0 (got "yes")`)
		file := writeFile(t, t.TempDir(), "config.yaml", "mcp_tasks: { enabled: maybe }\n")
		_, err = LoadService(file, noEnv)
		require.EqualError(t, err, file+`: mcp_tasks.enabled: must be true, false, 1 or 0 (got "maybe")`)
	})
}

func reflectInt(t *testing.T, m MCPTasksSection, key string) int {
	t.Helper()
	for _, b := range mcpTaskBounds {
		if b.key == key {
			return b.get(&m)
		}
	}
	t.Fatalf("no key %s", key)
	return 0
}

func TestLoadServiceErrors(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value"
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want string // with FILE standing for the file path
	}{
		{"unknown top-level key", "serverx: {}\n", nil, "FILE: serverx: unknown key (line 1)"},
		{"unknown nested key", "server:\n  addr: \"127.0.0.1:1\"\n  port: 8080\n", nil, "FILE: server.port: unknown key (line 3)"},
		{"unknown user key", "auth:\n  users:\n    - id: a\n      token: x\n      role: admin\n", nil, "FILE: auth.users[0].role: unknown key (line 5)"},
		{"duplicate key", "server:\n  addr: \"a:1\"\n  addr: \"b:2\"\n", nil, "FILE: server.addr: duplicate key (line 3)"},
		{"not an integer in file", "mcp_tasks: { poll_interval_seconds: abc }\n", nil, `FILE: mcp_tasks.poll_interval_seconds: must be an integer (got "abc")`},
		{"float is not an integer", "mcp_tasks: { lease_seconds: 5.5 }\n", nil, `FILE: mcp_tasks.lease_seconds: must be an integer (got 5.5)`},
		{"not an integer in env", "", map[string]string{"MCPFLOW_MCP_TASKS_POLL_INTERVAL_SECONDS": "abc"}, `env MCPFLOW_MCP_TASKS_POLL_INTERVAL_SECONDS: must be an integer (got "abc")`},
		{"section not a mapping", "server: 5\n", nil, "FILE: server: must be a mapping (got a scalar)"},
		{"list not a list", "auth: { admin_tokens: tok }\n", nil, "FILE: auth.admin_tokens: must be a list (got a scalar)"},
		{"bad yaml", "server: [\n", nil, "FILE: invalid YAML: line 1: did not find expected node content"},
		{"backend", "database: { backend: mysql }\n", nil, `FILE: database.backend: must be "sqlite" or "postgres" (got "mysql")`},
		{"empty dsn", "database: { dsn: \"\" }\n", nil, "FILE: database.dsn: must not be empty"},
		{"addr", "server: { addr: localhost }\n", nil, `FILE: server.addr: must be host:port (got "localhost")`},
		{"addr port", "", map[string]string{"MCPFLOW_SERVER_ADDR": "127.0.0.1:http"}, `env MCPFLOW_SERVER_ADDR: must be host:port (got "127.0.0.1:http")`},
		{"worker addr", "server: { worker_addr: \"9090\" }\n", nil, `FILE: server.worker_addr: must be host:port (got "9090")`},
		{"shutdown low", "server: { shutdown_timeout_seconds: 0 }\n", nil, "FILE: server.shutdown_timeout_seconds: must be between 1 and 600 (got 0)"},
		{"shutdown high", "", map[string]string{"MCPFLOW_SERVER_SHUTDOWN_TIMEOUT_SECONDS": "601"}, "env MCPFLOW_SERVER_SHUTDOWN_TIMEOUT_SECONDS: must be between 1 and 600 (got 601)"},
		{"max_body_bytes low", "server: { max_body_bytes: 1023 }\n", nil, "FILE: server.max_body_bytes: must be between 1024 and 67108864 (got 1023)"},
		{"max_body_bytes high", "", map[string]string{"MCPFLOW_SERVER_MAX_BODY_BYTES": "67108865"}, "env MCPFLOW_SERVER_MAX_BODY_BYTES: must be between 1024 and 67108864 (got 67108865)"},
		{"max_content_bytes low", "server: { max_content_bytes: 1000 }\n", nil, "FILE: server.max_content_bytes: must be between 1024 and 67108864 (got 1000)"},
		{"max_content_bytes high", "", map[string]string{"MCPFLOW_SERVER_MAX_CONTENT_BYTES": "67108865"}, "env MCPFLOW_SERVER_MAX_CONTENT_BYTES: must be between 1024 and 67108864 (got 67108865)"},
		{"max_concurrent_calls_per_user low", "server: { max_concurrent_calls_per_user: 0 }\n", nil, "FILE: server.max_concurrent_calls_per_user: must be between 1 and 10000 (got 0)"},
		{"max_concurrent_calls_per_user high", "", map[string]string{"MCPFLOW_SERVER_MAX_CONCURRENT_CALLS_PER_USER": "10001"}, "env MCPFLOW_SERVER_MAX_CONCURRENT_CALLS_PER_USER: must be between 1 and 10000 (got 10001)"},
		{"max_waits_per_user low", "server: { max_waits_per_user: 0 }\n", nil, "FILE: server.max_waits_per_user: must be between 1 and 10000 (got 0)"},
		{"max_waits_per_user high", "", map[string]string{"MCPFLOW_SERVER_MAX_WAITS_PER_USER": "10001"}, "env MCPFLOW_SERVER_MAX_WAITS_PER_USER: must be between 1 and 10000 (got 10001)"},
		{"max_mcp_streams_per_user low", "server: { max_mcp_streams_per_user: 0 }\n", nil, "FILE: server.max_mcp_streams_per_user: must be between 1 and 10000 (got 0)"},
		{"max_mcp_streams_per_user high", "", map[string]string{"MCPFLOW_SERVER_MAX_MCP_STREAMS_PER_USER": "10001"}, "env MCPFLOW_SERVER_MAX_MCP_STREAMS_PER_USER: must be between 1 and 10000 (got 10001)"},
		{"max_mcp_sessions_per_user low", "server: { max_mcp_sessions_per_user: 0 }\n", nil, "FILE: server.max_mcp_sessions_per_user: must be between 1 and 10000 (got 0)"},
		{"max_mcp_sessions_per_user high", "", map[string]string{"MCPFLOW_SERVER_MAX_MCP_SESSIONS_PER_USER": "10001"}, "env MCPFLOW_SERVER_MAX_MCP_SESSIONS_PER_USER: must be between 1 and 10000 (got 10001)"},
		{"read_header_timeout_seconds low", "server: { read_header_timeout_seconds: 0 }\n", nil, "FILE: server.read_header_timeout_seconds: must be between 1 and 300 (got 0)"},
		{"read_header_timeout_seconds high", "", map[string]string{"MCPFLOW_SERVER_READ_HEADER_TIMEOUT_SECONDS": "301"}, "env MCPFLOW_SERVER_READ_HEADER_TIMEOUT_SECONDS: must be between 1 and 300 (got 301)"},
		{"read_timeout_seconds low", "server: { read_timeout_seconds: 0 }\n", nil, "FILE: server.read_timeout_seconds: must be between 1 and 3600 (got 0)"},
		{"read_timeout_seconds high", "", map[string]string{"MCPFLOW_SERVER_READ_TIMEOUT_SECONDS": "3601"}, "env MCPFLOW_SERVER_READ_TIMEOUT_SECONDS: must be between 1 and 3600 (got 3601)"},
		{"write_timeout_seconds low", "server: { write_timeout_seconds: 0 }\n", nil, "FILE: server.write_timeout_seconds: must be between 1 and 86400 (got 0)"},
		{"write_timeout_seconds high", "", map[string]string{"MCPFLOW_SERVER_WRITE_TIMEOUT_SECONDS": "86401"}, "env MCPFLOW_SERVER_WRITE_TIMEOUT_SECONDS: must be between 1 and 86400 (got 86401)"},
		{"idle_timeout_seconds low", "server: { idle_timeout_seconds: 0 }\n", nil, "FILE: server.idle_timeout_seconds: must be between 1 and 3600 (got 0)"},
		{"idle_timeout_seconds high", "", map[string]string{"MCPFLOW_SERVER_IDLE_TIMEOUT_SECONDS": "3601"}, "env MCPFLOW_SERVER_IDLE_TIMEOUT_SECONDS: must be between 1 and 3600 (got 3601)"},
		{"allowed origin with path", "server: { allowed_origins: [\"https://app.example.com/x\"] }\n", nil, `FILE: server.allowed_origins[0]: must be an origin like https://app.example.com (scheme://host[:port], no path) (got "https://app.example.com/x")`},
		{"allowed origin without scheme", "", map[string]string{"MCPFLOW_SERVER_ALLOWED_ORIGINS": "https://ok.example,app.example.com"}, `env MCPFLOW_SERVER_ALLOWED_ORIGINS: server.allowed_origins[1]: must be an origin like https://app.example.com (scheme://host[:port], no path) (got "app.example.com")`},
		{"allowed origin wildcard", "server: { allowed_origins: [\"*\"] }\n", nil, `FILE: server.allowed_origins[0]: must be an origin like https://app.example.com (scheme://host[:port], no path) (got "*")`},
		{"temporal address", "temporal: { address: \" \" }\n", nil, "FILE: temporal.address: must be host:port (got \" \")"},
		{"temporal address no port", "temporal: { address: temporal.example.com }\n", nil, "FILE: temporal.address: must be host:port (got \"temporal.example.com\")"},
		{"temporal mtls half", "temporal: { tls_cert_file: c.pem }\n", nil, "FILE: temporal.tls_cert_file: needs temporal.tls_key_file (mTLS takes both)"},
		{"temporal mtls other half", "temporal: { tls_key_file: k.pem }\n", nil, "FILE: temporal.tls_key_file: needs temporal.tls_cert_file (mTLS takes both)"},
		{"temporal deployment dot", "temporal: { deployment_name: a.b }\n", nil, "FILE: temporal.deployment_name: must not contain '.' or ':' nor start with '__' (got \"a.b\")"},
		{"temporal deployment empty", "temporal: { deployment_name: \"\" }\n", nil, "FILE: temporal.deployment_name: must not be empty"},
		{"temporal build id", "temporal: { build_id: __x }\n", nil, "FILE: temporal.build_id: must be at most 255 bytes and not start with '__'"},
		{"temporal promote", "", map[string]string{"MCPFLOW_TEMPORAL_PROMOTE": "always"}, "env MCPFLOW_TEMPORAL_PROMOTE: must be \"newest\", \"first\" or \"never\" (got \"always\")"},
		{"temporal queue", "temporal: { task_queue: \"\" }\n", nil, "FILE: temporal.task_queue: must not be empty"},
		{"temporal web ui relative", "temporal: { web_ui_url: /ui }\n", nil, "FILE: temporal.web_ui_url: must be an absolute http(s) URL without query (got \"/ui\")"},
		{"temporal web ui query", "", map[string]string{"MCPFLOW_TEMPORAL_WEB_UI_URL": "http://h:8233/?x=1"}, "env MCPFLOW_TEMPORAL_WEB_UI_URL: must be an absolute http(s) URL without query (got \"http://h:8233/?x=1\")"},
		{"empty admin token", "auth: { admin_tokens: [\"" + secret + "\", \"\"] }\n", nil, "FILE: auth.admin_tokens[1]: must not be empty"},
		{"bad admin sha", "auth: { admin_token_sha256: [\"" + secret + "\"] }\n", nil, "FILE: auth.admin_token_sha256[0]: must be 64 hexadecimal characters"},
		{"bad admin sha env", "", map[string]string{"MCPFLOW_AUTH_ADMIN_TOKEN_SHA256": testHex + "," + secret}, "env MCPFLOW_AUTH_ADMIN_TOKEN_SHA256: auth.admin_token_sha256[1]: must be 64 hexadecimal characters"},
		{"user both", "auth: { users: [ { id: a, token: " + secret + ", token_sha256: " + testHex + " } ] }\n", nil, "FILE: auth.users[0]: must set only one of token and token_sha256"},
		{"user neither", "auth: { users: [ { id: a } ] }\n", nil, "FILE: auth.users[0]: must set token or token_sha256"},
		{"user bad sha", "auth: { users: [ { id: a, token_sha256: " + secret + " } ] }\n", nil, "FILE: auth.users[0].token_sha256: must be 64 hexadecimal characters"},
		{"user empty id", "auth: { users: [ { id: \"\", token: " + secret + " } ] }\n", nil, "FILE: auth.users[0].id: must not be empty"},
		{"user dotdot", "auth: { users: [ { id: \"..\", token: " + secret + " } ] }\n", nil, `FILE: auth.users[0].id: must be 1 to 64 characters from A-Z a-z 0-9 . _ @ - and not "." or ".."`},
		{"user slash", "auth: { users: [ { id: \"a/b\", token: " + secret + " } ] }\n", nil, `FILE: auth.users[0].id: must be 1 to 64 characters from A-Z a-z 0-9 . _ @ - and not "." or ".."`},
		{"user long id", "auth: { users: [ { id: " + strings.Repeat("a", 65) + ", token: " + secret + " } ] }\n", nil, `FILE: auth.users[0].id: must be 1 to 64 characters from A-Z a-z 0-9 . _ @ - and not "." or ".."`},
		{"user dup", "auth: { users: [ { id: a, token: x }, { id: a, token: " + secret + " } ] }\n", nil, `FILE: auth.users[1].id: duplicate user id "a" (also auth.users[0])`},
		{"users env bad entry", "", map[string]string{"MCPFLOW_AUTH_USERS": "alice:x," + secret}, `env MCPFLOW_AUTH_USERS: auth.users[1]: must be "id:token" or "id:sha256:<hex>"`},
		{"users env empty token", "", map[string]string{"MCPFLOW_AUTH_USERS": "alice:"}, `env MCPFLOW_AUTH_USERS: auth.users[0]: must set token or token_sha256`},
		{"users env overrides file origin", "auth: { users: [ { id: ok, token: x } ] }\n", map[string]string{"MCPFLOW_AUTH_USERS": "a/b:" + secret}, `env MCPFLOW_AUTH_USERS: auth.users[0].id: must be 1 to 64 characters from A-Z a-z 0-9 . _ @ - and not "." or ".."`},
		{"webhook relative", "notifications: { webhook_url: \"/hook?token=" + secret + "\" }\n", nil, "FILE: notifications.webhook_url: must be an absolute http(s) URL"},
		{"webhook scheme", "", map[string]string{"MCPFLOW_NOTIFICATIONS_WEBHOOK_URL": "ftp://" + secret + "@h/x"}, "env MCPFLOW_NOTIFICATIONS_WEBHOOK_URL: must be an absolute http(s) URL"},
		{"webhook without secret", "notifications: { webhook_url: \"http://127.0.0.1:9/hook?token=" + secret + "\" }\n", nil, "FILE: notifications.webhook_url: needs notifications.webhook_secret (MCPFLOW_NOTIFICATIONS_WEBHOOK_SECRET): deliveries are signed with it"},
		{"workspace root", "workspace: { root: \"\" }\n", nil, "FILE: workspace.root: must not be empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := ""
			if tc.yaml != "" {
				file = writeFile(t, t.TempDir(), "config.yaml", tc.yaml)
			}
			_, err := LoadService(file, mapEnv(tc.env))
			require.Error(t, err)
			require.EqualError(t, err, strings.ReplaceAll(tc.want, "FILE", file))
			require.NotContains(t, err.Error(), secret)
			require.NotContains(t, err.Error(), "\n")
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
		})
	}
}

func TestLoadServiceRelativePaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name      string
		yaml      string
		env       map[string]string
		dsn, ext  string
		workspace string
	}{
		{
			name:      "relative in file resolve against the file",
			yaml:      "database: { dsn: data/m.db }\nextensions_config: ext.json\nworkspace: { root: ws }\n",
			dsn:       filepath.Join(dir, "data/m.db"),
			ext:       filepath.Join(dir, "ext.json"),
			workspace: filepath.Join(dir, "ws"),
		},
		{
			name:      "absolute in file stay",
			yaml:      "database: { dsn: /abs/m.db }\nextensions_config: /abs/ext.json\nworkspace: { root: /abs/ws }\n",
			dsn:       "/abs/m.db",
			ext:       "/abs/ext.json",
			workspace: "/abs/ws",
		},
		{
			name:      "memory and file URIs stay",
			yaml:      "database: { dsn: \":memory:\" }\n",
			dsn:       ":memory:",
			workspace: ".mcpflow/workspace",
		},
		{
			name:      "file URI stays",
			yaml:      "database: { dsn: \"file:m.db?cache=shared\" }\n",
			dsn:       "file:m.db?cache=shared",
			workspace: ".mcpflow/workspace",
		},
		{
			name:      "postgres DSN stays",
			yaml:      "database: { backend: postgres, dsn: \"postgres://u@h/db\" }\n",
			dsn:       "postgres://u@h/db",
			workspace: ".mcpflow/workspace",
		},
		{
			name:      "env values stay relative to the working directory",
			yaml:      "database: { dsn: file.db }\n",
			env:       map[string]string{"MCPFLOW_DATABASE_DSN": "env.db", "MCPFLOW_EXTENSIONS_CONFIG": "e.json", "MCPFLOW_WORKSPACE_ROOT": "w"},
			dsn:       "env.db",
			ext:       "e.json",
			workspace: "w",
		},
	}
	for i, tc := range tests {
		file := writeFile(t, dir, fmt.Sprintf("c%d.yaml", i), tc.yaml)
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := LoadService(file, mapEnv(tc.env))
			require.NoError(t, err)
			require.Equal(t, tc.dsn, s.Database.DSN)
			require.Equal(t, tc.ext, s.ExtensionsConfig)
			require.Equal(t, tc.workspace, s.Workspace.Root) // the default stays relative
			require.Equal(t, dir, s.Dir)
			require.Equal(t, file, s.Path)
		})
	}
}

func TestEnvKeys(t *testing.T) {
	t.Parallel()
	keys := EnvKeys()
	require.True(t, sort.StringsAreSorted(keys))
	require.Len(t, keys, 60)
	for _, k := range []string{
		"MCPFLOW_SERVER_ADDR",
		"MCPFLOW_SERVER_WORKER_ADDR",
		"MCPFLOW_AUDIT_ENABLED",
		"MCPFLOW_AUDIT_RETENTION_DAYS",
		"MCPFLOW_SERVER_ALLOWED_ORIGINS",
		"MCPFLOW_SERVER_PUBLIC_URL",
		"MCPFLOW_AUTH_OIDC",
		"MCPFLOW_SERVER_SHUTDOWN_TIMEOUT_SECONDS",
		"MCPFLOW_SERVER_MAX_BODY_BYTES",
		"MCPFLOW_SERVER_MAX_CONCURRENT_CALLS_PER_USER",
		"MCPFLOW_SERVER_READ_HEADER_TIMEOUT_SECONDS",
		"MCPFLOW_SERVER_READ_TIMEOUT_SECONDS",
		"MCPFLOW_SERVER_WRITE_TIMEOUT_SECONDS",
		"MCPFLOW_SERVER_IDLE_TIMEOUT_SECONDS",
		"MCPFLOW_DATABASE_BACKEND",
		"MCPFLOW_DATABASE_DSN",
		"MCPFLOW_TEMPORAL_ADDRESS",
		"MCPFLOW_TEMPORAL_NAMESPACE",
		"MCPFLOW_TEMPORAL_TASK_QUEUE",
		"MCPFLOW_TEMPORAL_PROFILE",
		"MCPFLOW_TEMPORAL_TLS_CA_FILE",
		"MCPFLOW_TEMPORAL_TLS_CERT_FILE",
		"MCPFLOW_TEMPORAL_API_KEY",
		"MCPFLOW_TEMPORAL_WORKER_VERSIONING",
		"MCPFLOW_TEMPORAL_BUILD_ID",
		"MCPFLOW_EXTENSIONS_CONFIG",
		"MCPFLOW_WORKSPACE_ROOT",
		"MCPFLOW_MCP_TASKS_ENABLED",
		"MCPFLOW_MCP_TASKS_POLL_INTERVAL_SECONDS",
		"MCPFLOW_MCP_TASKS_LEASE_SECONDS",
		"MCPFLOW_MCP_TASKS_MAX_CONCURRENT_POLLS",
		"MCPFLOW_MCP_TASKS_MAX_POLL_BACKOFF_SECONDS",
		"MCPFLOW_MCP_TASKS_INPUT_REQUIRED_POLL_INTERVAL_SECONDS",
		"MCPFLOW_MCP_TASKS_TRACKING_DEGRADED_AFTER_ERRORS",
		"MCPFLOW_MCP_TASKS_MAX_RESULT_BYTES",
		"MCPFLOW_MCP_TASKS_RESULT_PREVIEW_MAX_CHARS",
		"MCPFLOW_MCP_TASKS_IDEMPOTENT_SUBMIT_SERVERS",
		"MCPFLOW_MCP_TASKS_SECRETS_KEY",
		"MCPFLOW_TOOL_SEARCH_ENABLED",
		"MCPFLOW_TOOL_SEARCH_AUTO_PROMOTE_TOP_K",
		"MCPFLOW_AUTH_ADMIN_TOKENS",
		"MCPFLOW_AUTH_ADMIN_TOKEN_SHA256",
		"MCPFLOW_AUTH_USERS",
		"MCPFLOW_NOTIFICATIONS_WEBHOOK_URL",
		"MCPFLOW_NOTIFICATIONS_WEBHOOK_SECRET",
		"MCPFLOW_SERVER_MAX_WAITS_PER_USER",
		"MCPFLOW_SERVER_MAX_MCP_STREAMS_PER_USER",
		"MCPFLOW_SERVER_MAX_MCP_SESSIONS_PER_USER",
	} {
		require.Contains(t, keys, k)
	}

	// Every key really is read: setting each to an invalid or distinctive
	// value changes the outcome.
	for _, k := range keys {
		_, err := LoadService("", mapEnv(map[string]string{k: "not valid for any key \x00"}))
		s, _ := LoadService("", mapEnv(map[string]string{k: "x"}))
		changed := err != nil || s == nil || !serviceEqual(*s, DefaultService())
		require.True(t, changed, k)
	}
}

func serviceEqual(a, b Service) bool {
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}

func TestLoadServiceTemporalFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeFile(t, dir, "config.yaml", `
temporal:
  config_file: temporal.toml
  tls_ca_file: certs/ca.pem
  tls_cert_file: /abs/client.pem
  tls_key_file: certs/client.key
  api_key: file-key
  worker_versioning: true
  promote: never
  web_ui_url: http://127.0.0.1:8233
`)
	s, err := LoadService(file, mapEnv(map[string]string{"MCPFLOW_TEMPORAL_TLS_CA_FILE": "env/ca.pem"}))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "temporal.toml"), s.Temporal.ConfigFile)
	require.Equal(t, "env/ca.pem", s.Temporal.TLSCAFile) // env: relative to the working directory
	require.Equal(t, "/abs/client.pem", s.Temporal.TLSCertFile)
	require.Equal(t, filepath.Join(dir, "certs/client.key"), s.Temporal.TLSKeyFile)
	require.Equal(t, "file-key", s.Temporal.APIKey)
	require.True(t, s.Temporal.WorkerVersioning)
	require.Equal(t, PromoteNever, s.Temporal.Promote)
	require.Equal(t, "mcpflow", s.Temporal.DeploymentName)
	require.Equal(t, "http://127.0.0.1:8233", s.Temporal.WebUIURL)
}

// The forms config.yaml takes beyond YAML's own types, and null, pinned
// across the move to yaml.v3: an integer or boolean written as a string,
// a boolean as 1 or 0, a number or date where a string is due (kept as
// written), null for the default, and anchors.
func TestLoadServiceYAMLForms(t *testing.T) {
	t.Parallel()
	file := writeFile(t, t.TempDir(), "config.yaml", "temporal: { deployment_name: 1.50 }\n")
	_, err := LoadService(file, noEnv)
	require.EqualError(t, err, file+`: temporal.deployment_name: must not contain '.' or ':' nor start with '__' (got "1.50")`)

	file = writeFile(t, t.TempDir(), "config.yaml", `
server: { addr: &a "127.0.0.1:7000", shutdown_timeout_seconds: " 30", max_body_bytes: ~, worker_addr: *a }
database: ~
temporal: { build_id: 2024-01-02, deployment_name: 150, tls: 1, worker_versioning: "true" }
mcp_tasks: { enabled: 0, poll_interval_seconds: 0x0A }
auth: { admin_tokens: [12, x] }
`)
	s, err := LoadService(file, noEnv)
	require.NoError(t, err)
	def := DefaultService()
	require.Equal(t, "127.0.0.1:7000", s.Server.Addr)
	require.Equal(t, "127.0.0.1:7000", s.Server.WorkerAddr)
	require.Equal(t, 30, s.Server.ShutdownTimeoutSeconds)
	require.Equal(t, def.Server.MaxBodyBytes, s.Server.MaxBodyBytes, "null keeps the default")
	require.Equal(t, def.Database, s.Database, "a null section keeps the defaults")
	require.Equal(t, "2024-01-02", s.Temporal.BuildID)
	require.Equal(t, "150", s.Temporal.DeploymentName)
	require.True(t, s.Temporal.TLS)
	require.True(t, s.Temporal.WorkerVersioning)
	require.False(t, s.MCPTasks.Enabled)
	require.Equal(t, 10, s.MCPTasks.PollIntervalSeconds)
	require.Equal(t, []string{"12", "x"}, s.Auth.AdminTokens)

	for yaml, want := range map[string]string{
		"temporal: { tls: yes }\n":        `temporal.tls: must be true, false, 1 or 0 (got "yes")`,
		"temporal: { tls: 2 }\n":          `temporal.tls: must be true, false, 1 or 0 (got "2")`,
		"temporal: { address: true }\n":   `temporal.address: must be a string (got true)`,
		"server: { addr: [a] }\n":         `server.addr: must be a single value (got a list)`,
		"auth: { users: [ x ] }\n":        `auth.users[0]: must be a mapping (got a scalar)`,
		"auth: { admin_tokens: [[x]] }\n": `auth.admin_tokens[0]: must be a single value (got a list)`,
		"- a\n":                           `must be a mapping (got a list)`,
		"<<: { server: {} }\n":            `<<: unknown key (line 1)`,
	} {
		file := writeFile(t, t.TempDir(), "config.yaml", yaml)
		_, err := LoadService(file, noEnv)
		require.EqualError(t, err, file+": "+want, yaml)
	}
}
