package session

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// review4StdioCaps is the clientCapabilities a stdio server reads in a
// relayed 2026-07-28 call's _meta, decoded as an mcp-go server decodes
// them (encoding/json into mcp.ClientCapabilities).
func review4StdioCaps(t *testing.T, caps string) mcp.ClientCapabilities {
	t.Helper()
	s := &Session{version: mcp.ProtocolVersion20260728, info: mcp.Implementation{Name: "mcpflow", Version: "t"}, proc: &sessProc{}}
	body, err := s.withEnvelope(mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{}`)}, nil,
		&mcpflow.CallRelay{ClientCapabilities: json.RawMessage(caps)})
	if err != nil {
		t.Fatalf("%s: %v", caps, err)
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("%s: params %q: %v", caps, body, err)
	}
	var cc mcp.ClientCapabilities
	if err := json.Unmarshal(p.Meta[mcp.MetaKeyClientCapabilities], &cc); err != nil {
		t.Fatalf("%s: capabilities %q: %v", caps, p.Meta[mcp.MetaKeyClientCapabilities], err)
	}
	return cc
}

// Found by review 4, failed before its fix: withoutRoots decided with bytes.Contains(caps,
// `"roots"`) whether there is anything to remove. A caller that spells the
// member with an escape (`"r\u006fots"`: the same name to encoding/json,
// which the slow path json.Unmarshal-into-a-map + delete("roots") would
// have removed) got past the literal test, and its roots capability
// reached the stdio server in _meta.clientCapabilities, which the
// function exists to prevent ("the caller's roots would name this host's
// files"). The server then believed the client lists roots (mcpflow
// answers its roots/list with METHOD_NOT_FOUND).
func TestReview4WithoutRootsEscapedName(t *testing.T) {
	for _, caps := range []string{
		`{"r\u006fots":{"listChanged":true},"sampling":{}}`,
		`{"\u0072\u006f\u006f\u0074\u0073":{}}`,
	} {
		// What the encoding/json path (taken when the literal is present)
		// makes of it: no roots.
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(caps), &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["roots"]; !ok {
			t.Fatalf("%s: the test assumes encoding/json reads a member roots", caps)
		}
		if cc := review4StdioCaps(t, caps); cc.Roots != nil {
			t.Errorf("%s: a stdio server is told the caller's roots (withoutRoots gave %s)", caps, withoutRoots(json.RawMessage(caps)))
		}
	}
}

// Found by review 4, failed before its fix: a Go stdio server (mcp-go, or any encoding/json
// decode into a struct with a `json:"roots"` field) matches member names
// case-insensitively, with Unicode simple folding ("ſ" U+017F is "s"):
// "Roots", "ROOTS" and "rootſ" all set its Roots capability. withoutRoots
// deleted only the exact key "roots" (and skipped the object entirely when
// the exact literal is absent), so these reached the stdio server as roots.
// Both of its paths missed them; the fix drops every key that
// encoding/json would match to "roots".
func TestReview4WithoutRootsFoldedName(t *testing.T) {
	for _, caps := range []string{
		`{"Roots":{"listChanged":true}}`,
		`{"ROOTS":{}}`,
		`{"rootſ":{}}`,
		`{"roots":{},"Roots":{"listChanged":true}}`,
	} {
		if cc := review4StdioCaps(t, caps); cc.Roots != nil {
			t.Errorf("%s: a Go stdio server reads roots in the capabilities it is sent (withoutRoots gave %s)", caps, withoutRoots(json.RawMessage(caps)))
		}
	}
}

// Passes (review 4, edge cases): completeAnswer's walk leaves to the probe
// the member names encoding/json folds to resultType or taskId with a
// non-ASCII rune (the Kelvin sign U+212A for "k", "ſ" U+017F for "s"),
// so the outcome is the decode's: a task, or a taskId of the wrong type
// refused.
func TestReview4CompleteAnswerUnicodeFolding(t *testing.T) {
	s := &Session{server: "srv"}
	for raw, want := range map[string]string{
		"{\"content\":[],\"re\u017fultType\":\"task\",\"taskId\":\"t1\"}":        "task t1",
		"{\"content\":[],\"resultType\":\"task\",\"tas\u212aId\":\"t2\"}":        "task t2",
		"{\"content\":[],\"resultType\":\"complete\",\"tas\u212aId\":5}":         "error",
		"{\"content\":[],\"resultType\":\"complete\",\"re\u017fultType\":\"x\"}": "error",
		`{"content":[],"resultType":"complete","taskId":"t"}`:                    "complete",
	} {
		in, err := s.toolAnswer("tool", json.RawMessage(raw))
		var ta *TaskAnswer
		got := "complete"
		switch {
		case errors.As(err, &ta):
			got = "task " + ta.TaskID
		case err != nil:
			got = "error"
		case in != nil:
			got = "input"
		}
		if got != want {
			t.Errorf("%s: %s (%v), want %s", raw, got, err, want)
		}
	}
}
