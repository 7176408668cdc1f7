package api

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow"
)

// HeaderThreadID names the thread of a request to /mcp (else the user's
// default thread).
const HeaderThreadID = "Mcpflow-Thread-Id"

// checkOrigin refuses (403) an Origin not in server.allowed_origins, against
// DNS rebinding. No Origin passes, and so does a loopback origin on a
// loopback connection (a local MCP Inspector; a rebound page keeps its own
// origin). An allowed origin gets the CORS headers a browser needs.
func (s *Server) checkOrigin(c *gin.Context) {
	origin := c.GetHeader("Origin")
	if origin == "" {
		c.Next()
		return
	}
	allowed := loopbackOrigin(origin) && loopbackConn(c.Request)
	for _, o := range s.opts.AllowedOrigins {
		allowed = allowed || strings.EqualFold(o, origin)
	}
	if allowed {
		h := c.Writer.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate, Retry-After, X-Request-ID")
		c.Next()
		return
	}
	s.renderError(c, mcpflow.Errorf(mcpflow.EForbidden, "Origin not allowed: add it to server.allowed_origins to use the MCP endpoint from that web page"))
}

// mcpPreflight answers a CORS preflight of the MCP endpoint (its origin
// was checked by checkOrigin).
func (s *Server) mcpPreflight(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Allow", "GET, POST, DELETE, OPTIONS")
	if c.GetHeader("Origin") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID, Mcpflow-Thread-Id")
		h.Set("Access-Control-Max-Age", "600")
	}
	c.Status(http.StatusNoContent)
}

// serveMCP hands an MCP request to the MCP server with its user, its thread
// (path, else Mcpflow-Thread-Id, else the default; created on first use)
// and the user's slots of calls, waits and GET streams.
func (s *Server) serveMCP(c *gin.Context) {
	id := c.Param("thread_id")
	if id == "" {
		if id = c.GetHeader(HeaderThreadID); id == "" {
			p, _ := principal(c)
			id = mcpflow.DefaultThreadID(p.UserID)
		}
	}
	t, ok := s.threadFor(c, id)
	if !ok {
		return
	}
	if vs := c.Param("server"); vs != "" {
		views, _ := s.opts.Tools.(mcpflow.ToolViews)
		known := false
		if views != nil && mcpflow.ValidateID("virtual server name", vs) == nil {
			var err error
			if known, err = views.HasView(c.Request.Context(), vs); err != nil {
				s.renderError(c, err)
				return
			}
		}
		if !known {
			s.renderError(c, mcpflow.Errorf(mcpflow.ENotFound, "virtual server not found"))
			return
		}
		c.Request = c.Request.WithContext(mcpflow.WithToolView(c.Request.Context(), vs))
	}
	user := t.UserID
	req := &mcpflow.MCPRequest{UserID: user, ThreadID: t.ID, AcquireCall: s.calls.acquirer(user),
		AcquireWait: s.waits.acquirer(user), AcquireStream: s.streams.acquirer(user)}
	s.opts.MCP.ServeMCP(c.Writer, c.Request, req)
	if req.Method != "" {
		c.Set(ctxMCPMethod, req.Method)
	}
}

// loopbackOrigin reports whether an Origin names a loopback host over
// http or https.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackConn reports whether the request came in on a loopback address
// of this process's listener.
func loopbackConn(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
