package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestWithEnvelope: a 2026-07-28 request's params carry the revision,
// the capabilities and mcpflow's clientInfo in _meta, over the request's
// own _meta keys; the params are kept.
func TestWithEnvelope(t *testing.T) {
	s := &Session{version: mcp.ProtocolVersion20260728, info: mcp.Implementation{Name: "mcpflow", Version: "t"},
		clientCaps: map[string]any{"extensions": map[string]any{ExtTasks: map[string]any{}}}}
	decode := func(b json.RawMessage) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m), "%s", b)
		return m
	}
	sessionMeta := map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{ExtTasks: map[string]any{}}},
		mcp.MetaKeyClientInfo:         map[string]any{"name": "mcpflow", "version": "t"},
	}

	// A plain call: name and arguments kept, the session's _meta.
	b, err := s.withEnvelope(mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}, s.clientCaps, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"name": "echo", "arguments": map[string]any{"message": "hi"}, "_meta": sessionMeta}, decode(b))
	// Twice the same (the session's _meta is encoded once).
	b2, err := s.withEnvelope(mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}, s.clientCaps, nil)
	require.NoError(t, err)
	require.JSONEq(t, string(b), string(b2))

	// A call with _meta of its own (a progress token, a key mcpflow adds,
	// one that names the revision differently): its keys kept, the
	// envelope's win.
	own := mcp.NewMetaFromMap(map[string]any{"progressToken": "p-1", "x-run": "r", mcp.MetaKeyProtocolVersion: "1999-01-01"})
	b, err = s.withEnvelope(mcp.CallToolParams{Name: "echo", Meta: own}, s.clientCaps, nil)
	require.NoError(t, err)
	m := decode(b)
	meta := m["_meta"].(map[string]any)
	require.Equal(t, "p-1", meta["progressToken"])
	require.Equal(t, "r", meta["x-run"])
	require.Equal(t, mcp.ProtocolVersion20260728, meta[mcp.MetaKeyProtocolVersion])
	require.Equal(t, "echo", m["name"])

	// The caller's capabilities (a relayed call) instead of the session's.
	relay := &mcpflow.CallRelay{ClientCapabilities: json.RawMessage(`{"elicitation":{}}`)}
	b, err = s.withEnvelope(mcp.CallToolParams{Name: "echo"}, nil, relay)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"elicitation": map[string]any{}}, decode(b)["_meta"].(map[string]any)[mcp.MetaKeyClientCapabilities])
	// A stdio server (a process here) is not told of the caller's roots; an
	// HTTP server is.
	rooted := &mcpflow.CallRelay{ClientCapabilities: json.RawMessage(`{"roots":{},"sampling":{}}`)}
	b, err = s.withEnvelope(mcp.CallToolParams{Name: "echo"}, nil, rooted)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"roots": map[string]any{}, "sampling": map[string]any{}}, decode(b)["_meta"].(map[string]any)[mcp.MetaKeyClientCapabilities])
	stdio := &Session{version: s.version, info: s.info, clientCaps: s.clientCaps, proc: &sessProc{}}
	b, err = stdio.withEnvelope(mcp.CallToolParams{Name: "echo"}, nil, rooted)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"sampling": map[string]any{}}, decode(b)["_meta"].(map[string]any)[mcp.MetaKeyClientCapabilities])

	// A map with _meta (tasks/*), and no params.
	b, err = s.withEnvelope(map[string]any{"taskId": "t1", "_meta": map[string]any{"k": "v"}}, s.clientCaps, nil)
	require.NoError(t, err)
	m = decode(b)
	require.Equal(t, "t1", m["taskId"])
	require.Equal(t, "v", m["_meta"].(map[string]any)["k"])
	require.Equal(t, mcp.ProtocolVersion20260728, m["_meta"].(map[string]any)[mcp.MetaKeyProtocolVersion])
	b, err = s.withEnvelope(nil, s.clientCaps, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"_meta": sessionMeta}, decode(b))
	// Any other type is a programming error, refused rather than guessed.
	_, err = s.withEnvelope([]int{1}, s.clientCaps, nil)
	require.ErrorContains(t, err, "[]int")
}

// TestWithoutRoots: a caller's capabilities reach a stdio server without
// roots, and unchanged when they have none.
func TestWithoutRoots(t *testing.T) {
	require.JSONEq(t, `{"sampling":{},"elicitation":{"form":{}}}`,
		string(withoutRoots(json.RawMessage(`{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{}}}`))))
	in := json.RawMessage(`{"sampling":{}}`)
	require.Equal(t, string(in), string(withoutRoots(in)))
	require.Equal(t, `{}`, string(withoutRoots(json.RawMessage(`"roots"`))), "not an object: nothing declared")
}

// TestRelayMetaIsTheMapsEncoding: the spliced _meta of a relayed call is,
// byte for byte, what json.Marshal writes for the map it replaces, or nil
// (the map is encoded) where it cannot be.
func TestRelayMetaIsTheMapsEncoding(t *testing.T) {
	s := &Session{version: mcp.ProtocolVersion20260728, info: mcp.Implementation{Name: "mcp\"flow", Version: "t<1>"}}
	for _, caps := range []string{``, `{}`, `{"elicitation":{}}`, " {\n \"sampling\" : { \"x\" : [1, 2.5e3, \"\\u00e9\"] } } ",
		`{"roots":{"listChanged":true},"sampling":{}}`, `{"x":"<b>"}`, `{"x":"a&b"}`, `{"x":"\u2028"}`, `{"x":"\\u003c"}`} {
		for _, proc := range []bool{false, true} {
			s.proc = nil
			if proc {
				s.proc = &sessProc{}
			}
			relay := &mcpflow.CallRelay{ClientCapabilities: json.RawMessage(caps)}
			rc := relay.ClientCapabilities
			if proc {
				rc = withoutRoots(rc)
			}
			got := s.relayMeta(nil, nil, relay)
			if rc != nil && len(rc) == 0 {
				require.Nil(t, got, "an empty value is not JSON: the map's encoding refuses it")
				continue
			}
			want, err := json.Marshal(map[string]any{mcp.MetaKeyProtocolVersion: s.version,
				mcp.MetaKeyClientCapabilities: rc, mcp.MetaKeyClientInfo: s.info})
			require.NoError(t, err)
			if strings.ContainsAny(caps, "<>&\u2028") {
				require.Nil(t, got, "%q: left to json.Marshal", caps)
				continue
			}
			require.Equal(t, string(want), string(got), "caps %q, stdio %v", caps, proc)
		}
	}
	require.Nil(t, s.relayMeta(map[string]any{"k": 1}, nil, &mcpflow.CallRelay{}), "own _meta: the map")
	require.Nil(t, s.relayMeta(nil, map[string]any{}, &mcpflow.CallRelay{}), "the session's capabilities: sessionMeta")
}
