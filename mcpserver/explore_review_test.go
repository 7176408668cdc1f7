package mcpserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// exploreDo sends one raw request to the bundle's endpoint and decodes its
// JSON-RPC answer.
func exploreDo(t *testing.T, b *modernBundle, method, body string, headers map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.srv.URL, r)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	}
	return resp.StatusCode, resp.Header, out
}

func exploreErr(out map[string]any) (float64, string) {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(float64)
	m, _ := e["message"].(string)
	return c, m
}

// Defect (explore review): an MCP-Protocol-Version header that names no
// revision mcpflow serves, but sorts after "2026-07-28" as a string
// ("2027-01-01", "latest", "2026-13-99", "v2"), is taken for a 2026-07-28
// request (mcp.IsModernProtocol compares strings). docs/reference/
// mcp-endpoint.md: "A request is 2026-07-28 when its params._meta carries
// io.modelcontextprotocol/protocolVersion (or its MCP-Protocol-Version
// header names 2026-07-28); everything else follows the 2025-11-25 session
// rules", and docs/agent-developers.md lists for the MCP endpoint "HTTP
// 400 ... an unsupported Mcp-Protocol-Version (named, with the revisions
// mcpflow speaks, before any session check)". "1.0" and "2025-01-01" get
// that answer; "2027-01-01" gets -32602 "params._meta[...] is required in
// protocol 2027-01-01" on POST, and on a 2025 session's DELETE or GET a
// 405 "protocol 2026-07-28 takes POST only" with Allow: POST.
func TestExploreUnknownProtocolVersionHeaderIsNot2026(t *testing.T) {
	t.Parallel()
	b := newModern(t)
	const list = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	// The reference answer: a version before 2026-07-28 that mcpflow does
	// not speak.
	status, _, out := exploreDo(t, b, "POST", list, map[string]string{HeaderProtocolVersion: "2025-01-01", HeaderSessionID: "mcp-session-x"})
	require.Equal(t, http.StatusBadRequest, status, "%v", out)
	code, msg := exploreErr(out)
	require.Equal(t, -32600.0, code, "%v", out)
	require.Contains(t, msg, "unsupported Mcp-Protocol-Version 2025-01-01")

	for _, v := range []string{"2027-01-01", "latest", "2026-13-99"} {
		t.Run("POST "+v, func(t *testing.T) {
			status, _, out := exploreDo(t, b, "POST", list, map[string]string{HeaderProtocolVersion: v, HeaderSessionID: "mcp-session-x"})
			code, msg := exploreErr(out)
			require.Equal(t, http.StatusBadRequest, status, "%s: %v", v, out)
			require.Equal(t, -32600.0, code, "POST with MCP-Protocol-Version %q: want the unsupported-version refusal, got %v", v, out)
			require.Contains(t, msg, "unsupported Mcp-Protocol-Version "+v, "%v", out)
		})
		for _, m := range []string{"DELETE", "GET"} {
			t.Run(m+" "+v, func(t *testing.T) {
				status, hdr, out := exploreDo(t, b, m, "", map[string]string{HeaderProtocolVersion: v, HeaderSessionID: "mcp-session-x",
					"Accept": "text/event-stream"})
				_, msg := exploreErr(out)
				require.NotEqual(t, http.StatusMethodNotAllowed, status,
					"%s with MCP-Protocol-Version %q is not a 2026-07-28 request, yet: %d Allow=%q %q", m, v, status, hdr.Get("Allow"), msg)
				require.Equal(t, http.StatusBadRequest, status, "%s %q: %v", m, v, out)
				require.Contains(t, msg, "unsupported Mcp-Protocol-Version", "%s %q: %v", m, v, out)
			})
		}
	}
}

// Defect (explore review): the header value of the misclassified request
// above is echoed whole in the error message. Every other echo of a
// client's header on this endpoint is cut (truncate(v, 40) for
// Mcp-Protocol-Version in requireSession and in the header/_meta mismatch,
// 60 for Mcp-Method); this one (checkModern, "is required in protocol %s")
// echoes up to the whole header, 4 KiB here.
func TestExploreProtocolVersionHeaderEchoIsBounded(t *testing.T) {
	t.Parallel()
	b := newModern(t)
	long := "z" + strings.Repeat("9", 4095)
	status, _, out := exploreDo(t, b, "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{HeaderProtocolVersion: long})
	require.Equal(t, http.StatusBadRequest, status, "%v", out)
	_, msg := exploreErr(out)
	require.Less(t, len(msg), 600, "the error message echoes the whole %d-byte MCP-Protocol-Version header (%d bytes)", len(long), len(msg))
}

// Defect (explore review): a request id that is neither a string nor a
// number (an object, an array, a boolean) is accepted and echoed, while
// "id": null is refused with HTTP 400 -32600 `"id" must be a string or a
// number (a notification has no "id" at all)`. JSON-RPC 2.0 and MCP
// (RequestId = string | number) allow only strings and numbers, and the
// endpoint's own message says so; docs/agent-developers.md documents the
// 400 -32600 refusal of a bad id ("id": null). Against make dev,
// initialize with "id": {"a": 1} answered 200 with a session, and ping
// with "id": true answered {"id": true, "result": {}}.
func TestExploreNonScalarJSONRPCIDsRefused(t *testing.T) {
	t.Parallel()
	b := newModern(t)
	const init = `{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	// The reference: null is refused.
	status, _, out := exploreDo(t, b, "POST", strings.Replace(init, "%s", "null", 1), nil)
	require.Equal(t, http.StatusBadRequest, status, "%v", out)
	code, _ := exploreErr(out)
	require.Equal(t, -32600.0, code)

	for _, id := range []string{`{"a":1}`, `[1]`, `true`, `false`} {
		status, hdr, out := exploreDo(t, b, "POST", strings.Replace(init, "%s", id, 1), nil)
		code, msg := exploreErr(out)
		require.Equal(t, http.StatusBadRequest, status,
			"id %s is not a string or a number, yet initialize answered %d (session %q): %v", id, status, hdr.Get(HeaderSessionID), out)
		require.Equal(t, -32600.0, code, "%v", out)
		require.Contains(t, msg, `"id" must be a string or a number`)
	}
}
