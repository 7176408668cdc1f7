package testenv

import (
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The OAuth clients of mcpflow's protected-resource tests (MCP
// authorization, OAuth 2.1), in internal/testdata/npm (installed by `make
// testdeps`); both are independent implementations that find the
// authorization server from mcpflow's 401 alone:
//
//   - oauth_client.mjs: the official TypeScript SDK v1 client with an
//     OAuthClientProvider for a pre-registered client; it follows the
//     authorization URL itself (RunOAuthClient);
//   - inspector_discovery.mjs: the MCP Inspector's CLI (--cli mode of
//     @modelcontextprotocol/inspector 2.12.0), whose browser step the test
//     plays (RunInspectorCLI).
const (
	oauthClientScript  = "oauth_client.mjs"
	oauthClientTimeout = 2 * time.Minute
	inspectorScript    = "inspector_discovery.mjs"
	inspectorPackage   = "@modelcontextprotocol/inspector"
	inspectorTimeout   = 2 * time.Minute
	// inspectorPrompt starts the stderr line with the authorization URL.
	inspectorPrompt = "Please navigate to: "
	// DefaultInspectorCallbackURL is the Inspector's redirect URI when
	// InspectorOptions.CallbackURL is empty: its callback listener on a free
	// loopback port, which the authorization URL's redirect_uri names.
	DefaultInspectorCallbackURL = "http://127.0.0.1:0/oauth/callback"
)

// inspectorMinNode is the Node.js version the Inspector needs (its
// engines field: >=22.19.0).
var inspectorMinNode = [3]int{22, 19, 0}

// RunOAuthClient runs oauth_client.mjs against mcpURL through scenario and
// returns the JSON object it printed for each step, in order (see the
// script's comment for the steps and their fields):
//
//   - "oauth": connect without a token, take the 401's resource_metadata to
//     the protected resource metadata and the authorization server's
//     metadata, authorize as the pre-registered public client clientID with
//     PKCE S256 and the resource indicator, following the authorization URL
//     to redirectURI (nothing listens there), exchange the code, connect
//     again with the token, tools/list, and with input's tool a
//     task-augmented tools/call read to its result.
//
// input is the script's MCP_INPUT, a JSON object ("" for none): tool,
// arguments, task, clientSecret, scope, headers, loginHint,
// timeoutMs, expectError. A non-zero exit (any failure, unless expectError)
// fails t with the client's stderr and the steps it printed.
func RunOAuthClient(t testing.TB, mcpURL, clientID, redirectURI, scenario, input string) []map[string]any {
	t.Helper()
	steps, stderr, err := runNodeSteps(oauthClientNode(t), oauthClientTimeout, []string{
		"MCP_URL=" + mcpURL,
		"MCP_INPUT=" + input,
		"OAUTH_CLIENT_ID=" + clientID,
		"OAUTH_REDIRECT_URI=" + redirectURI,
		"OAUTH_CLIENT_SECRET=",
		"OAUTH_SCOPE=",
	}, oauthClientScript, scenario)
	if err != nil {
		t.Fatalf("node %s %s: %v\nstderr: %s\nsteps: %v", oauthClientScript, scenario, err, stderr, steps)
	}
	return steps
}

// oauthClientNode returns the node that runs oauth_client.mjs (Node2026's:
// the local Node 22 of `make testdeps`), ending t through
// MissingDependency when it or the TypeScript SDK v1 is missing.
func oauthClientNode(t testing.TB) string {
	t.Helper()
	requireNPMPackage(t, "@modelcontextprotocol/sdk")
	return Node2026(t)
}

func requireNPMPackage(t testing.TB, pkg string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(NPMDir(), "node_modules", pkg, "package.json")); err != nil {
		MissingDependency(t, "the npm package %s is not installed in %s: run `make testdeps` (needs npm)", pkg, NPMDir())
	}
}

// parseSteps decodes one JSON object per non-empty line.
func parseSteps(stdout string) ([]map[string]any, error) {
	var steps []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var step map[string]any
		if err := json.Unmarshal([]byte(line), &step); err != nil {
			return steps, errors.New("a line that is not JSON: " + line)
		}
		steps = append(steps, step)
	}
	return steps, nil
}

