package session

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// heldRead serves next, except that the resources/read of uri is held
// until release is called (reading is closed when the first arrives);
// then the server answers it with errObj, a JSON-RPC error object, or,
// when nil, next does. The server is closed at the test's end, released
// first (it waits for the read).
func heldRead(t *testing.T, uri string, errObj map[string]any, next http.HandlerFunc) (url string, reading <-chan struct{}, release func()) {
	t.Helper()
	rd, held := make(chan struct{}), make(chan struct{})
	var readOnce, readingOnce sync.Once
	release = func() { readOnce.Do(func() { close(held) }) }
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get(mcp.HeaderMethod) == string(mcp.MethodResourcesRead) && r.Header.Get(mcp.HeaderName) == uri {
			readingOnce.Do(func() { close(rd) })
			select { // the server takes its time to read uri
			case <-held:
			case <-r.Context().Done():
				return
			}
			if errObj != nil {
				var msg struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.NewDecoder(r.Body).Decode(&msg)
				rw.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(rw).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": errObj})
				return
			}
		}
		next(rw, r)
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(release) // (cleanups run last first: before ts.Close)
	return ts.URL + "/mcp", rd, release
}
