package mcpclient

import (
	"net/url"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A discovery error is logged without the server URL, whose query may carry
// a credential.
func TestWithoutURL(t *testing.T) {
	t.Parallel()
	err := withoutURL(&url.Error{Op: "Post", URL: "https://mcp.example/mcp?api_key=s3cr3t", Err: syscall.ECONNREFUSED})
	require.NotContains(t, err.Error(), "s3cr3t")
	require.Contains(t, err.Error(), "connection refused")
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	plain := syscall.ECONNRESET
	require.Equal(t, error(plain), withoutURL(plain))
}
