package config

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mcpflow/mcpflow"
)

// EnvPrefix starts every service-config environment variable.
const EnvPrefix = "MCPFLOW_"

// Database backends.
const (
	BackendSQLite   = "sqlite"
	BackendPostgres = "postgres"
)

// Service is the service configuration (config.yaml). Every key can be
// overridden by an environment variable MCPFLOW_<SECTION>_<KEY> (upper-cased,
// e.g. MCPFLOW_MCP_TASKS_POLL_INTERVAL_SECONDS; top-level keys are
// MCPFLOW_<KEY>, e.g. MCPFLOW_EXTENSIONS_CONFIG). Precedence: environment,
// then file, then DefaultService. EnvKeys lists every variable.
type Service struct {
	Server   ServerSection   `yaml:"server"`
	Database DatabaseSection `yaml:"database"`
	Temporal TemporalSection `yaml:"temporal"`
	// ExtensionsConfig is the path of extensions_config.json; empty means
	// search mode (see Locate). Relative paths in config.yaml are resolved
	// against the file's directory.
	ExtensionsConfig string               `yaml:"extensions_config"`
	Workspace        WorkspaceSection     `yaml:"workspace"`
	MCPTasks         MCPTasksSection      `yaml:"mcp_tasks"`
	ToolSearch       ToolSearchSection    `yaml:"tool_search"`
	Auth             AuthSection          `yaml:"auth"`
	Notifications    NotificationsSection `yaml:"notifications"`
	Audit            AuditSection         `yaml:"audit"`

	// Path is the absolute path of the loaded config.yaml, "" when none.
	Path string `yaml:"-"`
	// Dir is the directory of Path, "" when no file was loaded.
	Dir string `yaml:"-"`
}

// ServerSection configures the HTTP API.
type ServerSection struct {
	// Addr is host:port to listen on. Default "127.0.0.1:8080".
	Addr string `yaml:"addr"`
	// WorkerAddr is host:port an `mcpflow worker` process serves
	// /healthz, /readyz and /metrics on (serve and dev use Addr). Default
	// "127.0.0.1:9090", so a serve and a worker can share a host and a
	// config; port 0 picks a free one.
	WorkerAddr string `yaml:"worker_addr"`
	// ShutdownTimeoutSeconds bounds graceful shutdown, 1..600. Default 20.
	ShutdownTimeoutSeconds int `yaml:"shutdown_timeout_seconds"`
	// MaxBodyBytes caps a request body, 1024..67108864 (64 MiB). Default
	// 1048576 (1 MiB); a larger body is answered 413.
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// MaxContentBytes bounds what an ordinary tool call's result and a
	// resources/read pass to their caller (REST and MCP), 1024..67108864
	// (64 MiB). Default 8388608 (8 MiB). A larger answer is cut where the
	// caller sees it (mcpflow.ToolResult.Bound, mcpflow.BoundResourceRead);
	// a larger prompts/get fails. Durable task results have their own
	// bound (mcp_tasks.max_result_bytes).
	MaxContentBytes int `yaml:"max_content_bytes"`
	// MaxConcurrentCallsPerUser caps one user's tool calls in flight in this
	// process, 1..10000. Default 32; more are answered 429 with Retry-After.
	MaxConcurrentCallsPerUser int `yaml:"max_concurrent_calls_per_user"`
	// MaxWaitsPerUser caps one user's open waits in this process, counted
	// together: events long polls (wait=) and the MCP endpoint's waiting
	// tasks/result and tasks/cancel, 1..10000. Default 32; a long poll or
	// tasks/result beyond it is answered 429 with Retry-After, a
	// tasks/cancel beyond it is sent and answered without waiting.
	MaxWaitsPerUser int `yaml:"max_waits_per_user"`
	// MaxMCPStreamsPerUser caps one user's open MCP GET streams in this
	// process, 1..10000. Default 32; more are answered 429 with
	// Retry-After (a session reconnecting its own stream replaces it and
	// needs no second slot).
	MaxMCPStreamsPerUser int `yaml:"max_mcp_streams_per_user"`
	// MaxMCPSessionsPerUser caps one user's stored MCP sessions, across
	// every replica (they live in the database), 1..10000. Default 100; an
	// initialize beyond it ends the user's least recently used sessions
	// (uses are recorded at most once an hour), whose clients get 404 and
	// initialize again.
	MaxMCPSessionsPerUser int `yaml:"max_mcp_sessions_per_user"`
	// HTTP server timeouts in seconds: reading a request's headers
	// (1..300, default 10), a whole request (1..3600, default 60), writing
	// the answer (1..86400, default 900: the connection is cut this long
	// after the request was read, while the handler is not cancelled, so
	// keep it above the longest tool call and the 60 s events long poll),
	// and keeping an idle connection (1..3600, default 120).
	ReadHeaderTimeoutSeconds int `yaml:"read_header_timeout_seconds"`
	ReadTimeoutSeconds       int `yaml:"read_timeout_seconds"`
	WriteTimeoutSeconds      int `yaml:"write_timeout_seconds"`
	IdleTimeoutSeconds       int `yaml:"idle_timeout_seconds"`
	// AllowedOrigins lists the browser origins ("https://app.example.com",
	// scheme://host[:port]) whose requests the MCP endpoint (/mcp) accepts.
	// A request with any other Origin header is refused with 403 (DNS
	// rebinding protection); requests without one (every non-browser MCP
	// client) pass. Default empty.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// PublicURL is the origin clients reach mcpflow at
	// ("https://mcpflow.example.com": scheme://host[:port], no path), its
	// resource URI as an OAuth 2.1 protected resource: the base of the
	// Protected Resource Metadata and of the audiences an identity
	// provider's token must carry. Required with auth.oidc; http only for a
	// loopback host. Default empty.
	PublicURL string `yaml:"public_url"`
}

// Seconds converts a number of seconds of the config to a duration.
func Seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// DatabaseSection configures the task and thread store.
type DatabaseSection struct {
	// Backend is "sqlite" (default) or "postgres".
	Backend string `yaml:"backend"`
	// DSN is the SQLite file path (relative to config.yaml when set there;
	// ":memory:" and "file:" URIs are left as they are) or a PostgreSQL URL.
	// Default "mcpflow.db".
	DSN string `yaml:"dsn"`
}

