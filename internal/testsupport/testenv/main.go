package testenv

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
)

// Main is a package's TestMain: it runs the tests, then beforeCheck (the
// package's idle keep-alive connections closed: their read and write
// loops are not leaks), removes the binaries the tests built, and fails a
// passing run when a goroutine outlived the tests.
func Main(m *testing.M, beforeCheck ...func()) {
	code := m.Run()
	for _, f := range beforeCheck {
		f()
	}
	CleanupBinaries()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// DemoInProcess serves a fresh demo server over sse or http with httptest
// on 127.0.0.1, wrapped by wrap when not nil, and returns its MCP endpoint
// and a function that ends its MCP sessions; the test stops it.
func DemoInProcess(t testing.TB, transport string, wrap func(http.Handler) http.Handler) (url string, closeSessions func()) {
	t.Helper()
	srv, err := demomcp.New(demomcp.Config{Workdir: t.TempDir()})
	require.NoError(t, err)
	h, closeAll, err := srv.HTTPHandler(transport)
	require.NoError(t, err)
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		closeAll(context.Background())
		ts.Close()
	})
	path := demomcp.StreamableHTTPPath
	if transport == "sse" {
		path = demomcp.SSEPath
	}
	return ts.URL + path, func() { closeAll(context.Background()) }
}
