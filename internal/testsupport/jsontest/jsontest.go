// Package jsontest holds the check the tests of mcpflow's JSON fast paths
// share: an encoder written by hand says what json.Marshal says.
package jsontest

import (
	"bytes"
	"encoding/json"
	"testing"
)

// SameAsMarshal fails t unless got and err (a hand-written encoder's) agree
// with want and wantErr (json.Marshal's of the same value): both fail, or
// both are JSON of the same value (spacing and escaping may differ).
func SameAsMarshal(t testing.TB, want []byte, wantErr error, got []byte, err error) {
	t.Helper()
	if (wantErr == nil) != (err == nil) {
		t.Fatalf("json.Marshal error %v, ours %v", wantErr, err)
	}
	if err != nil {
		return
	}
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("json.Marshal wrote %q: %v", want, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("ours is not JSON: %q", got)
	}
	wb, _ := json.Marshal(w)
	gb, _ := json.Marshal(g)
	if !bytes.Equal(wb, gb) {
		t.Fatalf("json.Marshal %s\nours         %s", want, got)
	}
}