// TemporalSection configures the Temporal client and worker.
//
// The connection keys (address, namespace, tls*, api_key) are layered over
// Temporal's own client configuration, the one the temporal CLI reads: a
// key set here (or as MCPFLOW_TEMPORAL_*) wins over the TEMPORAL_*
// environment variables, which win over the temporal.toml profile; what
// none of them sets takes the built-in default (127.0.0.1:7233, namespace
// "default", no TLS). worker.ClientOptions does the layering.
type TemporalSection struct {
	// Address is the frontend's host:port. Default: the profile's, else
	// TEMPORAL_ADDRESS, else "127.0.0.1:7233".
	Address string `yaml:"address"`
	// Namespace default: the profile's, else TEMPORAL_NAMESPACE, else "default".
	Namespace string `yaml:"namespace"`
	TaskQueue string `yaml:"task_queue"` // default "mcpflow-tasks"
	// Profile names the temporal.toml profile (default: TEMPORAL_PROFILE,
	// else "default"; a profile named explicitly must exist).
	Profile string `yaml:"profile"`
	// ConfigFile is the temporal.toml path (default: TEMPORAL_CONFIG_FILE,
	// else the CLI's ~/.config/temporalio/temporal.toml; a missing default
	// file is no error).
	ConfigFile string `yaml:"config_file"`
	// TLS turns TLS on with the system's roots when no tls_* file says more.
	// TLS is also on when any tls_* key or an API key is set.
	TLS bool `yaml:"tls"`
	// TLSCAFile is a PEM file of the CA that signed the server's certificate
	// (default: the system roots).
	TLSCAFile string `yaml:"tls_ca_file"`
	// TLSCertFile and TLSKeyFile are the client certificate and key for
	// mTLS; both or neither.
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`
	// TLSServerName overrides the name the server certificate is checked
	// against (SNI), for an address that is not the certificate's name.
	TLSServerName string `yaml:"tls_server_name"`
	// APIKey is sent as "authorization: Bearer <key>" (Temporal Cloud API
	// keys); a secret: never logged or printed.
	APIKey string `yaml:"api_key"`

	// WebUIURL is the base URL of the Temporal Web UI (e.g.
	// http://127.0.0.1:8233, https://cloud.temporal.io): when set, a task's
	// detail, the CLI and the MCP endpoint's task status message carry the
	// link to the task's workflow there. Default: no link.
	WebUIURL string `yaml:"web_ui_url"`

	// WorkerVersioning turns on Temporal's Worker Versioning: the worker
	// polls as version (deployment_name, build_id) of a worker deployment,
	// and task workflows are AutoUpgrade (see docs/operations.md). Default
	// false: unversioned workers.
	WorkerVersioning bool `yaml:"worker_versioning"`
	// DeploymentName names the worker deployment. Default "mcpflow".
	DeploymentName string `yaml:"deployment_name"`
	// BuildID is this worker's build id. Default: the binary's version (its
	// module version or VCS revision, stamped by go build).
	BuildID string `yaml:"build_id"`
	// Promote says when a versioned worker makes its own version the
	// deployment's current one: "newest" (default: when no version of the
	// deployment was created after it), "first" (only when the deployment
	// has no current version yet) or "never" (the operator promotes with
	// temporal worker deployment set-current-version).
	Promote string `yaml:"promote"`
}

// Promote policies of temporal.promote.
const (
	PromoteNewest = "newest"
	PromoteFirst  = "first"
	PromoteNever  = "never"
)

// WorkspaceSection configures per-thread workspaces
// (<root>/users/<user>/threads/<thread>/user-data/...).
type WorkspaceSection struct {
	// Root is the workspace base directory (relative to config.yaml when set
	// there). Default ".mcpflow/workspace".
	Root string `yaml:"root"`
}

// MCPTasksSection holds DeerFlow's nine durable-task keys with their defaults
// and bounds (spec §1.8). It is read once at startup.
type MCPTasksSection struct {
	// Enabled turns durable MCP tasks on. Default false.
	Enabled bool `yaml:"enabled"`
	// PollIntervalSeconds is the normal status poll interval, 1..300. Default 5.
	PollIntervalSeconds int `yaml:"poll_interval_seconds"`
	// LeaseSeconds, 5..3600 (default 120), replaces DeerFlow's SQL poll lease:
	// it maps to the timeout of one remote call attempt of a task activity (a
	// worker that dies mid-call loses the attempt after this long, and Temporal
	// retries it on another worker).
	LeaseSeconds int `yaml:"lease_seconds"`
	// MaxConcurrentPolls, 1..64 (default 8), bounds the worker's concurrently
	// executing activities: 32 per unit (an activity runs only for the length
	// of one remote call or row write; waits between polls hold no slot).
	MaxConcurrentPolls int `yaml:"max_concurrent_polls"`
	// MaxPollBackoffSeconds caps the error backoff, 1..3600. Default 300.
	MaxPollBackoffSeconds int `yaml:"max_poll_backoff_seconds"`
	// InputRequiredPollIntervalSeconds is the minimum poll interval while a
	// task is input_required, 5..3600. Default 60.
	InputRequiredPollIntervalSeconds int `yaml:"input_required_poll_interval_seconds"`
	// TrackingDegradedAfterErrors marks tracking degraded after this many
	// consecutive poll errors, 1..100. Default 3.
	TrackingDegradedAfterErrors int `yaml:"tracking_degraded_after_errors"`
	// MaxResultBytes bounds a stored result, 1024..10485760. Default 65536.
	MaxResultBytes int `yaml:"max_result_bytes"`
	// ResultPreviewMaxChars bounds the result preview, 64..100000. Default 2000.
	ResultPreviewMaxChars int `yaml:"result_preview_max_chars"`
	// SecretsKey keys the encryption of request-scoped secrets that a
	// durable submit carries through Temporal (headers_from_context). serve
	// and worker must share it; mcpflow dev makes up a key of its own when it
	// is empty. Not one of DeerFlow's keys.
	SecretsKey string `yaml:"secrets_key"`
	// IdempotentSubmitServers names task servers whose submit tool answers a
	// repeated idempotency key (_meta "io.mcpflow/idempotency-key", the local
	// task id) with the task it already started. A submit whose worker died
	// after sending it is then sent again instead of answering "outcome
	// unknown". Not one of DeerFlow's keys.
	IdempotentSubmitServers []string `yaml:"idempotent_submit_servers"`
	// MaxRunningTasksPerUser caps one user's durable tasks that have not
	// ended (submitted, working, input_required): a submit reserves one of
	// the user's slots in the database (across replicas) before anything is
	// submitted, and one more answers 429. 1..1000000, default 100. Not one
	// of DeerFlow's keys.
	MaxRunningTasksPerUser int `yaml:"max_running_tasks_per_user"`
	// MaxPinnedSessionsPerUser caps the stdio sessions one user's running
	// durable tasks hold pinned in one worker (a pinned session cannot be
	// evicted while its tasks run, for up to 25 h): a submit that would pin
	// one more is refused with 429 before it reaches the server. 1..100000,
	// default 16 (the pool holds 256). Not one of DeerFlow's keys.
	MaxPinnedSessionsPerUser int `yaml:"max_pinned_sessions_per_user"`
}

// PollInterval returns poll_interval_seconds as a duration.
func (m MCPTasksSection) PollInterval() time.Duration {
	return time.Duration(m.PollIntervalSeconds) * time.Second
}

// Lease returns lease_seconds as a duration: the start-to-close timeout of
// one task activity attempt.
func (m MCPTasksSection) Lease() time.Duration {
	return time.Duration(m.LeaseSeconds) * time.Second
}

// MaxPollBackoff returns max_poll_backoff_seconds as a duration.
func (m MCPTasksSection) MaxPollBackoff() time.Duration {
	return time.Duration(m.MaxPollBackoffSeconds) * time.Second
}

// InputRequiredPollInterval returns input_required_poll_interval_seconds as a duration.
func (m MCPTasksSection) InputRequiredPollInterval() time.Duration {
	return time.Duration(m.InputRequiredPollIntervalSeconds) * time.Second
}

// ToolSearchSection is accepted for DeerFlow compatibility.
type ToolSearchSection struct {
	Enabled bool `yaml:"enabled"` // default false
	// AutoPromoteTopK is clamped to 1..5 (not an error). Default 3.
	AutoPromoteTopK int `yaml:"auto_promote_top_k"`
}

// AuthSection holds the bearer tokens the API accepts. Tokens may be given in
// clear or as the lower- or upper-case hex SHA-256 of the token.
type AuthSection struct {
	AdminTokens      []string `yaml:"admin_tokens"`
	AdminTokenSHA256 []string `yaml:"admin_token_sha256"`
	// Users from the environment: MCPFLOW_AUTH_USERS="alice:<token>,bob:sha256:<hex>".
	Users []User `yaml:"users"`
	// OIDC lists the identity providers whose access tokens are accepted
	// beside the static tokens (MCP authorization). From the environment:
	// MCPFLOW_AUTH_OIDC holding the list as JSON (or YAML flow style).
	OIDC []OIDCProvider `yaml:"oidc"`
}

// OIDCProvider is one identity provider of auth.oidc: an OpenID issuer
// whose JWT access tokens are verified against its published keys. A key
// left unset (0, "" or empty) keeps its zero value here; the verifier
// (package oidcauth) applies the default named below.
type OIDCProvider struct {
	// Name names the provider in logs and errors (1..64 of A-Z a-z 0-9 . _ -).
	Name string `yaml:"name"`
	// Issuer is the exact "iss" of its tokens; discovery is read from
	// Issuer + "/.well-known/openid-configuration". https, or http for a
	// loopback host.
	Issuer string `yaml:"issuer"`
	// JWKSURL skips discovery and reads the keys from here. Default empty.
	JWKSURL string `yaml:"jwks_url"`
	// Audiences are accepted besides mcpflow's resource URIs (server.public_url,
	// its /mcp and /mcp/threads/{id}), for providers that cannot put a URL in
	// "aud" (an Auth0 API identifier, an Entra "api://…" id). Default empty.
	Audiences []string `yaml:"audiences"`
	// Algorithms allowed for signatures (asymmetric only: RS*, PS*, ES*,
	// EdDSA). Default all of them.
	Algorithms []string `yaml:"algorithms"`
	// ClockSkewSeconds tolerated on exp/nbf, 1..300; 0 means the default,
	// 60.
	ClockSkewSeconds int `yaml:"clock_skew_seconds"`
	// UserClaim holds the user id. Default "sub".
	UserClaim string `yaml:"user_claim"`
	// UserPrefix is put before every user id of this provider, so two
	// providers (or a provider and a static user) cannot share an id.
	// Default empty. Unless ShareUserIDs is set, it must not start
	// another provider's prefix (nor be one's start: "" starts every
	// prefix), and no static user id may start with it.
	UserPrefix string `yaml:"user_prefix"`
	// ShareUserIDs lets the ids of this provider's users be those of
	// other providers' users or of static users (a user "alice" of each
	// is then one user: threads, tasks, sessions). A pair of providers
	// shares ids only when both set it. Default false.
	ShareUserIDs bool `yaml:"share_user_ids"`
	// RequiredScopes must all be in a token (403 insufficient_scope
	// otherwise). Default empty.
	RequiredScopes []string `yaml:"required_scopes"`
	// AdvertisedScopes are named to hosts besides RequiredScopes (in the
	// Protected Resource Metadata's scopes_supported and the challenges'
	// scope), so that they ask for them, but no token needs them: e.g.
	// offline_access, for a refresh token. Default empty.
	AdvertisedScopes []string `yaml:"advertised_scopes"`
	// AdminScope makes a token with this scope an admin's; or AdminClaim
	// (a string or list claim such as "groups" or "roles") holding one of
	// AdminValues. Default: no admins from this provider.
	AdminScope  string   `yaml:"admin_scope"`
	AdminClaim  string   `yaml:"admin_claim"`
	AdminValues []string `yaml:"admin_values"`
	// JWKSMinRefreshSeconds: a token with an unknown key id refetches the
	// keys at most this often, 1..3600; 0 means the default, 10.
	JWKSMinRefreshSeconds int `yaml:"jwks_min_refresh_seconds"`
	// JWKSMaxAgeSeconds is the longest the keys are used before they are
	// fetched again (the key set's Cache-Control max-age when shorter, but
	// not under jwks_min_refresh_seconds), 1..86400; 0 means the default,
	// 300. A key the provider withdraws stops verifying tokens (cached
	// ones too) within this long.
	JWKSMaxAgeSeconds int `yaml:"jwks_max_age_seconds"`
	// IntrospectionClientID and IntrospectionClientSecret are mcpflow's
	// credentials at the provider's token introspection endpoint (RFC
	// 7662, HTTP Basic): with them, access tokens that are not JWTs are
	// checked there. At most one provider may have them (an opaque token
	// does not say whose it is). The secret is never logged nor shown.
	// Default empty: opaque tokens are refused.
	IntrospectionClientID     string `yaml:"introspection_client_id"`
	IntrospectionClientSecret string `yaml:"introspection_client_secret"`
	// IntrospectionURL is the introspection endpoint. Default: the
	// discovery document's introspection_endpoint.
	IntrospectionURL string `yaml:"introspection_url"`
	// IntrospectJWTs checks this provider's JWTs by introspection too
	// rather than with its keys (Keycloak's lightweight access tokens,
	// Okta's org authorization server). Default false.
	IntrospectJWTs bool `yaml:"introspect_jwts"`
	// IntrospectionCacheSeconds is the longest an active answer is reused
	// (never past the token's exp; a token revoked at the provider is
	// still accepted that long), 1..3600; 0 means the default, 60.
	IntrospectionCacheSeconds int `yaml:"introspection_cache_seconds"`
}

// User is one API user. Exactly one of Token and TokenSHA256 is set.
type User struct {
	ID          string `yaml:"id"`
	Token       string `yaml:"token"`
	TokenSHA256 string `yaml:"token_sha256"`
}

// NotificationsSection configures the optional signed webhook.
type NotificationsSection struct {
	// WebhookURL, if set, is an absolute http(s) URL events are POSTed to.
	WebhookURL string `yaml:"webhook_url"`
	// WebhookSecret keys the X-Mcpflow-Signature HMAC-SHA256.
	WebhookSecret string `yaml:"webhook_secret"`
}

// AuditSection configures the audit log (off by default).
type AuditSection struct {
	// Enabled records every tool call, task cancel and answer, and
	// change of the servers or policies. Default false.
	Enabled bool `yaml:"enabled"`
	// RetentionDays deletes records older than this many days (0: keep
	// them). Default 90.
	RetentionDays int `yaml:"retention_days"`
	// QueueSize bounds the records waiting to be written; a full queue
	// drops records, counted in mcpflow_audit_records_total. Default 10000.
	QueueSize int `yaml:"queue_size"`
	// FlushIntervalMS is how often queued records are written, and so what
	// a kill -9 can lose at most. Default 200.
	FlushIntervalMS int `yaml:"flush_interval_ms"`
}

// ShutdownTimeout returns shutdown_timeout_seconds as a duration.
func (s ServerSection) ShutdownTimeout() time.Duration {
	return time.Duration(s.ShutdownTimeoutSeconds) * time.Second
}

// DefaultService returns the built-in defaults.
func DefaultService() Service {
	return Service{
		Server: ServerSection{Addr: "127.0.0.1:8080", WorkerAddr: "127.0.0.1:9090", ShutdownTimeoutSeconds: 20, MaxBodyBytes: 1 << 20, MaxContentBytes: mcpflow.DefaultMaxContentBytes,
			MaxConcurrentCallsPerUser: 32, MaxWaitsPerUser: 32, MaxMCPStreamsPerUser: 32, MaxMCPSessionsPerUser: 100,
			ReadHeaderTimeoutSeconds: 10, ReadTimeoutSeconds: 60,
			WriteTimeoutSeconds: 900, IdleTimeoutSeconds: 120},
		Database:  DatabaseSection{Backend: BackendSQLite, DSN: "mcpflow.db"},
		Temporal:  TemporalSection{TaskQueue: "mcpflow-tasks", DeploymentName: "mcpflow", Promote: PromoteNewest},
		Workspace: WorkspaceSection{Root: ".mcpflow/workspace"},
		Audit:     AuditSection{RetentionDays: 90, QueueSize: 10000, FlushIntervalMS: 200},
		MCPTasks: MCPTasksSection{
			Enabled:                          false,
			PollIntervalSeconds:              5,
			LeaseSeconds:                     120,
			MaxConcurrentPolls:               8,
			MaxPollBackoffSeconds:            300,
			InputRequiredPollIntervalSeconds: 60,
			TrackingDegradedAfterErrors:      3,
			MaxResultBytes:                   65536,
			ResultPreviewMaxChars:            2000,
			MaxRunningTasksPerUser:           100,
			MaxPinnedSessionsPerUser:         16,
		},
		ToolSearch: ToolSearchSection{Enabled: false, AutoPromoteTopK: 3},
	}
}

// LoadService builds the service config from defaults, the YAML file at path
// (skipped when path is "") and the environment (env; pass os.LookupEnv, nil
// means os.LookupEnv), then validates it.
//
// Unknown YAML keys are errors. Environment variables set to "" are treated
// as unset. Lists from the environment are comma-separated; booleans accept
// true/false/1/0. Relative paths set in the file (extensions_config,
// workspace.root, and database.dsn when it is a plain SQLite file path) are
// resolved against the file's directory; from the environment or defaults
// they stay relative to the working directory.
//
// Every error is a one-line *FieldError such as
// "config.yaml: mcp_tasks.poll_interval_seconds: must be between 1 and 300 (got 0)"
// or "env MCPFLOW_MCP_TASKS_POLL_INTERVAL_SECONDS: must be an integer (got \"abc\")",
// except a failure to read the file. No message contains a token or secret.
func LoadService(path string, env func(string) (string, bool)) (*Service, error) {
	if env == nil {
		env = os.LookupEnv
	}
	s := DefaultService()
	origins := map[string]string{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read service config: %w", err)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("read service config: %w", err)
		}
		s.Path, s.Dir = abs, filepath.Dir(abs)
		if err := decodeServiceYAML(data, path, &s, origins); err != nil {
			return nil, err
		}
	}
	if err := applyServiceEnv(env, &s, origins); err != nil {
		return nil, err
	}
	if path != "" {
		s.resolveRelativePaths(path, origins)
	}
	s.ToolSearch.AutoPromoteTopK = min(max(s.ToolSearch.AutoPromoteTopK, 1), 5)
	if err := s.validate(origins); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate checks every value of s. Errors name the field (no source).
func (s *Service) Validate() error {
	return s.validate(nil)
}

// ---- decoding: yaml.v3, after a shape check that names the field ----

// serviceSchema is the shape of config.yaml as yaml.v3 encodes
// DefaultService, with one element in each list of mappings: the keys in
// order and the tag of each value (!!str, !!int, !!bool, !!seq, !!map).
// Decoding checks a document against it (shape) and lets yaml.v3 set the
// fields; the environment variables are read from it too (serviceLeaves).
var serviceSchema = sync.OnceValue(func() *yaml.Node {
	s := DefaultService()
	s.Auth.Users, s.Auth.OIDC = []User{{}}, []OIDCProvider{{}}
	var n yaml.Node
	if err := n.Encode(s); err != nil {
		panic("config: encode the service config schema: " + err.Error())
	}
	return &n
})

// stringSchema is the element of a list of strings (an empty !!seq in
// serviceSchema).
var stringSchema = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str"}

// mappingValue returns the value under key in mapping m, nil when absent.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// serviceLeaf is one settable key of Service: a key of a section, or a
// top-level key that is not a section.
type serviceLeaf struct {
	path   string // YAML path, e.g. "mcp_tasks.poll_interval_seconds"
	env    string // e.g. "MCPFLOW_MCP_TASKS_POLL_INTERVAL_SECONDS"
	schema *yaml.Node
}

var serviceLeaves = sync.OnceValue(func() []serviceLeaf {
	var leaves []serviceLeaf
	add := func(path string, schema *yaml.Node) {
		env := EnvPrefix + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
		leaves = append(leaves, serviceLeaf{path: path, env: env, schema: schema})
	}
	root := serviceSchema()
	for i := 0; i+1 < len(root.Content); i += 2 {
		name, section := root.Content[i].Value, root.Content[i+1]
		if section.Kind != yaml.MappingNode {
			add(name, section)
			continue
		}
		for j := 0; j+1 < len(section.Content); j += 2 {
			add(name+"."+section.Content[j].Value, section.Content[j+1])
		}
	}
	return leaves
})

// EnvKeys returns every environment variable LoadService reads for the
// service config, sorted.
func EnvKeys() []string {
	leaves := serviceLeaves()
	keys := make([]string, len(leaves))
	for i, l := range leaves {
		keys[i] = l.env
	}
	sort.Strings(keys)
	return keys
}

// applyServiceEnv sets every key whose variable is set (and not "") from
// it: a scalar as if written in the file, a list of strings
// comma-separated, auth.users as "id:token" and "id:sha256:<hex>" entries,
// another list of mappings (auth.oidc) as JSON or YAML flow style.
func applyServiceEnv(env func(string) (string, bool), s *Service, origins map[string]string) error {
	for _, l := range serviceLeaves() {
		val, ok := env(l.env)
		if !ok || val == "" {
			continue
		}
		src := "env " + l.env
		var node *yaml.Node
		switch {
		case l.schema.Kind == yaml.ScalarNode:
			node = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: val}
		case l.path == "auth.users":
			users, err := parseUsersEnv(val, l.path)
			if err != nil {
				err.Source = src
				return err
			}
			node = &yaml.Node{}
			if err := node.Encode(users); err != nil {
				return &FieldError{Source: src, Message: err.Error()}
			}
		case len(l.schema.Content) == 0: // a list of strings
			node = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for _, v := range splitList(val) {
				node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v})
			}
		default:
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(val), &doc); err != nil || len(doc.Content) == 0 {
				return &FieldError{Source: src, Message: "must be a JSON list"}
			}
			node = doc.Content[0]
		}
		d := &yamlDecoder{source: src, origins: map[string]string{}}
		if err := d.shape(node, l.schema, l.path); err != nil {
			if fe, ok := err.(*FieldError); ok && l.schema.Kind == yaml.ScalarNode {
				fe.Field = "" // the variable names it
			}
			return err
		}
		// node, under its keys, decodes onto s leaving the rest as it is.
		keys := strings.Split(l.path, ".")
		for i := len(keys) - 1; i >= 0; i-- {
			node = &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: keys[i]}, node}}
		}
		if err := node.Decode(s); err != nil {
			return &FieldError{Source: src, Message: err.Error()}
		}
		for p := range origins {
			if strings.HasPrefix(p, l.path+"[") || strings.HasPrefix(p, l.path+".") {
				delete(origins, p)
			}
		}
		origins[l.path] = src
	}
	return nil
}

func parseBool(v string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1":
		return true, true
	case "false", "0":
		return false, true
	}
	return false, false
}

func splitList(v string) []string {
	var out []string
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// parseUsersEnv parses "id:token" and "id:sha256:<hex>" entries.
func parseUsersEnv(v, path string) ([]User, *FieldError) {
	var users []User
	for i, entry := range splitList(v) {
		id, rest, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, &FieldError{Field: fmt.Sprintf("%s[%d]", path, i), Message: `must be "id:token" or "id:sha256:<hex>"`}
		}
		if h, isHash := strings.CutPrefix(rest, "sha256:"); isHash {
			users = append(users, User{ID: id, TokenSHA256: h})
		} else {
			users = append(users, User{ID: id, Token: rest})
		}
	}
	return users, nil
}

// yamlDecoder checks YAML from one source (a file, or "env MCPFLOW_X")
// against serviceSchema and records the paths it sets in origins.
type yamlDecoder struct {
	source  string
	origins map[string]string
}

func decodeServiceYAML(data []byte, source string, s *Service, origins map[string]string) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return &FieldError{Source: source, Message: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil // empty file
	}
	d := &yamlDecoder{source: source, origins: origins}
	if err := d.shape(doc.Content[0], serviceSchema(), ""); err != nil {
		return err
	}
	if err := doc.Content[0].Decode(s); err != nil {
		return &FieldError{Source: source, Message: err.Error()}
	}
	return nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func (d *yamlDecoder) errorf(path string, format string, args ...any) error {
	return &FieldError{Source: d.source, Field: path, Message: fmt.Sprintf(format, args...)}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return "a scalar"
	}
}

// shape checks node against schema, the part of serviceSchema at path, so
// that yaml.v3 decodes it as meant: an unknown or duplicate key, a mapping,
// list or single value where another is due, and a value its key's type
// does not take are errors naming path. It rewrites in place what mcpflow
// takes beyond YAML's types (an integer written as a string, a boolean as
// 1, 0 or a string) and drops null values, which keep the default.
func (d *yamlDecoder) shape(node, schema *yaml.Node, path string) error {
	for node.Kind == yaml.AliasNode {
		node = node.Alias
	}
	if isNull(node) {
		return nil
	}
	switch schema.Kind {
	case yaml.MappingNode:
		if node.Kind != yaml.MappingNode {
			return d.errorf(path, "must be a mapping (got %s)", yamlKind(node))
		}
		seen := map[string]bool{}
		var kept []*yaml.Node
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, val := node.Content[i], node.Content[i+1]
			kp := joinPath(path, k.Value)
			if seen[k.Value] {
				return d.errorf(kp, "duplicate key (line %d)", k.Line)
			}
			seen[k.Value] = true
			vs := mappingValue(schema, k.Value)
			if vs == nil {
				return d.errorf(kp, "unknown key (line %d)", k.Line)
			}
			if err := d.shape(val, vs, kp); err != nil {
				return err
			}
			if !isNull(val) {
				kept = append(kept, k, val)
			}
		}
		node.Content = kept
		return nil
	case yaml.SequenceNode:
		if node.Kind != yaml.SequenceNode {
			return d.errorf(path, "must be a list (got %s)", yamlKind(node))
		}
		elem := stringSchema
		if len(schema.Content) > 0 {
			elem = schema.Content[0]
		}
		for i, e := range node.Content {
			if err := d.shape(e, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		d.origins[path] = d.source
		return nil
	}
	if node.Kind != yaml.ScalarNode {
		return d.errorf(path, "must be a single value (got %s)", yamlKind(node))
	}
	switch schema.Tag {
	case "!!str":
		if node.Tag == "!!bool" {
			return d.errorf(path, "must be a string (got %s)", node.Value)
		}
	case "!!int":
		var n int
		var err error
		switch node.Tag {
		case "!!int":
			err = node.Decode(&n)
		case "!!str":
			n, err = strconv.Atoi(strings.TrimSpace(node.Value))
		default:
			err = fmt.Errorf("not an integer")
		}
		if err != nil {
			got := node.Value
			if node.Tag == "!!str" {
				got = strconv.Quote(node.Value)
			}
			return d.errorf(path, "must be an integer (got %s)", got)
		}
		node.Value = strconv.Itoa(n)
	case "!!bool":
		b, ok := parseBool(node.Value)
		if !ok || (node.Tag != "!!bool" && node.Tag != "!!int" && node.Tag != "!!str") {
			return d.errorf(path, "must be true, false, 1 or 0 (got %s)", strconv.Quote(node.Value))
		}
		node.Value = strconv.FormatBool(b)
	}
	node.Tag, node.Style = schema.Tag, 0
	d.origins[path] = d.source
	return nil
}

// ---- relative paths ----

func (s *Service) resolveRelativePaths(source string, origins map[string]string) {
	rel := func(p *string, key string) {
		if origins[key] == source && *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(s.Dir, *p)
		}
	}
	rel(&s.ExtensionsConfig, "extensions_config")
	rel(&s.Workspace.Root, "workspace.root")
	rel(&s.Temporal.ConfigFile, "temporal.config_file")
	rel(&s.Temporal.TLSCAFile, "temporal.tls_ca_file")
	rel(&s.Temporal.TLSCertFile, "temporal.tls_cert_file")
	rel(&s.Temporal.TLSKeyFile, "temporal.tls_key_file")
	if s.Database.Backend == BackendSQLite && isPlainSQLitePath(s.Database.DSN) {
		rel(&s.Database.DSN, "database.dsn")
	}
}

// isPlainSQLitePath reports whether dsn names a file rather than an in-memory
// database or a file: URI.
func isPlainSQLitePath(dsn string) bool {
	return dsn != "" && !strings.HasPrefix(dsn, ":memory:") && !strings.HasPrefix(dsn, "file:")
}

// ---- validation ----

var (
	userIDPattern = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)
	sha256Pattern = regexp.MustCompile(`^[0-9A-Fa-f]{64}$`)
)

// mcpTaskBounds are the bounds of spec §1.8, in file order, then those of
// mcpflow's own keys.
var mcpTaskBounds = []struct {
	key      string
	min, max int
	get      func(*MCPTasksSection) int
}{
	{"poll_interval_seconds", 1, 300, func(m *MCPTasksSection) int { return m.PollIntervalSeconds }},
	{"lease_seconds", 5, 3600, func(m *MCPTasksSection) int { return m.LeaseSeconds }},
	{"max_concurrent_polls", 1, 64, func(m *MCPTasksSection) int { return m.MaxConcurrentPolls }},
	{"max_poll_backoff_seconds", 1, 3600, func(m *MCPTasksSection) int { return m.MaxPollBackoffSeconds }},
	{"input_required_poll_interval_seconds", 5, 3600, func(m *MCPTasksSection) int { return m.InputRequiredPollIntervalSeconds }},
	{"tracking_degraded_after_errors", 1, 100, func(m *MCPTasksSection) int { return m.TrackingDegradedAfterErrors }},
	{"max_result_bytes", 1024, 10485760, func(m *MCPTasksSection) int { return m.MaxResultBytes }},
	{"result_preview_max_chars", 64, 100000, func(m *MCPTasksSection) int { return m.ResultPreviewMaxChars }},
	// mcpflow's own per-user caps.
	{"max_running_tasks_per_user", 1, 1000000, func(m *MCPTasksSection) int { return m.MaxRunningTasksPerUser }},
	{"max_pinned_sessions_per_user", 1, 100000, func(m *MCPTasksSection) int { return m.MaxPinnedSessionsPerUser }},
}

type validator struct {
	origins map[string]string
}

// fail attributes an error at path to the layer that set it: the longest
// recorded prefix of path. An env variable names its own field, so the field
// is left out when it is exactly the variable's.
func (v validator) fail(path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	for p := path; p != ""; p = parentPath(p) {
		src, ok := v.origins[p]
		if !ok {
			continue
		}
		if strings.HasPrefix(src, "env ") && p == path {
			return &FieldError{Source: src, Message: msg}
		}
		return &FieldError{Source: src, Field: path, Message: msg}
	}
	return &FieldError{Field: path, Message: msg}
}

// parentPath strips the last ".key" or "[i]" of a path.
func parentPath(p string) string {
	if i := strings.LastIndexAny(p, ".["); i >= 0 {
		return p[:i]
	}
	return ""
}

func (s *Service) validate(origins map[string]string) error {
	v := validator{origins: origins}

	for _, a := range []struct{ key, val string }{{"addr", s.Server.Addr}, {"worker_addr", s.Server.WorkerAddr}} {
		if host, port, err := net.SplitHostPort(a.val); err != nil || !validPort(port) || strings.ContainsAny(host, " /") {
			return v.fail("server."+a.key, "must be host:port (got %q)", a.val)
		}
	}
	for _, b := range []struct {
		key      string
		val      int
		min, max int
	}{
		{"shutdown_timeout_seconds", s.Server.ShutdownTimeoutSeconds, 1, 600},
		{"max_body_bytes", s.Server.MaxBodyBytes, 1024, 64 << 20},
		{"max_content_bytes", s.Server.MaxContentBytes, 1024, 64 << 20},
		{"max_concurrent_calls_per_user", s.Server.MaxConcurrentCallsPerUser, 1, 10000},
		{"max_waits_per_user", s.Server.MaxWaitsPerUser, 1, 10000},
		{"max_mcp_streams_per_user", s.Server.MaxMCPStreamsPerUser, 1, 10000},
		{"max_mcp_sessions_per_user", s.Server.MaxMCPSessionsPerUser, 1, 10000},
		{"read_header_timeout_seconds", s.Server.ReadHeaderTimeoutSeconds, 1, 300},
		{"read_timeout_seconds", s.Server.ReadTimeoutSeconds, 1, 3600},
		{"write_timeout_seconds", s.Server.WriteTimeoutSeconds, 1, 86400},
		{"idle_timeout_seconds", s.Server.IdleTimeoutSeconds, 1, 3600},
	} {
		if b.val < b.min || b.val > b.max {
			return v.fail("server."+b.key, "must be between %d and %d (got %d)", b.min, b.max, b.val)
		}
	}
	for _, b := range []struct {
		key      string
		val      int
		min, max int
	}{
		{"retention_days", s.Audit.RetentionDays, 0, 36500},
		{"queue_size", s.Audit.QueueSize, 100, 10_000_000},
		{"flush_interval_ms", s.Audit.FlushIntervalMS, 10, 60_000},
	} {
		if b.val < b.min || b.val > b.max {
			return v.fail("audit."+b.key, "must be between %d and %d (got %d)", b.min, b.max, b.val)
		}
	}
	for i, o := range s.Server.AllowedOrigins {
		if !validOrigin(o) {
			return v.fail(fmt.Sprintf("server.allowed_origins[%d]", i), "must be an origin like https://app.example.com (scheme://host[:port], no path) (got %q)", o)
		}
	}
	if b := s.Database.Backend; b != BackendSQLite && b != BackendPostgres {
		return v.fail("database.backend", "must be %q or %q (got %q)", BackendSQLite, BackendPostgres, b)
	}
	if s.Database.DSN == "" {
		return v.fail("database.dsn", "must not be empty")
	}
	for _, f := range []struct{ path, val string }{
		{"temporal.task_queue", s.Temporal.TaskQueue},
		{"workspace.root", s.Workspace.Root},
	} {
		if strings.TrimSpace(f.val) == "" {
			return v.fail(f.path, "must not be empty")
		}
	}
	if err := s.Temporal.validate(v); err != nil {
		return err
	}
	for _, b := range mcpTaskBounds {
		if n := b.get(&s.MCPTasks); n < b.min || n > b.max {
			return v.fail("mcp_tasks."+b.key, "must be between %d and %d (got %d)", b.min, b.max, n)
		}
	}
	for i, t := range s.Auth.AdminTokens {
		if t == "" {
			return v.fail(fmt.Sprintf("auth.admin_tokens[%d]", i), "must not be empty")
		}
	}
	for i, h := range s.Auth.AdminTokenSHA256 {
		if !sha256Pattern.MatchString(h) {
			return v.fail(fmt.Sprintf("auth.admin_token_sha256[%d]", i), "must be 64 hexadecimal characters")
		}
	}
	ids := map[string]int{}
	for i, u := range s.Auth.Users {
		p := fmt.Sprintf("auth.users[%d]", i)
		switch {
		case u.ID == "":
			return v.fail(p+".id", "must not be empty")
		case !userIDPattern.MatchString(u.ID) || u.ID == "." || u.ID == "..":
			return v.fail(p+".id", "must be 1 to 64 characters from A-Z a-z 0-9 . _ @ - and not \".\" or \"..\"")
		}
		if prev, dup := ids[u.ID]; dup {
			return v.fail(p+".id", "duplicate user id %q (also auth.users[%d])", u.ID, prev)
		}
		ids[u.ID] = i
		switch {
		case u.Token != "" && u.TokenSHA256 != "":
			return v.fail(p, "must set only one of token and token_sha256")
		case u.Token == "" && u.TokenSHA256 == "":
			return v.fail(p, "must set token or token_sha256")
		case u.TokenSHA256 != "" && !sha256Pattern.MatchString(u.TokenSHA256):
			return v.fail(p+".token_sha256", "must be 64 hexadecimal characters")
		}
	}
	if err := s.validateOIDC(v); err != nil {
		return err
	}
	if raw := s.Notifications.WebhookURL; raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) || u.Host == "" {
			return v.fail("notifications.webhook_url", "must be an absolute http(s) URL")
		}
		if s.Notifications.WebhookSecret == "" {
			return v.fail("notifications.webhook_url", "needs notifications.webhook_secret (MCPFLOW_NOTIFICATIONS_WEBHOOK_SECRET): deliveries are signed with it")
		}
	}
	return nil
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535 && p == strconv.Itoa(n)
}

var providerNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// validateOIDC checks server.public_url and auth.oidc.
func (s *Service) validateOIDC(v validator) error {
	if u := s.Server.PublicURL; u != "" {
		if !validOrigin(u) {
			return v.fail("server.public_url", "must be an origin like https://mcpflow.example.com (scheme://host[:port], no path) (got %q)", u)
		}
		if !mcpflow.SecureURL(u) {
			return v.fail("server.public_url", "must be https (http only for a loopback host) (got %q)", u)
		}
		if pu, _ := url.Parse(u); pu.Host != strings.ToLower(pu.Host) || (pu.Scheme == "https" && pu.Port() == "443") || (pu.Scheme == "http" && pu.Port() == "80") {
			// Clients normalise the URL they dial before they compare it
			// with the metadata's resource and ask for a token for it.
			return v.fail("server.public_url", "must be written as clients normalise it: a lower-case host and no default port (got %q)", u)
		}
	}
	if len(s.Auth.OIDC) > 0 && s.Server.PublicURL == "" {
		return v.fail("auth.oidc", "needs server.public_url: it is mcpflow's resource URI, the audience identity providers' tokens must carry")
	}
	names := map[string]int{}
	introspecting := map[bool]int{}
	for i, p := range s.Auth.OIDC {
		path := fmt.Sprintf("auth.oidc[%d]", i)
		if !providerNamePattern.MatchString(p.Name) {
			return v.fail(path+".name", "must be 1 to 64 characters from A-Z a-z 0-9 . _ - (got %q)", p.Name)
		}
		if prev, dup := names[p.Name]; dup {
			return v.fail(path+".name", "duplicate provider name %q (also auth.oidc[%d])", p.Name, prev)
		}
		names[p.Name] = i
		if u, err := url.Parse(p.Issuer); err != nil || !u.IsAbs() || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || !mcpflow.SecureURL(p.Issuer) {
			return v.fail(path+".issuer", "must be the provider's https issuer URL, exactly as its tokens' \"iss\" (http only for a loopback host) (got %q)", p.Issuer)
		}
		if p.JWKSURL != "" {
			if u, err := url.Parse(p.JWKSURL); err != nil || !u.IsAbs() || u.Host == "" || !mcpflow.SecureURL(p.JWKSURL) {
				return v.fail(path+".jwks_url", "must be an https URL (http only for a loopback host) (got %q)", p.JWKSURL)
			}
		}
		for j, a := range p.Audiences {
			if strings.TrimSpace(a) == "" {
				return v.fail(fmt.Sprintf("%s.audiences[%d]", path, j), "must not be empty")
			}
		}
		for j, a := range p.Algorithms {
			if !slices.Contains(mcpflow.TokenAlgorithms, a) {
				return v.fail(fmt.Sprintf("%s.algorithms[%d]", path, j), "must be one of %s (got %q)", strings.Join(mcpflow.TokenAlgorithms, ", "), a)
			}
		}
		if p.ClockSkewSeconds < 0 || p.ClockSkewSeconds > 300 {
			return v.fail(path+".clock_skew_seconds", "must be between 1 and 300, or 0 for the default of 60 (got %d)", p.ClockSkewSeconds)
		}
		if p.JWKSMinRefreshSeconds < 0 || p.JWKSMinRefreshSeconds > 3600 {
			return v.fail(path+".jwks_min_refresh_seconds", "must be between 1 and 3600, or 0 for the default of 10 (got %d)", p.JWKSMinRefreshSeconds)
		}
		if p.JWKSMaxAgeSeconds < 0 || p.JWKSMaxAgeSeconds > 86400 {
			return v.fail(path+".jwks_max_age_seconds", "must be between 1 and 86400, or 0 for the default of 300 (got %d)", p.JWKSMaxAgeSeconds)
		}
		if minRefresh, maxAge := cmp.Or(p.JWKSMinRefreshSeconds, 10), cmp.Or(p.JWKSMaxAgeSeconds, 300); maxAge < minRefresh {
			return v.fail(path+".jwks_max_age_seconds", "must be at least jwks_min_refresh_seconds (%d) (got %d)", minRefresh, maxAge)
		}
		if err := validateIntrospection(v, path, p); err != nil {
			return err
		}
		if p.IntrospectionClientID != "" {
			if prev, dup := introspecting[true]; dup {
				return v.fail(path+".introspection_client_id", "introspection is configured for auth.oidc[%d] too: at most one provider may introspect tokens, since an opaque token does not say whose it is", prev)
			}
			introspecting[true] = i
		}
		if p.UserClaim != "" && strings.TrimSpace(p.UserClaim) == "" {
			return v.fail(path+".user_claim", "must not be blank")
		}
		if p.UserPrefix != "" && (!providerNamePattern.MatchString(p.UserPrefix) || len(p.UserPrefix) > 30 || p.UserPrefix[0] == '.') {
			return v.fail(path+".user_prefix", "must be 1 to 30 characters from A-Z a-z 0-9 . _ -, not starting with \".\" (got %q)", p.UserPrefix)
		}
		if len(p.Audiences) > 0 && len(p.RequiredScopes) == 0 {
			return v.fail(path+".audiences", "need required_scopes: an audience that is a client id is also the audience of that client's ID tokens, "+
				"and only a required scope tells an access token from one (name the scope your hosts ask for, e.g. required_scopes: [mcp:tools])")
		}
		for j, sc := range p.RequiredScopes {
			if sc == "" || strings.ContainsAny(sc, " \"\\") {
				return v.fail(fmt.Sprintf("%s.required_scopes[%d]", path, j), "must be one scope: no spaces or quotes (got %q)", sc)
			}
		}
		for j, sc := range p.AdvertisedScopes {
			if sc == "" || strings.ContainsAny(sc, " \"\\") {
				return v.fail(fmt.Sprintf("%s.advertised_scopes[%d]", path, j), "must be one scope: no spaces or quotes (got %q)", sc)
			}
		}
		if p.AdminScope != "" && strings.ContainsAny(p.AdminScope, " \"\\") {
			return v.fail(path+".admin_scope", "must be one scope: no spaces or quotes (got %q)", p.AdminScope)
		}
		switch {
		case p.AdminScope != "" && p.AdminClaim != "":
			return v.fail(path, "set admin_scope or admin_claim, not both")
		case p.AdminClaim != "" && len(p.AdminValues) == 0:
			return v.fail(path+".admin_values", "must list the values of admin_claim that make an admin")
		case p.AdminClaim == "" && len(p.AdminValues) > 0:
			return v.fail(path+".admin_claim", "must name the claim admin_values are looked up in")
		}
	}
	return s.validateUserIDSpaces(v)
}

// validateIntrospection checks the introspection keys of provider p at
// path. No message quotes the secret.
func validateIntrospection(v validator, path string, p OIDCProvider) error {
	switch {
	case p.IntrospectionClientID != "" && p.IntrospectionClientSecret == "":
		return v.fail(path+".introspection_client_secret", "must be set with introspection_client_id")
	case p.IntrospectionClientID == "" && p.IntrospectionClientSecret != "":
		return v.fail(path+".introspection_client_id", "must be set with introspection_client_secret")
	case p.IntrospectionClientID == "" && p.IntrospectionURL != "":
		return v.fail(path+".introspection_url", "needs introspection_client_id and introspection_client_secret")
	case p.IntrospectionClientID == "" && p.IntrospectJWTs:
		return v.fail(path+".introspect_jwts", "needs introspection_client_id and introspection_client_secret")
	case p.IntrospectionCacheSeconds < 0 || p.IntrospectionCacheSeconds > 3600:
		return v.fail(path+".introspection_cache_seconds", "must be between 1 and 3600, or 0 for the default of 60 (got %d)", p.IntrospectionCacheSeconds)
	}
	if p.IntrospectionURL != "" {
		if u, err := url.Parse(p.IntrospectionURL); err != nil || !u.IsAbs() || u.Host == "" || u.User != nil || !mcpflow.SecureURL(p.IntrospectionURL) {
			return v.fail(path+".introspection_url", "must be an https URL (http only for a loopback host) (got %q)", p.IntrospectionURL)
		}
	}
	return nil
}

// validateUserIDSpaces refuses providers whose users could get the same id
// as another provider's or a static user's, unless share_user_ids says
// that is meant: a user id is user_prefix + the claim's value, so a
// prefix that starts another provider's prefix ("" starts every one), or
// that a static user id starts with, lets two people be one user.
func (s *Service) validateUserIDSpaces(v validator) error {
	for i, p := range s.Auth.OIDC {
		path := fmt.Sprintf("auth.oidc[%d]", i)
		for j, q := range s.Auth.OIDC {
			if i == j || !strings.HasPrefix(q.UserPrefix, p.UserPrefix) || (p.ShareUserIDs && q.ShareUserIDs) || (i < j && p.UserPrefix == q.UserPrefix) {
				continue
			}
			return v.fail(path+".user_prefix", "%q lets its users have the ids of auth.oidc[%d] (%q, user_prefix %q): a user %q there is user %q here; "+
				"give each provider a user_prefix that does not start another's (e.g. %q), or set share_user_ids: true on both if they are one user space",
				p.UserPrefix, j, q.Name, q.UserPrefix, "x", strings.TrimPrefix(q.UserPrefix, p.UserPrefix)+"x", p.Name+".")
		}
		if p.ShareUserIDs {
			continue
		}
		for j, u := range s.Auth.Users {
			if strings.HasPrefix(u.ID, p.UserPrefix) {
				return v.fail(path+".user_prefix", "%q lets a user of provider %q have the id of static user %q (auth.users[%d]): they would be one user; "+
					"give the provider a user_prefix no static user id starts with (e.g. %q), or set share_user_ids: true if that is meant",
					p.UserPrefix, p.Name, u.ID, j, p.Name+".")
			}
		}
	}
	return nil
}

// validOrigin reports whether o is a serialized web origin: http or https,
// a host, an optional port, nothing else.
func validOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return false
	}
	return u.User == nil && u.Path == "" && u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery && o == u.Scheme+"://"+u.Host
}

// validate checks the temporal section: the connection keys that are set,
// and the versioning keys.
func (t TemporalSection) validate(v validator) error {
	if t.Address != "" {
		if host, port, err := net.SplitHostPort(t.Address); err != nil || host == "" || !validPort(port) || strings.ContainsAny(host, " /") {
			return v.fail("temporal.address", "must be host:port (got %q)", t.Address)
		}
	}
	if t.WebUIURL != "" {
		if u, err := url.Parse(t.WebUIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return v.fail("temporal.web_ui_url", "must be an absolute http(s) URL without query (got %q)", t.WebUIURL)
		}
	}
	if t.TLSCertFile != "" && t.TLSKeyFile == "" {
		return v.fail("temporal.tls_cert_file", "needs temporal.tls_key_file (mTLS takes both)")
	}
	if t.TLSKeyFile != "" && t.TLSCertFile == "" {
		return v.fail("temporal.tls_key_file", "needs temporal.tls_cert_file (mTLS takes both)")
	}
	if strings.TrimSpace(t.DeploymentName) == "" {
		return v.fail("temporal.deployment_name", "must not be empty")
	}
	if strings.ContainsAny(t.DeploymentName, ".:") || strings.HasPrefix(t.DeploymentName, "__") {
		return v.fail("temporal.deployment_name", "must not contain '.' or ':' nor start with '__' (got %q)", t.DeploymentName)
	}
	if len(t.BuildID) > 255 || strings.HasPrefix(t.BuildID, "__") {
		return v.fail("temporal.build_id", "must be at most 255 bytes and not start with '__'")
	}
	switch t.Promote {
	case PromoteNewest, PromoteFirst, PromoteNever:
	default:
		return v.fail("temporal.promote", "must be %q, %q or %q (got %q)", PromoteNewest, PromoteFirst, PromoteNever, t.Promote)
	}
	return nil
}
