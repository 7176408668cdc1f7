package mcpclient

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/config"
)

// TestSharedDropDuringDial pins that forgetting a shared session while
// another caller dials the same server is free of data races (run with
// -race): the dial publishes its session under the runtime's lock.
func TestSharedDropDuringDial(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "not an MCP server", http.StatusInternalServerError)
	}))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	timeout := 30.0
	srv := &config.Server{Name: "x", Enabled: true, Type: config.TransportHTTP, URL: hs.URL, SessionInitTimeout: &timeout}
	r := NewRuntime(Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = r.Close() })

	errc := make(chan error, 1)
	go func() {
		_, err := r.acquireShared(context.Background(), srv, connFingerprint(*srv), "", nil, false)
		errc <- err
	}()
	<-arrived
	r.dropShared(&sharedSession{key: sharedKey{server: "x"}, server: "x"}) // a call that failed on an older session of x
	close(release)
	require.Error(t, <-errc)
}
