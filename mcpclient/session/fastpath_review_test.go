package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// reviewOldToolAnswer is toolAnswer before completeAnswer (d2d10c9^),
// with every object probed: the old gate (the literal "resultType" in the
// answer) passed objects that spell the member otherwise, which encoding/
// json reads all the same, as complete.
func reviewOldToolAnswer(s *Session, name string, raw json.RawMessage) (*inputRequired, error) {
	var probe struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	what := s.toolRequest(name).what()
	if t := bytes.TrimLeft(raw, " \t\r\n"); (len(t) > 0 && t[0] == '{') || bytes.Contains(raw, []byte(`"resultType"`)) {
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, &mcpflow.Error{Code: mcpflow.EUpstream, Err: err, Message: what + " answered something that is not a result object"}
		}
	}
	switch probe.ResultType {
	case "", "complete":
		return nil, nil
	case "task":
		if probe.TaskID == "" {
			return nil, &mcpflow.Error{Code: mcpflow.EUpstream, Message: what + " answered a task without a taskId"}
		}
		return nil, &TaskAnswer{Server: s.server, Tool: name, TaskID: probe.TaskID}
	case "input_required":
		var in inputRequired
		if err := json.Unmarshal(raw, &in); err != nil || (len(in.Requests) == 0 && in.RequestState == "") {
			return nil, &mcpflow.Error{Code: mcpflow.EUpstream, Message: what + " asked for input without saying what it needs"}
		}
		return &in, nil
	}
	return nil, &mcpflow.Error{Code: mcpflow.EUpstream, Message: fmt.Sprintf(
		"%s answered resultType %q, which mcpflow cannot read: the call's outcome is unknown", what, mcpflow.TruncateChars(probe.ResultType, 40))}
}

func reviewOutcome(in *inputRequired, err error) string {
	var ta *TaskAnswer
	switch {
	case errors.As(err, &ta):
		return "task " + ta.TaskID
	case err != nil:
		return "error: " + err.Error()
	case in != nil:
		b, _ := json.Marshal(in)
		return "input " + string(b)
	}
	return "complete"
}

// The top-level resultType is not "complete" (encoding/json reads it
// case-insensitively and with escapes), yet the one literal mention, in a
// nested object, says "complete".
var reviewAnswerBreaks = []string{
	`{"ResultType":"task","taskId":"t1","content":[],"structuredContent":{"resultType":"complete"}}`,
	`{"result\u0054ype":"task","taskId":"t1","content":[],"structuredContent":{"resultType":"complete"}}`,
	`{"RESULTTYPE":"input_required","inputRequests":{"a":{"method":"elicitation/create"}},"content":[],"structuredContent":{"resultType":"complete"}}`,
	`{"resultType":"complete","resulttype":"task","taskId":"t1","content":[]}`,
	`{"\"resultType":"complete","result\u0054ype":"task","taskId":"t1"}`,
	// top-level complete, but taskId of the wrong type: the old decode
	// refused the answer as "not a result object"
	`{"content":[{"type":"text","text":"ok"}],"resultType":"complete","taskId":5}`,
}

func TestReviewCompleteAnswerAgainstDecode(t *testing.T) {
	s := &Session{server: "srv"}
	var failed []string
	for _, raw := range reviewAnswerBreaks {
		require.True(t, json.Valid([]byte(raw)), raw)
		got := reviewOutcome(s.toolAnswer("tool", json.RawMessage(raw)))
		want := reviewOutcome(reviewOldToolAnswer(s, "tool", json.RawMessage(raw)))
		if got != want {
			failed = append(failed, fmt.Sprintf("%s\n   new: %s\n   old: %s", raw, got, want))
		}
	}
	for _, f := range failed {
		t.Errorf("outcome changed: %s", f)
	}
}

func FuzzReviewCompleteAnswer(f *testing.F) {
	for _, s := range reviewAnswerBreaks {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"content":[],"resultType":"complete"}`))
	f.Add([]byte(`{"content":[],"resultType":"task","taskId":"t"}`))
	s := &Session{server: "srv"}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		got := reviewOutcome(s.toolAnswer("tool", raw))
		want := reviewOutcome(reviewOldToolAnswer(s, "tool", raw))
		if got != want {
			t.Fatalf("%q\nnew: %s\nold: %s", raw, got, want)
		}
	})
}

// ---- relayMeta

func reviewOldRelayMeta(s *Session, relay *mcpflow.CallRelay) ([]byte, error) {
	m := map[string]any{}
	m[mcp.MetaKeyProtocolVersion] = s.version
	if s.proc != nil {
		m[mcp.MetaKeyClientCapabilities] = withoutRoots(relay.ClientCapabilities)
	} else {
		m[mcp.MetaKeyClientCapabilities] = relay.ClientCapabilities
	}
	m[mcp.MetaKeyClientInfo] = s.info
	return json.Marshal(m)
}

func reviewCheckRelayMeta(t *testing.T, s *Session, caps json.RawMessage) {
	t.Helper()
	want, werr := reviewOldRelayMeta(s, &mcpflow.CallRelay{ClientCapabilities: caps})
	got := s.relayMeta(nil, nil, &mcpflow.CallRelay{ClientCapabilities: caps})
	if got == nil {
		return // the map's encoding runs
	}
	if werr != nil {
		t.Fatalf("caps %q (nil %v, proc %v): spliced %q where json.Marshal failed: %v", caps, caps == nil, s.proc != nil, got, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("caps %q (proc %v):\nnew %s\nold %s", caps, s.proc != nil, got, want)
	}
}

func reviewSessions() []*Session {
	var out []*Session
	for _, info := range []mcp.Implementation{{Name: "mcpflow", Version: "1"}, {Name: "a<b>&\u2028\"", Version: "\xff"}} {
		for _, proc := range []bool{false, true} {
			s := &Session{version: mcp.ProtocolVersion20260728, info: info}
			if proc {
				s.proc = &sessProc{}
			}
			out = append(out, s)
		}
	}
	return out
}

var reviewCaps = []string{`{}`, `null`, `{"roots":{}}`, `{"a":"\xff"}`, "{\"a\":\"\u2029\"}", `{"a":1e400}`, ` [ ] `,
	`"roots"`, `{"roots":1,"x":"<"}`, `{"a":"\u003c"}`, `1`, `{"a":{"b":[1,2,{"roots":true}]}}`, ` `, `{`, `{"a":1}x`}

func TestReviewRelayMeta(t *testing.T) {
	for _, s := range reviewSessions() {
		for _, c := range reviewCaps {
			reviewCheckRelayMeta(t, s, json.RawMessage(c))
		}
		reviewCheckRelayMeta(t, s, nil)
	}
}

// An empty, non-nil capabilities value: json.Marshal of the map refuses
// it (an empty RawMessage is not JSON), so withEnvelope failed; the splice
// writes null.
func TestReviewRelayMetaEmptyCaps(t *testing.T) {
	for _, s := range reviewSessions() {
		reviewCheckRelayMeta(t, s, json.RawMessage{})
	}
}

func FuzzReviewRelayMeta(f *testing.F) {
	for _, c := range reviewCaps {
		f.Add([]byte(c), false)
	}
	f.Fuzz(func(t *testing.T, caps []byte, proc bool) {
		if len(caps) == 0 {
			caps = nil
		}
		s := &Session{version: mcp.ProtocolVersion20260728, info: mcp.Implementation{Name: "mcpflow", Version: "1"}}
		if proc {
			s.proc = &sessProc{}
		}
		reviewCheckRelayMeta(t, s, caps)
	})
}
