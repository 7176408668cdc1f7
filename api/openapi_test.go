package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpserver"
	"github.com/mcpflow/mcpflow/store"
)

// Every registered route is in /openapi.json and every documented route is
// registered (with every optional capability switched on).
func TestOpenAPIMatchesTheRoutes(t *testing.T) {
	t.Parallel()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(t.TempDir(), "o.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{})
	require.NoError(t, err)
	srv := api.New(api.Options{Auth: auth, Threads: db, Tools: &blockingTools{}, Tasks: db, Events: db, Approvals: db,
		OAuth:  &api.OAuthResource{Verifier: refuseAll{}, PublicURL: "https://mcpflow.example.com"},
		MCP:    mcpserver.New(mcpserver.Options{Tools: &blockingTools{}, Sessions: db, Events: db}),
		Config: &config.Admin{Path: filepath.Join(t.TempDir(), "x.json")}, Metrics: http.NotFoundHandler(),
		Logger: slog.New(slog.DiscardHandler)})

	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/openapi.json", nil))
	require.Equal(t, 200, w.Code)
	body, _ := io.ReadAll(w.Body)
	require.Equal(t, api.OpenAPI, body)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."))

	param := regexp.MustCompile(`:([a-z_]+)`)
	var registered []string
	for _, r := range srv.Routes() {
		registered = append(registered, r[:strings.Index(r, " ")]+" "+param.ReplaceAllString(r[strings.Index(r, " ")+1:], "{$1}"))
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(registered)
	slices.Sort(documented)
	require.Equal(t, registered, documented)
	require.Len(t, registered, 50)

	// The route table of docs/reference/http-api.md names every route too:
	// a row holds its methods (POST/GET/DELETE for several) and its path,
	// with {id} for the thread, before any query string; a row of the MCP
	// endpoint names /mcp after it ("`POST/GET/DELETE /mcp/threads/{id}`, `/mcp`").
	readme, err := os.ReadFile("../docs/reference/http-api.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `([A-Z/]+) ([^`?]+)[^`]*`(, `(/mcp)`)?")
	inREADME := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		for _, method := range strings.Split(m[1], "/") {
			inREADME[method+" "+m[2]] = true
			if m[4] != "" {
				inREADME[method+" "+m[4]] = true
			}
		}
	}
	for _, r := range registered {
		r = strings.ReplaceAll(r, "{thread_id}", "{id}")
		require.True(t, inREADME[r], "the route table of docs/reference/http-api.md lacks %s", r)
	}
}
