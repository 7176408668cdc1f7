package mcpclient

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow"
)

// A server's list change reaches the watchers of its scope that may reach
// the server: a stdio process's thread, a user's own session's user, or
// everyone for a shared session.
func TestListsChangedScopes(t *testing.T) {
	r := &Runtime{}
	var got []string
	watch := func(scope string, allowed ...string) {
		r.listWatchers[&listWatcher{scope: scope, changed: func(m string) { got = append(got, scope+" "+m) },
			allowed: func(server string) bool { return slices.Contains(allowed, server) }}] = struct{}{}
	}
	r.listWatchers = map[*listWatcher]struct{}{}
	watch("alice:t1", "files", "docs")
	watch("alice:t2", "files", "docs")
	watch("alice:t10", "files")
	watch("bob:t1", "files")
	for _, c := range []struct{ server, scope, want string }{
		{"files", "alice:t1", "[alice:t1 m]"},                         // a stdio process of one thread (not t10's)
		{"docs", "alice:", "[alice:t1 m alice:t2 m]"},                 // a user's own session
		{"files", "", "[alice:t1 m alice:t10 m alice:t2 m bob:t1 m]"}, // a shared session
		{"docs", "", "[alice:t1 m alice:t2 m]"},                       // bob may not reach docs
		{"files", "carol:t1", "[]"},
	} {
		got = nil
		r.listsChanged(c.server, c.scope, "m")
		slices.Sort(got)
		if s := "[" + strings.Join(got, " ") + "]"; s != c.want {
			t.Errorf("%s %q: %s, want %s", c.server, c.scope, s, c.want)
		}
	}
}

// notFound: -32602, and -32002 without a retry delay, say a server has no
// such resource; a -32002 with one is a refusal (a rate limit), not that.
func TestResourceNotFound(t *testing.T) {
	for _, tc := range []struct {
		rpc  mcpflow.RPCError
		want bool
	}{
		{mcpflow.RPCError{Code: -32602, Message: "Resource not found"}, true},
		{mcpflow.RPCError{Code: -32002, Message: "Resource not found"}, true},
		{mcpflow.RPCError{Code: -32002, Message: "rate limit", Data: json.RawMessage(`{"retryAfterSeconds":3}`)}, false},
		{mcpflow.RPCError{Code: -32603, Message: "boom"}, false},
	} {
		if got := notFound(&tc.rpc); got != tc.want {
			t.Errorf("%+v: %v", tc.rpc, got)
		}
	}
}
