package streamhttp_test

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// testHTTP is the HTTP client of every transport under test; TestMain
// closes its idle connections before it looks for leaked goroutines.
var testHTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// TestMain removes the binaries the benchmarks built and fails the run
// when a goroutine outlives the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	testHTTP.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections()
	testenv.CleanupBinaries()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
