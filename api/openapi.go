package api

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// OpenAPI is the API's OpenAPI 3 description, served at /openapi.json. A
// test checks that it and the registered routes agree.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) openAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/json; charset=utf-8", OpenAPI)
}

// Routes returns the registered routes as "METHOD /path" with gin's
// ":param" segments.
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.engine.Routes() {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}
