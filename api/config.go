package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow"
)

// readConfig answers a config read (the servers, the policies, the
// virtual servers).
func (s *Server) readConfig(read func(ctx context.Context) ([]byte, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		out, err := read(c.Request.Context())
		s.renderConfig(c, http.StatusOK, out, err)
	}
}

// writeConfig hands the request body to a config write and renders its
// answer with code.
func (s *Server) writeConfig(code int, write func(ctx context.Context, actor string, body []byte) ([]byte, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		body, ok := s.readBody(c)
		if !ok {
			return
		}
		out, err := write(c.Request.Context(), s.actor(c), body)
		s.renderConfig(c, code, out, err)
	}
}

func (s *Server) patchConfig(c *gin.Context) {
	body, ok := s.readBody(c)
	if !ok {
		return
	}
	var req struct {
		ServerName *string `json:"server_name"`
		Enabled    *bool   `json:"enabled"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.ServerName == nil || req.Enabled == nil {
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, `request body must be {"server_name": "<name>", "enabled": true|false}`))
		return
	}
	if strings.TrimSpace(*req.ServerName) == "" {
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "server_name must not be empty"))
		return
	}
	out, err := s.opts.Config.SetMCPServerEnabled(c.Request.Context(), s.actor(c), *req.ServerName, *req.Enabled)
	s.renderConfig(c, http.StatusOK, out, err)
}

func (s *Server) renderConfig(c *gin.Context, code int, out []byte, err error) {
	if err != nil {
		s.renderError(c, err)
		return
	}
	c.Data(code, "application/json; charset=utf-8", out)
}

// actor names the admin of a request in the config audit log.
func (s *Server) actor(c *gin.Context) string {
	p, _ := principal(c)
	return "admin " + p.TokenID + " (request " + requestID(c) + ")"
}