// InspectorOptions configures RunInspectorCLI.
type InspectorOptions struct {
	// URL is the MCP endpoint (Streamable HTTP).
	URL string
	// ClientID is the pre-registered OAuth client the Inspector presents
	// (--client-id). Empty: none, and the Inspector falls back to dynamic
	// client registration.
	ClientID string
	// ClientSecret makes the client confidential (--client-secret).
	ClientSecret string
	// CallbackURL is the loopback redirect URI the Inspector listens on
	// (--callback-url); DefaultInspectorCallbackURL when empty.
	CallbackURL string
	// Method is the MCP method the CLI runs (--method); tools/list when
	// empty.
	Method string
	// Args are further CLI arguments, such as "--tool-name", "echo",
	// "--tool-arg", "message=hi". The runner adds "--transport http" and
	// "--format json" unless Args sets them.
	Args []string
	// Authorize plays the browser: it is called on the caller's goroutine
	// with the authorization URL once the Inspector printed it, and should
	// follow it (an http.Client following redirects ends at the Inspector's
	// callback, which completes its login). It may fail t. When the
	// browser step does not reach the callback (the authorization server
	// refused it), the Inspector waits for it until Timeout kills it. Nil:
	// the runner kills the Inspector as soon as it printed the URL
	// (discovery only).
	Authorize func(authorizationURL string)
	// Timeout bounds the whole run (2 minutes when zero); then the
	// Inspector is killed.
	Timeout time.Duration
}

// InspectorResult is what one Inspector CLI run did.
type InspectorResult struct {
	// AuthorizationURL is the URL of the Inspector's "Please navigate to:"
	// line on stderr; empty when it printed none.
	AuthorizationURL string
	// Stdout is the method's output; with --format json one JSON object,
	// {"result": …}.
	Stdout string
	// Stderr is everything the Inspector printed on stderr, its
	// {"error": {"code", "message"}} envelope on failure included.
	Stderr string
	// ExitCode is the Inspector's exit code (0 success, 3 auth_required,
	// …), -1 when the runner killed it.
	ExitCode int
	// TimedOut reports that the runner killed it at Timeout.
	TimedOut bool
}

// Result decodes Stdout's {"result": …} (--format json) and returns the
// result; it fails t when Stdout is not such an object.
func (r InspectorResult) Result(t testing.TB) map[string]any {
	t.Helper()
	var out struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || out.Result == nil {
		t.Fatalf("the Inspector printed no {\"result\": …} (exit %d, err %v)\nstdout: %s\nstderr: %s", r.ExitCode, err, r.Stdout, r.Stderr)
	}
	return out.Result
}

// Error returns the Inspector's error envelope, the last stderr line that
// is a JSON object {"error": {…}}, or nil.
func (r InspectorResult) Error() map[string]any {
	lines := strings.Split(r.Stderr, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var env struct {
			Error map[string]any `json:"error"`
		}
		if line := strings.TrimSpace(lines[i]); strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &env) == nil && env.Error != nil {
			return env.Error
		}
	}
	return nil
}

// RunInspectorCLI runs the MCP Inspector's CLI (what `npx
// @modelcontextprotocol/inspector --cli URL --transport http --method M`
// runs) through inspector_discovery.mjs. On a 401 the Inspector discovers
// the protected resource metadata and the authorization server, listens on
// its loopback callback and prints the authorization URL; the runner hands
// it to o.Authorize, then waits for the Inspector to exchange the code, run
// the method and exit. The process group is killed at o.Timeout and when
// the run ends.
//
// The Inspector runs with a fresh HOME and storage directory (nothing read
// from or written to the user's ~/.mcp-inspector), secrets in memory
// (MCP_INSPECTOR_SECRET_STORE=memory), no browser launch
// (MCP_AUTO_OPEN_ENABLED=false), no proxy. The runner fails t only when
// the Inspector cannot start; the test asserts on the result.
func RunInspectorCLI(t testing.TB, o InspectorOptions) InspectorResult {
	t.Helper()
	node := inspectorNode(t)
	home := t.TempDir()
	cmd := exec.Command(node, append([]string{inspectorScript, o.URL}, inspectorArgs(o)...)...)
	cmd.Dir = NPMDir()
	cmd.Env = append(inspectorEnv(os.Environ()),
		"HOME="+home,
		"USERPROFILE="+home,
		"MCP_STORAGE_DIR="+filepath.Join(home, "storage"),
		"MCP_INSPECTOR_SECRET_STORE=memory",
		"MCP_AUTO_OPEN_ENABLED=false",
		"NO_COLOR=1",
	)
	stderr := newLineWatch(authorizationURLFrom)
	var stdout SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	c, err := startChild(t, cmd)
	if err != nil {
		t.Fatalf("start the Inspector CLI (node %s): %v", inspectorScript, err)
	}
	exited, kill := c.exited, c.kill

	timeout := o.Timeout
	if timeout <= 0 {
		timeout = inspectorTimeout
	}
	var timedOut atomic.Bool
	timer := time.AfterFunc(timeout, func() { timedOut.Store(true); kill() })
	defer timer.Stop()

	var res InspectorResult
	select {
	case res.AuthorizationURL = <-stderr.found:
		if o.Authorize == nil {
			kill()
		} else {
			o.Authorize(res.AuthorizationURL)
		}
		<-exited
	case <-exited:
	}
	timer.Stop()
	kill() // what the Inspector left behind in its group
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	res.ExitCode = cmd.ProcessState.ExitCode()
	res.TimedOut = timedOut.Load()
	return res
}

