package mcpflow

import (
	"encoding/json"
	"testing"
)

// Approvers are named users or members of named groups (the groups claim,
// a list or one string); the caller of the call never decides it, and
// neither does a caller without a user id (an admin token).
func TestMayDecide(t *testing.T) {
	a := &Approval{UserID: "alice", Approvers: []string{"group:ops", "user:carol"}}
	for _, tc := range []struct {
		c    *Caller
		want bool
	}{
		{&Caller{UserID: "carol"}, true},
		{&Caller{UserID: "dave", Claims: map[string]json.RawMessage{"groups": json.RawMessage(`["dev", "ops"]`)}}, true},
		{&Caller{UserID: "erin", Claims: map[string]json.RawMessage{"groups": json.RawMessage(`"ops"`)}}, true},
		{&Caller{UserID: "frank", Claims: map[string]json.RawMessage{"groups": json.RawMessage(`["dev"]`)}}, false},
		{&Caller{UserID: "gina", Claims: map[string]json.RawMessage{"roles": json.RawMessage(`["ops"]`)}}, false},
		{&Caller{UserID: "bob"}, false},
		{&Caller{UserID: "alice", Claims: map[string]json.RawMessage{"groups": json.RawMessage(`["ops"]`)}}, false},
		{&Caller{Admin: true}, false},
		{nil, false},
	} {
		if got := a.MayDecide(tc.c); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.c, got, tc.want)
		}
	}
}
