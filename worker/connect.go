package worker

import (
	"cmp"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
)

// Built-in connection defaults, used when neither mcpflow's keys, the
// TEMPORAL_* variables nor a temporal.toml profile set a value.
const (
	DefaultAddress   = "127.0.0.1:7233"
	DefaultNamespace = "default"
)

// Connection holds mcpflow's own Temporal connection keys (config.yaml
// temporal.*); an empty field is unset and leaves the value to Temporal's
// client configuration.
type Connection struct {
	Address, Namespace string
	// Profile and ConfigFile choose the temporal.toml profile; empty: the
	// TEMPORAL_PROFILE and TEMPORAL_CONFIG_FILE variables, then the CLI's
	// defaults.
	Profile, ConfigFile string
	// TLS turns TLS on; any of the TLS* files, the server name or an API key
	// turn it on too.
	TLS                                bool
	TLSCAFile, TLSCertFile, TLSKeyFile string
	TLSServerName                      string
	APIKey                             string // a secret
}

// ConnectionSummary describes a resolved connection without its secrets,
// for the start-up log line.
type ConnectionSummary struct {
	Address, Namespace string
	TLS                bool   // TLS is on
	MTLS               bool   // a client certificate is presented
	APIKey             bool   // an API key is sent
	Profile            string // the temporal.toml profile applied; "" when none was found
	BuildID            string // the worker's build id under worker versioning; "" when unversioned
}

// LogAttrs returns the summary as slog key-value pairs.
func (s ConnectionSummary) LogAttrs() []any {
	auth := "none"
	switch {
	case s.APIKey && s.MTLS:
		auth = "api_key+mtls"
	case s.APIKey:
		auth = "api_key"
	case s.MTLS:
		auth = "mtls"
	}
	attrs := []any{"temporal", s.Address, "namespace", s.Namespace, "temporal_tls", s.TLS, "temporal_auth", auth}
	if s.Profile != "" {
		attrs = append(attrs, "temporal_profile", s.Profile)
	}
	if s.BuildID != "" {
		attrs = append(attrs, "build_id", s.BuildID)
	}
	return attrs
}

// ClientOptions builds the Temporal client options the way the temporal CLI
// finds its server, with mcpflow's keys on top: the temporal.toml profile
// (envconfig), then the TEMPORAL_* environment variables, then c; what is
// still unset takes DefaultAddress and DefaultNamespace. env is where
// TEMPORAL_* are read (nil: the process environment). The caller adds the
// logger, metrics and interceptors.
//
// Errors name files and keys, never a key or certificate's content.
func ClientOptions(c Connection, env func(string) (string, bool)) (client.Options, ConnectionSummary, error) {
	lookup := envLookup(env)
	if c.ConfigFile != "" {
		if _, err := os.Stat(c.ConfigFile); err != nil {
			return client.Options{}, ConnectionSummary{}, fmt.Errorf("temporal.config_file: %w", err)
		}
	}
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		ConfigFilePath:    c.ConfigFile,
		ConfigFileProfile: c.Profile,
		EnvLookup:         lookup,
	})
	if err != nil {
		return client.Options{}, ConnectionSummary{}, fmt.Errorf("temporal client configuration: %w", err)
	}
	sum := ConnectionSummary{Profile: appliedProfile(c, lookup)}

	prof.Address = cmp.Or(c.Address, prof.Address, DefaultAddress)
	prof.Namespace = cmp.Or(c.Namespace, prof.Namespace, DefaultNamespace)
	prof.APIKey = cmp.Or(c.APIKey, prof.APIKey)
	if c.TLS || c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != "" || c.TLSServerName != "" {
		if prof.TLS == nil {
			prof.TLS = &envconfig.ClientConfigTLS{}
		}
		t := prof.TLS
		t.Disabled = false
		if c.TLSCAFile != "" {
			t.ServerCACertPath, t.ServerCACertData = c.TLSCAFile, nil
		}
		if c.TLSCertFile != "" {
			t.ClientCertPath, t.ClientCertData = c.TLSCertFile, nil
			t.ClientKeyPath, t.ClientKeyData = c.TLSKeyFile, nil
		}
		t.ServerName = cmp.Or(c.TLSServerName, t.ServerName)
	}
	opts, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, ConnectionSummary{}, fmt.Errorf("temporal client configuration: %w", err)
	}
	sum.Address, sum.Namespace = opts.HostPort, opts.Namespace
	sum.TLS = opts.ConnectionOptions.TLS != nil && !opts.ConnectionOptions.TLSDisabled
	sum.MTLS = sum.TLS && len(opts.ConnectionOptions.TLS.Certificates) > 0
	sum.APIKey = prof.APIKey != ""
	return opts, sum, nil
}

// appliedProfile names the temporal.toml profile LoadClientConfigProfile
// used, or "" when there was no file or no such profile.
func appliedProfile(c Connection, env envconfig.EnvLookup) string {
	conf, err := envconfig.LoadClientConfig(envconfig.LoadClientConfigOptions{ConfigFilePath: c.ConfigFile, EnvLookup: env})
	if err != nil {
		return ""
	}
	name := c.Profile
	if name == "" {
		name, _ = env.LookupEnv("TEMPORAL_PROFILE")
	}
	if name == "" {
		name = envconfig.DefaultConfigFileProfile
	}
	if conf.Profiles[name] == nil {
		return ""
	}
	return name
}

// envLookup adapts a lookup function to envconfig's interface. Environ
// lists the process's TEMPORAL_GRPC_META_* names as env sees them.
func envLookup(env func(string) (string, bool)) envconfig.EnvLookup {
	if env == nil {
		return envconfig.EnvLookupOS
	}
	return funcEnv(env)
}

type funcEnv func(string) (string, bool)

func (f funcEnv) LookupEnv(k string) (string, bool) { return f(k) }

func (f funcEnv) Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "TEMPORAL_GRPC_META_") {
			continue
		}
		if v, ok := f(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// WebUILink returns the Temporal Web UI page of a workflow (its latest
// run): base is the UI's URL (temporal.web_ui_url), "" when there is none.
func WebUILink(base, namespace, workflowID string) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/namespaces/" + url.PathEscape(namespace) + "/workflows/" + url.PathEscape(workflowID)
}
