package api

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMEErrorTable: the error table of docs/reference/http-api.md has a
// row for every error code the API answers, with its HTTP status.
func TestREADMEErrorTable(t *testing.T) {
	readme, err := os.ReadFile("../docs/reference/http-api.md")
	require.NoError(t, err)
	codes := map[string]int{"method_not_allowed": http.StatusMethodNotAllowed}
	for code, status := range statusByCode {
		codes[code] = status
	}
	for code, status := range codes {
		require.True(t, strings.Contains(string(readme), fmt.Sprintf("| `%s` | %d |", code, status)),
			"the error table of docs/reference/http-api.md lacks the row of %s (%d)", code, status)
	}
}
