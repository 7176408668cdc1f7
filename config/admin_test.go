package config

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

func newAdmin(t *testing.T, content string) (*Admin, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if content != "" {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o640))
	}
	env := func(k string) (string, bool) {
		switch k {
		case "GITHUB_TOKEN":
			return "ghp_from_env", true
		}
		return "", false
	}
	return &Admin{Path: path, Env: env, Policy: NewLaunchPolicy(nil)}, path
}

func getView(t *testing.T, a *Admin) map[string]any {
	t.Helper()
	v, err := readView(a)
	require.NoError(t, err)
	return v
}

// readView is getView for goroutines (which must not call t.FailNow).
func readView(a *Admin) (map[string]any, error) {
	b, err := a.MCPConfig(context.Background())
	if err != nil {
		return nil, err
	}
	var v struct {
		Servers map[string]any `json:"mcp_servers"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v.Servers, nil
}

const storedDoc = `{
  "mcpServers": {
    "gh": {
      "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_TOKEN": "$GITHUB_TOKEN", "API_KEY": "sk-stored"},
      "cwd": "/srv", "customFlag": true, "api_key": "extra-secret",
      "nested": {"refreshToken": "nested-secret", "safe": "visible"},
      "endpoints": [{"access_key": "ak-1", "url": "http://a"}]
    },
    "web": {
      "type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer stored"},
      "oauth": {"token_url": "http://127.0.0.1:9/token", "client_id": "cid", "client_secret": "cs-stored",
                "refresh_token": "rt-stored", "extra_token_params": {"resource": "r-stored"}},
      "user_auth": {"header": "X-User-Token", "users": {"u1": "Bearer one", "u2": "Bearer two"}},
      "headers_from_context": {"headers": {"X-Tenant": "tenant"}, "api_key": "hfc-secret"}
    }
  },
  "skills": {"s": {"enabled": true}},
  "customTop": {"keep": 1}
}`

// Spec §6 last paragraph, and §4.3: what GET masks and keeps.
func TestAdminMasking(t *testing.T) {
	t.Parallel()
	a, _ := newAdmin(t, storedDoc)
	v := getView(t, a)
	gh := v["gh"].(map[string]any)
	require.Equal(t, map[string]any{"GITHUB_TOKEN": "***", "API_KEY": "***"}, gh["env"])
	require.Equal(t, "/srv", gh["cwd"])
	require.Equal(t, true, gh["customFlag"])
	require.Equal(t, "***", gh["api_key"])
	require.Equal(t, map[string]any{"refreshToken": "***", "safe": "visible"}, gh["nested"])
	require.Equal(t, []any{map[string]any{"access_key": "***", "url": "http://a"}}, gh["endpoints"])
	require.EqualValues(t, 60, gh["session_init_timeout"], "defaults are filled in")
	require.Equal(t, true, gh["enabled"])
	web := v["web"].(map[string]any)
	require.Equal(t, map[string]any{"Authorization": "***"}, web["headers"])
	o := web["oauth"].(map[string]any)
	require.Nil(t, o["client_secret"])
	require.Nil(t, o["refresh_token"])
	require.Equal(t, "cid", o["client_id"])
	require.Equal(t, "http://127.0.0.1:9/token", o["token_url"])
	require.Equal(t, map[string]any{"resource": "***"}, o["extra_token_params"])
	require.Equal(t, map[string]any{"u1": "***", "u2": "***"}, web["user_auth"].(map[string]any)["users"])
	h := web["headers_from_context"].(map[string]any)
	require.Equal(t, map[string]any{"X-Tenant": "tenant"}, h["headers"], "the mapping holds names, not secrets")
	require.Equal(t, "***", h["api_key"])
	b, err := a.MCPConfig(context.Background())
	require.NoError(t, err)
	for _, secret := range []string{"sk-stored", "extra-secret", "nested-secret", "ak-1", "Bearer stored", "cs-stored", "rt-stored", "r-stored", "Bearer one", "hfc-secret", "$GITHUB_TOKEN"} {
		require.NotContains(t, string(b), secret)
	}
}

// put replaces the servers through the admin; safe in goroutines.
func put(_ *testing.T, a *Admin, servers map[string]any) error {
	body, err := json.Marshal(map[string]any{"mcp_servers": servers})
	if err != nil {
		return err
	}
	_, err = a.ReplaceMCPServers(context.Background(), "test", body)
	return err
}

func storedServer(t *testing.T, path, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	s, _ := doc["mcpServers"].(map[string]any)[name].(map[string]any)
	return s
}

// A GET → edit → PUT round trip keeps every stored secret.
func TestAdminRoundTripRestoresSecrets(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, storedDoc)
	v := getView(t, a)
	v["gh"].(map[string]any)["enabled"] = false
	require.NoError(t, put(t, a, v))
	gh := storedServer(t, path, "gh")
	require.Equal(t, false, gh["enabled"])
	require.Equal(t, map[string]any{"GITHUB_TOKEN": "$GITHUB_TOKEN", "API_KEY": "sk-stored"}, gh["env"], "placeholders and values kept")
	require.Equal(t, "extra-secret", gh["api_key"])
	require.Equal(t, map[string]any{"refreshToken": "nested-secret", "safe": "visible"}, gh["nested"])
	require.Equal(t, []any{map[string]any{"access_key": "ak-1", "url": "http://a"}}, gh["endpoints"])
	web := storedServer(t, path, "web")
	require.Equal(t, map[string]any{"Authorization": "Bearer stored"}, web["headers"])
	o := web["oauth"].(map[string]any)
	require.Equal(t, "cs-stored", o["client_secret"])
	require.Equal(t, "rt-stored", o["refresh_token"])
	require.Equal(t, map[string]any{"resource": "r-stored"}, o["extra_token_params"])
	require.Equal(t, map[string]any{"u1": "Bearer one", "u2": "Bearer two"}, web["user_auth"].(map[string]any)["users"])
	require.Equal(t, "hfc-secret", web["headers_from_context"].(map[string]any)["api_key"])

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Equal(t, map[string]any{"s": map[string]any{"enabled": true}}, doc["skills"], "skills kept")
	require.Equal(t, map[string]any{"keep": 1.0}, doc["customTop"], "unknown top-level keys kept")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "the file mode is kept")
}

func TestAdminMergeRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		edit   func(v map[string]any)
		err    string
		verify func(t *testing.T, path string)
	}{
		{"new env key masked", func(v map[string]any) { v["gh"].(map[string]any)["env"].(map[string]any)["NEW"] = "***" },
			"Cannot set env key 'NEW' to masked value '***'; provide a real value.", nil},
		{"new header masked", func(v map[string]any) { v["web"].(map[string]any)["headers"].(map[string]any)["X-New"] = "***" },
			"Cannot set header 'X-New' to masked value '***'; provide a real value.", nil},
		{"new extra masked", func(v map[string]any) { v["gh"].(map[string]any)["private_key"] = "***" },
			"Cannot set extra config key 'private_key' to masked value '***'; provide a real value.", nil},
		{"new user masked", func(v map[string]any) {
			v["web"].(map[string]any)["user_auth"].(map[string]any)["users"].(map[string]any)["new-user"] = "***"
		}, "Cannot set user_auth user 'new-user' to masked value '***'; provide a real value.", nil},
		{"new extra_token_params key masked", func(v map[string]any) {
			v["web"].(map[string]any)["oauth"].(map[string]any)["extra_token_params"].(map[string]any)["x"] = "***"
		}, "Cannot set OAuth extra_token_params key 'x' to masked value '***'; provide a real value.", nil},
		{"masked array edited", func(v map[string]any) {
			v["gh"].(map[string]any)["endpoints"] = []any{map[string]any{"access_key": "***", "url": "http://changed"}}
		}, "Cannot edit extra config array 'endpoints' while masked secrets remain", nil},
		{"oauth empty clears one secret", func(v map[string]any) { v["web"].(map[string]any)["oauth"].(map[string]any)["client_secret"] = "" }, "",
			func(t *testing.T, path string) {
				o := storedServer(t, path, "web")["oauth"].(map[string]any)
				require.Nil(t, o["client_secret"])
				require.Equal(t, "rt-stored", o["refresh_token"])
			}},
		{"users map replaces", func(v map[string]any) {
			v["web"].(map[string]any)["user_auth"].(map[string]any)["users"] = map[string]any{"u1": "***", "u3": "Bearer three"}
		}, "", func(t *testing.T, path string) {
			require.Equal(t, map[string]any{"u1": "Bearer one", "u3": "Bearer three"}, storedServer(t, path, "web")["user_auth"].(map[string]any)["users"])
		}},
		{"partial user_auth inherits", func(v map[string]any) {
			v["web"].(map[string]any)["user_auth"] = map[string]any{"enabled": false}
		}, "", func(t *testing.T, path string) {
			u := storedServer(t, path, "web")["user_auth"].(map[string]any)
			require.Equal(t, false, u["enabled"])
			require.Equal(t, map[string]any{"u1": "Bearer one", "u2": "Bearer two"}, u["users"])
			require.Equal(t, "X-User-Token", u["header"])
		}},
		{"omitted blocks preserved", func(v map[string]any) {
			w := v["web"].(map[string]any)
			delete(w, "user_auth")
			delete(w, "headers_from_context")
			delete(w, "routing")
		}, "", func(t *testing.T, path string) {
			w := storedServer(t, path, "web")
			require.NotNil(t, w["user_auth"])
			require.Equal(t, map[string]any{"X-Tenant": "tenant"}, w["headers_from_context"].(map[string]any)["headers"])
		}},
		{"provided hfc replaces mapping", func(v map[string]any) {
			v["web"].(map[string]any)["headers_from_context"] = map[string]any{"headers": map[string]any{"X-Org": "org"}, "on_missing": "passthrough"}
		}, "", func(t *testing.T, path string) {
			h := storedServer(t, path, "web")["headers_from_context"].(map[string]any)
			require.Equal(t, map[string]any{"X-Org": "org"}, h["headers"])
			require.Equal(t, "passthrough", h["on_missing"])
		}},
		{"blank user_auth header", func(v map[string]any) { v["web"].(map[string]any)["user_auth"].(map[string]any)["header"] = "\t" },
			"Invalid MCP configuration: mcpServers.web.user_auth.header: user_auth.header must not be empty", nil},
		{"two header spellings", func(v map[string]any) {
			v["web"].(map[string]any)["headers"] = map[string]any{"Authorization": "***", "authorization": "x"}
		}, "Invalid MCP configuration: mcpServers.web.headers:", nil},
		{"a removed server", func(v map[string]any) { delete(v, "gh") }, "", func(t *testing.T, path string) {
			require.Nil(t, storedServer(t, path, "gh"))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, path := newAdmin(t, storedDoc)
			before, err := os.ReadFile(path)
			require.NoError(t, err)
			v := getView(t, a)
			tc.edit(v)
			err = put(t, a, v)
			if tc.err != "" {
				require.Error(t, err)
				require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err), err.Error())
				require.Contains(t, mcpflow.ErrorMessage(err), tc.err)
				after, rerr := os.ReadFile(path)
				require.NoError(t, rerr)
				require.Equal(t, before, after, "a refused write leaves the file byte for byte")
				return
			}
			require.NoError(t, err)
			tc.verify(t, path)
		})
	}
}

func TestAdminPatchKeepsTheRest(t *testing.T) {
	t.Parallel()
	raw := `{"mcpServers": {"remote": {"transport": "sse", "url": "http://127.0.0.1:9/sse", "enabled": false, "x-extra": [1, 2]},
  "bad": {"type": "stdio", "command": "/bin/evil"}}, "middlewares": ["a:b"], "other": true}`
	a, path := newAdmin(t, raw)
	out, err := a.SetMCPServerEnabled(context.Background(), "test", "remote", true)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v))
	require.Equal(t, "sse", v["mcp_servers"].(map[string]any)["remote"].(map[string]any)["type"], "the answer shows the alias")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), `"transport": "sse"`)
	require.NotContains(t, string(b), `"type": "sse"`, "no type key is added")
	require.Contains(t, string(b), `"middlewares"`)
	require.Contains(t, string(b), `"x-extra"`)
	s := storedServer(t, path, "remote")
	require.Equal(t, true, s["enabled"])

	_, err = a.SetMCPServerEnabled(context.Background(), "test", "missing", true)
	require.Equal(t, mcpflow.ENotFound, mcpflow.ErrorCode(err))
	require.Equal(t, "MCP server 'missing' not found", mcpflow.ErrorMessage(err))

	before, _ := os.ReadFile(path)
	_, err = a.SetMCPServerEnabled(context.Background(), "test", "bad", true)
	require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err))
	after, _ := os.ReadFile(path)
	require.Equal(t, before, after)
	_, err = a.SetMCPServerEnabled(context.Background(), "test", "bad", false)
	require.NoError(t, err, "disabling is always allowed")
}

// 50 concurrent writes leave valid JSON, every secret intact, and never
// overlap.
func TestAdminConcurrentWrites(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, storedDoc)
	var inside, maxInside atomic.Int32
	beforeRenameMu.Lock()
	target, err := filepath.EvalSymlinks(path)
	require.NoError(t, err)
	beforeRename = func(p string) {
		if p != target {
			return // another test's file
		}
		n := inside.Add(1)
		for {
			m := maxInside.Load()
			if n <= m || maxInside.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // a wide window for an overlapping writer to show
		inside.Add(-1)
	}
	beforeRenameMu.Unlock()
	t.Cleanup(func() { beforeRenameMu.Lock(); beforeRename = nil; beforeRenameMu.Unlock() })
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Go(func() {
			if i%2 == 0 {
				_, err := a.SetMCPServerEnabled(context.Background(), "test", "web", i%4 == 0)
				errs <- err
				return
			}
			v, err := readView(a)
			if err != nil {
				errs <- err
				return
			}
			gh, ok := v["gh"].(map[string]any)
			if !ok {
				errs <- fmt.Errorf("no gh server in the view: %v", v)
				return
			}
			gh["description"] = strings.Repeat("x", i)
			errs <- put(t, a, v)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, maxInside.Load(), "writes were serialized")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, json.Valid(b))
	for _, secret := range []string{"sk-stored", "extra-secret", "nested-secret", "ak-1", "Bearer stored", "cs-stored", "rt-stored", "r-stored", "Bearer one", "hfc-secret", "$GITHUB_TOKEN"} {
		require.Contains(t, string(b), secret)
	}
}

func TestAdminAdd(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, storedDoc)
	body := `{"mcp_servers": {"new": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}`
	out, err := a.AddMCPServers(context.Background(), "test", []byte(body))
	require.NoError(t, err)
	require.Contains(t, string(out), `"new"`)
	require.NotNil(t, storedServer(t, path, "new"))
	require.NotNil(t, storedServer(t, path, "gh"), "siblings untouched")
	_, err = a.AddMCPServers(context.Background(), "test", []byte(`{"mcp_servers": {"gh": {"type": "http", "url": "http://x/mcp"}, "z": {"type": "http", "url": "http://x/mcp"}}}`))
	require.Equal(t, mcpflow.EConflict, mcpflow.ErrorCode(err))
	require.Equal(t, "MCP server 'gh' already exists", mcpflow.ErrorMessage(err))
	require.Nil(t, storedServer(t, path, "z"), "an add is all or nothing")
	_, err = a.AddMCPServers(context.Background(), "test", []byte(`{"mcp_servers": {"y": {"type": "http", "url": "http://x/mcp", "headers": {"A": "***"}}}}`))
	require.Equal(t, "Cannot set header 'A' to masked value '***'; provide a real value.", mcpflow.ErrorMessage(err))
	for _, bad := range []string{`{}`, `[]`, `{"mcp_servers": []}`, `{"mcp_servers": {"a": 1}}`, `{"mcp_servers": {}, "x": 1}`, `not json`} {
		_, err = a.AddMCPServers(context.Background(), "test", []byte(bad))
		require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err), bad)
	}
}

// A missing file is created by the first write.
func TestAdminCreatesTheFile(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, "")
	require.Empty(t, getView(t, a))
	require.NoError(t, put(t, a, map[string]any{"a": map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp"}}))
	require.NotNil(t, storedServer(t, path, "a"))
}

// The runtime resolves $VAR before it launches a server, so the policy
// screens what a placeholder resolves to as well: a "type" or "transport"
// that resolves to stdio, and args that resolve to an exec flag.
func TestAdminPolicyScreensResolvedPlaceholders(t *testing.T) {
	t.Parallel()
	env := mapEnv(map[string]string{"FLAG": "-c", "HTTP": "http"})
	for name, server := range map[string]map[string]any{
		"type unset":      {"type": "$UNSET", "command": "/bin/bash", "args": []any{"-c", "id"}},
		"transport unset": {"transport": "$UNSET", "command": "/bin/bash"},
		"resolved flag":   {"type": "stdio", "command": "npx", "args": []any{"$FLAG", "id"}},
	} {
		a, path := newAdmin(t, storedDoc)
		a.Env = env
		before, err := os.ReadFile(path)
		require.NoError(t, err)
		err = put(t, a, map[string]any{"bad": server})
		require.Error(t, err, name)
		require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err), name)
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, string(before), string(after), "%s: the file is untouched", name)
	}
	// A placeholder that resolves to a remote transport is not stdio.
	a, _ := newAdmin(t, storedDoc)
	a.Env = env
	require.NoError(t, put(t, a, map[string]any{"ok": map[string]any{"type": "$HTTP", "url": "http://127.0.0.1:9/mcp"}}))
}

// Validation runs with placeholders resolved; an error names the
// placeholder, never the value it resolved to.
func TestAdminErrorsNameNotShowEnvValues(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-SECRET-123"
	env := mapEnv(map[string]string{"OPENAI_API_KEY": secret})
	for _, server := range []map[string]any{
		{"type": "http", "url": "http://127.0.0.1:9/mcp", "tool_call_timeout": "$OPENAI_API_KEY"},
		{"type": "http", "url": "http://127.0.0.1:9/mcp", "enabled": "$OPENAI_API_KEY"},
		{"type": "$OPENAI_API_KEY", "url": "http://127.0.0.1:9/mcp"},
	} {
		a, _ := newAdmin(t, storedDoc)
		a.Env = env
		err := put(t, a, map[string]any{"x": server})
		require.Error(t, err)
		require.NotContains(t, err.Error(), secret)
		require.Contains(t, mcpflow.ErrorMessage(err), "the value of $OPENAI_API_KEY")
	}
}

// Reads take no file lock: they work where the lock file cannot be made
// (a read-only ConfigMap directory; here the lock path is a directory,
// which stops root too), while writes fail with a clear error.
func TestAdminReadsWithoutTheFileLock(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, storedDoc)
	require.NoError(t, os.Mkdir(filepath.Join(filepath.Dir(path), ".extensions_config.json.lock"), 0o700))
	view := getView(t, a)
	require.Contains(t, view, "gh")
	err := put(t, a, map[string]any{"web": map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp"}})
	require.Error(t, err)
	require.Equal(t, mcpflow.EInternal, mcpflow.ErrorCode(err))
	require.Contains(t, mcpflow.ErrorMessage(err), "Failed to update MCP configuration: open:")
}

// A PUT screens every stdio server of the body, disabled ones too, and
// reports the first violation in request order; OnChange runs only after a
// write that happened.
func TestAdminScreensInRequestOrderAndNotifiesOnlyOnWrites(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, storedDoc)
	changes := 0
	a.OnChange = func() { changes++ }
	body := `{"mcp_servers": {
		"first": {"type": "stdio", "command": "npx", "args": ["-e", "1"], "enabled": false},
		"second": {"type": "stdio", "command": "bash"}}}`
	_, err := a.ReplaceMCPServers(context.Background(), "test", []byte(body))
	require.Error(t, err)
	require.Equal(t, "MCP server 'first' passes '-e' to 'npx', which would run arbitrary code. Point the server at a package or module instead.", mcpflow.ErrorMessage(err))
	_, err = a.SetMCPServerEnabled(context.Background(), "test", "missing", true)
	require.Equal(t, mcpflow.ENotFound, mcpflow.ErrorCode(err))
	require.Zero(t, changes, "no write, no OnChange")

	_, err = a.SetMCPServerEnabled(context.Background(), "test", "web", false)
	require.NoError(t, err)
	require.Equal(t, 1, changes)
	require.Equal(t, false, storedServer(t, path, "web")["enabled"])
}

// "***" where no stored secret stands behind it is refused, naming the key.
func TestAdminRefusesAMaskedPlaceholderWithoutASecret(t *testing.T) {
	t.Parallel()
	a, _ := newAdmin(t, storedDoc)
	err := put(t, a, map[string]any{"new": map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp",
		"oauth": map[string]any{"token_url": "http://127.0.0.1:9/token", "client_id": "c", "client_secret": Masked}}})
	require.Error(t, err)
	require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err))
	require.Contains(t, mcpflow.ErrorMessage(err), "new.oauth.client_secret")
}

// Omitted routing and tools blocks are kept from the stored server.
func TestAdminKeepsOmittedRoutingAndTools(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, `{"mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:9/mcp",
		"routing": {"mode": "prefer", "priority": 5, "keywords": ["k"]},
		"tools": {"echo": {"routing": {"mode": "prefer", "priority": 1}}}}}}`)
	require.NoError(t, put(t, a, map[string]any{"web": map[string]any{"type": "http", "url": "http://127.0.0.1:9/other"}}))
	s := storedServer(t, path, "web")
	require.Equal(t, "http://127.0.0.1:9/other", s["url"])
	require.Equal(t, map[string]any{"mode": "prefer", "priority": 5.0, "keywords": []any{"k"}}, s["routing"])
	require.Contains(t, s["tools"], "echo")
}

// The audit line names what a write added, removed and changed (servers
// whose stored object differs), and never a value.
func TestAdminAuditNamesRealChanges(t *testing.T) {
	t.Parallel()
	a, _ := newAdmin(t, storedDoc)
	logs := &strings.Builder{}
	a.Log = slog.New(slog.NewTextHandler(logs, nil))
	view := getView(t, a)
	delete(view, "gh")
	view["web"].(map[string]any)["description"] = "new text"
	view["added"] = map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp"}
	require.NoError(t, put(t, a, view))
	require.Contains(t, logs.String(), "added=[added] removed=[gh] changed=[web]")

	// The first round trip writes the defaults GET filled in for the new
	// server (a real change of its stored object); the next changes nothing.
	require.NoError(t, put(t, a, getView(t, a)))
	logs.Reset()
	require.NoError(t, put(t, a, getView(t, a)))
	require.Contains(t, logs.String(), "added=[] removed=[] changed=[]", "an unchanged round trip changes nothing")
	require.NotContains(t, logs.String(), "Bearer stored")
}
