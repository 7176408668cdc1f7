package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow"
)

func (s *Server) getConfig(c *gin.Context) {
	out, err := s.opts.Config.MCPConfig(c.Request.Context())
	s.renderConfig(c, http.StatusOK, out, err)
}

func (s *Server) putConfig(c *gin.Context) {
	body, ok := s.configBody(c)
	if !ok {
		return
	}
	out, err := s.opts.Config.ReplaceMCPServers(c.Request.Context(), s.actor(c), body)
	s.renderConfig(c, http.StatusOK, out, err)
}

func (s *Server) addServers(c *gin.Context) {
	body, ok := s.configBody(c)
	if !ok {
		return
	}
	out, err := s.opts.Config.AddMCPServers(c.Request.Context(), s.actor(c), body)
	s.renderConfig(c, http.StatusCreated, out, err)
}

func (s *Server) patchConfig(c *gin.Context) {
	body, ok := s.configBody(c)
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

func (s *Server) configBody(c *gin.Context) ([]byte, bool) { return s.readBody(c) }

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
