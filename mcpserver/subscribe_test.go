package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/store"
)

// subsRuntime counts the resource subscriptions it holds.
type subsRuntime struct {
	noTools
	mu   sync.Mutex
	live map[string]int
}

func (r *subsRuntime) SubscribeResource(_ context.Context, _, _, uri string, _ func()) (func(), error) {
	if strings.HasPrefix(uri, "unknown:") {
		return nil, mcpflow.UnknownResource(uri)
	}
	r.mu.Lock()
	r.live[uri]++
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.live[uri]--
			r.mu.Unlock()
		})
	}, nil
}

func (r *subsRuntime) held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.live {
		n += c
	}
	return n
}

func (*subsRuntime) ListPrompts(context.Context, string, string) ([]json.RawMessage, error) {
	return nil, nil
}
func (*subsRuntime) GetPrompt(context.Context, string, string, string, map[string]any) (json.RawMessage, error) {
	return nil, nil
}
func (*subsRuntime) ListResources(context.Context, string, string) ([]json.RawMessage, error) {
	return nil, nil
}
func (*subsRuntime) ListResourceTemplates(context.Context, string, string) ([]json.RawMessage, error) {
	return nil, nil
}
func (*subsRuntime) ReadResource(context.Context, string, string, string) (json.RawMessage, error) {
	return nil, nil
}
func (*subsRuntime) WatchLists(context.Context, string, string, func(string)) (func(), error) {
	return func() {}, nil
}
func (*subsRuntime) Complete(context.Context, string, string, map[string]any) (json.RawMessage, error) {
	return nil, nil
}

// A 2025-11-25 session holds one subscription per URI (subscribing again
// replaces it), at most maxSessionSubscriptions, an unknown resource is
// -32602 with its URI, and ending the session ends them all.
func TestSessionSubscriptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, store.BackendSQLite, filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, _, err = db.CreateThread(ctx, &mcpflow.Thread{ID: "t", UserID: "u"})
	require.NoError(t, err)
	rt := &subsRuntime{live: map[string]int{}}
	s := New(Options{Tools: rt, Sessions: db, Events: db})
	req := &mcpflow.MCPRequest{UserID: "u", ThreadID: "t"}
	post := func(method, session, body string) map[string]any {
		r := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if session != "" {
			r.Header.Set(HeaderSessionID, session)
		}
		w := httptest.NewRecorder()
		s.ServeMCP(w, r, req)
		var out map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &out)
		if method == "POST" && strings.Contains(body, `"initialize"`) {
			out["session"] = w.Header().Get(HeaderSessionID)
		}
		return out
	}
	init := post("POST", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	caps := init["result"].(map[string]any)["capabilities"].(map[string]any)
	require.Equal(t, map[string]any{"subscribe": true, "listChanged": true}, caps["resources"])
	require.Equal(t, map[string]any{"listChanged": true}, caps["prompts"])
	sid := init["session"].(string)
	sub := func(uri string) map[string]any {
		return post("POST", sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":%q}}`, uri))
	}
	require.Equal(t, map[string]any{}, sub("a://1")["result"])
	require.Equal(t, map[string]any{}, sub("a://1")["result"])
	require.Equal(t, 1, rt.held(), "subscribing again replaces the subscription")
	e := post("POST", sid, `{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":5}}`)["error"].(map[string]any)
	require.Equal(t, float64(-32602), e["code"], "a uri that is not a string")
	e = post("POST", sid, `{"jsonrpc":"2.0","id":6,"method":"prompts/list","params":{"cursor":5}}`)["error"].(map[string]any)
	require.Equal(t, float64(-32602), e["code"], "a cursor that is not a string")
	e = sub("unknown:x")["error"].(map[string]any)
	require.Equal(t, float64(-32602), e["code"])
	require.Equal(t, map[string]any{"uri": "unknown:x"}, e["data"])
	for i := 2; i <= maxSessionSubscriptions; i++ {
		require.NotNil(t, sub(fmt.Sprintf("a://%d", i))["result"])
	}
	e = sub("a://over")["error"].(map[string]any)
	require.Contains(t, e["message"], "at most 100 resources")
	require.Equal(t, maxSessionSubscriptions, rt.held())
	require.Equal(t, map[string]any{}, post("POST", sid, `{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"a://1"}}`)["result"])
	require.Equal(t, maxSessionSubscriptions-1, rt.held())
	e = post("POST", sid, `{"jsonrpc":"2.0","id":4,"method":"resources/unsubscribe","params":{}}`)["error"].(map[string]any)
	require.Contains(t, e["message"], "resources/unsubscribe needs params.uri")

	post("DELETE", sid, "")
	require.Eventually(t, func() bool { return rt.held() == 0 }, 5*time.Second, 10*time.Millisecond, "ending the session ends its subscriptions")

	// A session ended elsewhere (another replica, idle expiry): the next
	// sweep ends its subscriptions here; a live session's stay.
	other := post("POST", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)["session"].(string)
	live := post("POST", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)["session"].(string)
	for _, id := range []string{other, live} {
		require.NotNil(t, post("POST", id, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"a://x"}}`)["result"])
	}
	require.Equal(t, 2, rt.held())
	require.NoError(t, db.DeleteMCPSession(ctx, other))
	s.dropEndedSubscriptions(ctx)
	require.Eventually(t, func() bool { return rt.held() == 1 }, 5*time.Second, 10*time.Millisecond, "the ended session's subscription ends, the live one's stays")
}