// inspectorArgs are the CLI arguments after the URL.
func inspectorArgs(o InspectorOptions) []string {
	method := o.Method
	if method == "" {
		method = "tools/list"
	}
	callback := o.CallbackURL
	if callback == "" {
		callback = DefaultInspectorCallbackURL
	}
	args := []string{"--method", method, "--callback-url", callback}
	if o.ClientID != "" {
		args = append(args, "--client-id", o.ClientID)
	}
	if o.ClientSecret != "" {
		args = append(args, "--client-secret", o.ClientSecret)
	}
	has := func(flag string) bool {
		for _, a := range o.Args {
			if a == flag || strings.HasPrefix(a, flag+"=") {
				return true
			}
		}
		return false
	}
	if !has("--transport") {
		args = append(args, "--transport", "http")
	}
	if !has("--format") {
		args = append(args, "--format", "json")
	}
	return append(args, o.Args...)
}

// inspectorEnv is env without the variables that would point the
// Inspector at the user's own files, callback, browser or proxy.
func inspectorEnv(env []string) []string {
	drop := map[string]bool{
		"MCP_OAUTH_CALLBACK_URL": true, "MCP_CATALOG_PATH": true, "MCP_CLIENT_CONFIG_PATH": true,
		"MCP_INSPECTOR_OAUTH_STATE_PATH": true, "MCP_INSPECTOR_SECRET_FILE": true, "MCP_INSPECTOR_PERSIST_TOKENS": true,
		"MCP_INSPECTOR_API_TOKEN": true, "VITEST": true,
		"HTTP_PROXY": true, "HTTPS_PROXY": true, "ALL_PROXY": true, "NO_PROXY": true,
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[strings.ToUpper(name)] {
			out = append(out, kv)
		}
	}
	return out
}

// inspectorNode returns the node that runs the Inspector (Node2026's: the
// local Node 22 of `make testdeps`), ending t through MissingDependency
// when the Inspector is not installed or that node is older than the
// Inspector needs.
func inspectorNode(t testing.TB) string {
	t.Helper()
	requireNPMPackage(t, inspectorPackage)
	node := Node2026(t)
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		MissingDependency(t, "%s --version: %v", node, err)
	}
	if !versionAtLeast(string(out), inspectorMinNode) {
		MissingDependency(t, "the MCP Inspector needs Node.js %d.%d or later, %s is %s: run `make testdeps` (it installs Node 22 in %s)",
			inspectorMinNode[0], inspectorMinNode[1], node, strings.TrimSpace(string(out)), NPMDir())
	}
	return node
}

// versionAtLeast reports whether version ("v22.23.3" or "22.23.3") is
// least or later; false when it is not a version.
func versionAtLeast(version string, least [3]int) bool {
	parts := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(version), "v"), ".", 3)
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		if i == 2 {
			p, _, _ = strings.Cut(p, "-") // a pre-release suffix
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		if n != least[i] {
			return n > least[i]
		}
	}
	return true
}

// escapes matches terminal escape sequences: OSC (an OSC 8 hyperlink) and
// CSI (colors).
var escapes = regexp.MustCompile("\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)|\x1b\\[[0-9;?]*[ -/]*[@-~]")

// authorizationURLFrom returns the http(s) URL of an Inspector line
// "Please navigate to: <URL>", without terminal escapes.
func authorizationURLFrom(line string) (string, bool) {
	line = escapes.ReplaceAllString(line, "")
	_, rest, ok := strings.Cut(line, inspectorPrompt)
	if !ok {
		return "", false
	}
	raw := strings.TrimSpace(rest)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return raw, true
}
