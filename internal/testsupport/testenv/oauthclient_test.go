package testenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersionAtLeast(t *testing.T) {
	t.Parallel()
	least := [3]int{22, 19, 0}
	for version, want := range map[string]bool{
		"v22.23.3\n":    true,
		"22.19.0":       true,
		"v22.19.1":      true,
		"v23.0.0":       true,
		"v22.18.9":      false,
		"v20.20.2":      false,
		"v22.19.0-rc.1": true,
		"v22":           false,
		"":              false,
		"node":          false,
	} {
		require.Equal(t, want, versionAtLeast(version, least), version)
	}
}

func TestAuthorizationURLFrom(t *testing.T) {
	t.Parallel()
	const u = "http://127.0.0.1:4000/authorize?response_type=code&client_id=c&resource=http%3A%2F%2F127.0.0.1%3A5000%2Fmcp"
	for line, want := range map[string]string{
		"Please navigate to: " + u:                                          u,
		"Please navigate to: " + u + "\r":                                   u,
		"Please navigate to: \x1b]8;;" + u + "\x07" + u + "\x1b]8;;\x07":    u, // an OSC 8 hyperlink (stderr a TTY)
		"\x1b[1mPlease navigate to:\x1b[22m " + u:                           u,
		"Please navigate to: not a url":                                     "",
		"Please navigate to: file:///etc/passwd":                            "",
		"[mcp-inspector] Secrets are not written anywhere":                  "",
		`{"error":{"code":"auth_required","message":"Please navigate to"}}`: "",
	} {
		got, ok := authorizationURLFrom(line)
		require.Equal(t, want, got, "%q", line)
		require.Equal(t, want != "", ok, "%q", line)
	}
}

func TestLineWatchFindsThePrompt(t *testing.T) {
	t.Parallel()
	w := newLineWatch(authorizationURLFrom)
	for _, chunk := range []string{"[mcp-inspector] x\nPlease navi", "gate to: http://idp/authorize?a=1", "\nPlease navigate to: http://idp/second\n"} {
		_, err := w.Write([]byte(chunk))
		require.NoError(t, err)
	}
	require.Equal(t, "http://idp/authorize?a=1", <-w.found)
	require.Empty(t, w.found, "only the first prompt is sent")
	require.Equal(t, "[mcp-inspector] x\nPlease navigate to: http://idp/authorize?a=1\nPlease navigate to: http://idp/second\n", w.String())
}

func TestInspectorArgs(t *testing.T) {
	t.Parallel()
	require.Equal(t,
		[]string{"--method", "tools/list", "--callback-url", DefaultInspectorCallbackURL, "--client-id", "c1", "--transport", "http", "--format", "json"},
		inspectorArgs(InspectorOptions{URL: "http://x/mcp", ClientID: "c1"}))
	require.Equal(t,
		[]string{"--method", "tools/call", "--callback-url", "http://127.0.0.1:7000/cb", "--client-secret", "s", "--tool-name", "echo", "--format=text", "--transport", "sse"},
		inspectorArgs(InspectorOptions{Method: "tools/call", CallbackURL: "http://127.0.0.1:7000/cb", ClientSecret: "s",
			Args: []string{"--tool-name", "echo", "--format=text", "--transport", "sse"}}))
}

func TestInspectorEnv(t *testing.T) {
	t.Parallel()
	got := inspectorEnv([]string{"PATH=/bin", "MCP_OAUTH_CALLBACK_URL=http://127.0.0.1:1/x", "https_proxy=http://p", "MCP_CATALOG_PATH=/home/u/mcp.json", "KEEP=1"})
	require.Equal(t, []string{"PATH=/bin", "KEEP=1"}, got)
}

func TestParseSteps(t *testing.T) {
	t.Parallel()
	steps, err := parseSteps("{\"step\":\"a\"}\n\n{\"step\":\"b\",\"n\":1}\n")
	require.NoError(t, err)
	require.Len(t, steps, 2)
	require.Equal(t, map[string]any{"step": "b", "n": float64(1)}, Step(steps, "b"))
	steps, err = parseSteps("{\"step\":\"a\"}\noops\n")
	require.ErrorContains(t, err, "oops")
	require.Len(t, steps, 1)
}

func TestInspectorResultError(t *testing.T) {
	t.Parallel()
	r := InspectorResult{Stderr: strings.Join([]string{
		"[mcp-inspector] Secrets are not written anywhere and are lost on exit.",
		`{"error":{"code":"auth_required","message":"Interactive OAuth requires a TTY"}}`,
		"",
	}, "\n")}
	require.Equal(t, map[string]any{"code": "auth_required", "message": "Interactive OAuth requires a TTY"}, r.Error())
	require.Nil(t, InspectorResult{Stderr: "Authorization complete.\n"}.Error())
}
