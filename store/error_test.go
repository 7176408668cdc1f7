package store

import (
	"database/sql/driver"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/mcpflow/mcpflow"
)

func TestAsUnavailable(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
		fmt.Errorf("read: %w", syscall.ECONNRESET),
		driver.ErrBadConn,
		&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		&pgconn.PgError{Code: "08006"},
	} {
		got := asUnavailable(fmt.Errorf("get task: %w", err))
		require.Equal(t, mcpflow.EUnavailable, mcpflow.ErrorCode(got), "%v", err)
		require.ErrorIs(t, got, err, "the cause stays in the chain")
	}
	for _, err := range []error{
		gorm.ErrRecordNotFound,
		&pgconn.PgError{Code: "23505"},
		mcpflow.Errorf(mcpflow.ENotFound, "MCP task not found"),
		fmt.Errorf("plain"),
	} {
		require.Equal(t, mcpflow.ErrorCode(err), mcpflow.ErrorCode(asUnavailable(err)), "%v", err)
	}
	require.NoError(t, asUnavailable(nil))
}
