package api

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMEErrorTable: README.md's error table has a row for every error
// code the API answers, with its HTTP status.
func TestREADMEErrorTable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	codes := map[string]int{"method_not_allowed": http.StatusMethodNotAllowed}
	for code, status := range statusByCode {
		codes[code] = status
	}
	for code, status := range codes {
		require.True(t, strings.Contains(string(readme), fmt.Sprintf("| `%s` | %d |", code, status)),
			"README.md's error table lacks the row of %s (%d)", code, status)
	}
}
