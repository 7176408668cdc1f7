package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeTOML(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "temporal.toml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

// The layers, lowest first: built-in defaults, the temporal.toml profile,
// TEMPORAL_* variables, mcpflow's keys.
func TestClientOptionsLayers(t *testing.T) {
	toml := writeTOML(t, `
[profile.default]
address = "profile-default:7233"
namespace = "ns-default"

[profile.cloud]
address = "ns.acct.tmprl.cloud:7233"
namespace = "ns.acct"
api_key = "profile-key"
`)
	missing := filepath.Join(t.TempDir(), "none.toml")
	tests := []struct {
		name          string
		c             Connection
		env           map[string]string
		addr, ns      string
		tls, apiKey   bool
		profile       string
		wantErrSubstr string
	}{
		{name: "nothing set: built-in defaults", env: map[string]string{"TEMPORAL_CONFIG_FILE": missing},
			addr: DefaultAddress, ns: DefaultNamespace},
		{name: "default profile", env: map[string]string{"TEMPORAL_CONFIG_FILE": toml},
			addr: "profile-default:7233", ns: "ns-default", profile: "default"},
		{name: "profile named by TEMPORAL_PROFILE, API key turns TLS on",
			env:  map[string]string{"TEMPORAL_CONFIG_FILE": toml, "TEMPORAL_PROFILE": "cloud"},
			addr: "ns.acct.tmprl.cloud:7233", ns: "ns.acct", tls: true, apiKey: true, profile: "cloud"},
		{name: "TEMPORAL_* beat the profile",
			env:  map[string]string{"TEMPORAL_CONFIG_FILE": toml, "TEMPORAL_ADDRESS": "env:7233", "TEMPORAL_NAMESPACE": "env-ns"},
			addr: "env:7233", ns: "env-ns", profile: "default"},
		{name: "mcpflow keys beat TEMPORAL_* and the profile",
			c:    Connection{Address: "key:7233", Namespace: "key-ns", ConfigFile: toml, Profile: "cloud"},
			env:  map[string]string{"TEMPORAL_ADDRESS": "env:7233", "TEMPORAL_NAMESPACE": "env-ns"},
			addr: "key:7233", ns: "key-ns", tls: true, apiKey: true, profile: "cloud"},
		{name: "TEMPORAL_TLS=false turns the API key's TLS off",
			env:  map[string]string{"TEMPORAL_CONFIG_FILE": missing, "TEMPORAL_API_KEY": "k", "TEMPORAL_TLS": "false"},
			addr: DefaultAddress, ns: DefaultNamespace, apiKey: true},
		{name: "tls key on", c: Connection{TLS: true}, env: map[string]string{"TEMPORAL_CONFIG_FILE": missing, "TEMPORAL_TLS": "false"},
			addr: DefaultAddress, ns: DefaultNamespace, tls: true},
		{name: "a named profile must exist", c: Connection{ConfigFile: toml, Profile: "nope"},
			wantErrSubstr: "unable to find profile nope"},
		{name: "a named config file must exist", c: Connection{ConfigFile: missing},
			wantErrSubstr: "temporal.config_file: stat " + missing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts, sum, err := ClientOptions(tc.c, mapEnv(tc.env))
			if tc.wantErrSubstr != "" {
				require.ErrorContains(t, err, tc.wantErrSubstr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.addr, opts.HostPort)
			require.Equal(t, tc.ns, opts.Namespace)
			require.Equal(t, tc.addr, sum.Address)
			require.Equal(t, tc.ns, sum.Namespace)
			require.Equal(t, tc.tls, opts.ConnectionOptions.TLS != nil && !opts.ConnectionOptions.TLSDisabled)
			require.Equal(t, tc.tls, sum.TLS)
			require.Equal(t, tc.apiKey, opts.Credentials != nil)
			require.Equal(t, tc.apiKey, sum.APIKey)
			require.Equal(t, tc.profile, sum.Profile)
		})
	}
}

func TestClientOptionsTLSFiles(t *testing.T) {
	files := testenv.NewTLSFiles(t)
	env := mapEnv(map[string]string{"TEMPORAL_CONFIG_FILE": filepath.Join(t.TempDir(), "none.toml")})

	opts, sum, err := ClientOptions(Connection{Address: "127.0.0.1:1", TLSCAFile: files.CA, TLSServerName: "temporal.test"}, env)
	require.NoError(t, err)
	tc := opts.ConnectionOptions.TLS
	require.NotNil(t, tc)
	require.NotNil(t, tc.RootCAs)
	require.Equal(t, "temporal.test", tc.ServerName)
	require.Empty(t, tc.Certificates)
	require.True(t, sum.TLS)
	require.False(t, sum.MTLS)

	opts, sum, err = ClientOptions(Connection{TLSCertFile: files.ClientCert, TLSKeyFile: files.ClientKey}, env)
	require.NoError(t, err)
	require.Len(t, opts.ConnectionOptions.TLS.Certificates, 1)
	require.Nil(t, opts.ConnectionOptions.TLS.RootCAs) // system roots
	require.True(t, sum.MTLS)

	// A path from mcpflow replaces certificate data from the environment
	// (envconfig refuses both).
	pem, err := os.ReadFile(files.ClientCert)
	require.NoError(t, err)
	envData := mapEnv(map[string]string{"TEMPORAL_CONFIG_FILE": filepath.Join(t.TempDir(), "none.toml"),
		"TEMPORAL_TLS_CLIENT_CERT_DATA": string(pem), "TEMPORAL_TLS_CLIENT_KEY_DATA": "not a key"})
	_, _, err = ClientOptions(Connection{TLSCertFile: files.ClientCert, TLSKeyFile: files.ClientKey}, envData)
	require.NoError(t, err)

	_, _, err = ClientOptions(Connection{TLSCAFile: filepath.Join(t.TempDir(), "absent.pem")}, env)
	require.ErrorContains(t, err, "failed reading server CA cert path")
}

// Nothing secret reaches the summary, its log attributes or an error.
func TestClientOptionsKeepSecrets(t *testing.T) {
	const key = "sk-temporal-4c1d-secret"
	toml := writeTOML(t, `
[profile.default]
api_key = "`+key+`-profile"
`)
	_, sum, err := ClientOptions(Connection{APIKey: key, ConfigFile: toml}, mapEnv(nil))
	require.NoError(t, err)
	require.True(t, sum.APIKey)
	require.NotContains(t, fmt.Sprintf("%+v %v", sum, sum.LogAttrs()), key)
	require.Contains(t, sum.LogAttrs(), "api_key")

	// A bad certificate pair: the error names the file, not its content.
	files := testenv.NewTLSFiles(t)
	_, _, err = ClientOptions(Connection{APIKey: key, TLSCertFile: files.ClientCert, TLSKeyFile: files.CA}, mapEnv(nil))
	require.Error(t, err)
	require.NotContains(t, err.Error(), key)
	require.NotContains(t, err.Error(), "BEGIN")
}

func TestWebUILink(t *testing.T) {
	require.Empty(t, WebUILink("", "default", "mcp-task-1"))
	require.Equal(t, "http://127.0.0.1:8233/namespaces/default/workflows/mcp-task-1", WebUILink("http://127.0.0.1:8233/", "default", "mcp-task-1"))
	require.Equal(t, "https://cloud.temporal.io/namespaces/mcpflow.a1b2c/workflows/mcp-task-1",
		WebUILink("https://cloud.temporal.io", "mcpflow.a1b2c", "mcp-task-1"))
	require.Equal(t, "https://ui.example/t/namespaces/a%2Fb/workflows/x%20y", WebUILink("https://ui.example/t", "a/b", "x y"))
}
