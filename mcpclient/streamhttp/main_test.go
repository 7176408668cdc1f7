package streamhttp_test

import (
	"net/http"
	"testing"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient/streamhttp"
)

// testHTTP is the HTTP client of every transport under test, with the
// round tripper mcpflow's sessions use; TestMain closes its idle
// connections before it looks for leaked goroutines.
var testHTTP = &http.Client{Transport: streamhttp.NewDirect(http.DefaultTransport.(*http.Transport).Clone())}

// TestMain fails the run when a goroutine outlives the tests; the
// transports' idle connections are closed first.
func TestMain(m *testing.M) {
	testenv.Main(m, testHTTP.CloseIdleConnections, http.DefaultClient.CloseIdleConnections)
}
