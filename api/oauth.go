package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow"
)

// mcpflow as an OAuth 2.1 protected resource (RFC 9728, RFC 8707): metadata
// naming the identity providers, challenges pointing at it, and their
// access tokens accepted for the request's resource.

// OAuthResource makes the API an OAuth 2.1 protected resource.
type OAuthResource struct {
	// Verifier checks the identity providers' access tokens.
	Verifier mcpflow.TokenVerifier
	// PublicURL is the origin clients reach mcpflow at
	// (server.public_url), with no trailing slash: the resource URI of
	// /api, and the base of /mcp's and each thread's.
	PublicURL string
	// AuthorizationServers are the issuers of the identity providers.
	AuthorizationServers []string
	// Scopes go in scopes_supported and the challenges' scope: required
	// and advertised ones (a host asks for the challenge's scope only).
	Scopes []string
}

// wellKnownPRM is the path of the Protected Resource Metadata (RFC 9728
// §3); a resource with a path has its own at this prefix plus its path.
const wellKnownPRM = "/.well-known/oauth-protected-resource"

// protectedResourceMetadata is the RFC 9728 document mcpflow publishes.
type protectedResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
	ResourceDocumentation  string   `json:"resource_documentation,omitempty"`
}

// addOAuthRoutes serves the metadata of the three kinds of resource: mcpflow
// itself (its REST API), /mcp, and each /mcp/threads/{thread_id}.
func (s *Server) addOAuthRoutes(e *gin.Engine) {
	o := s.opts.OAuth
	if o == nil {
		return
	}
	serve := func(c *gin.Context) {
		path := strings.TrimPrefix(c.Request.URL.Path, wellKnownPRM)
		if id := c.Param("thread_id"); id != "" && mcpflow.ValidateID("thread id", id) != nil {
			s.renderError(c, mcpflow.Errorf(mcpflow.ENotFound, "no such route"))
			return
		}
		if vs := c.Param("server"); vs != "" && mcpflow.ValidateID("virtual server name", vs) != nil {
			s.renderError(c, mcpflow.Errorf(mcpflow.ENotFound, "no such route"))
			return
		}
		// Public metadata, read by browser-based MCP hosts too.
		c.Header("Access-Control-Allow-Origin", "*")
		c.Header("Cache-Control", "public, max-age=300")
		c.JSON(http.StatusOK, protectedResourceMetadata{
			Resource:               o.PublicURL + path,
			AuthorizationServers:   o.AuthorizationServers,
			ScopesSupported:        o.Scopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "mcpflow",
		})
	}
	e.GET(wellKnownPRM, serve)
	if s.opts.MCP != nil {
		e.GET(wellKnownPRM+"/mcp", serve)
		e.GET(wellKnownPRM+"/mcp/threads/:thread_id", serve)
		e.GET(wellKnownPRM+"/mcp/v/:server", serve)
		e.GET(wellKnownPRM+"/mcp/v/:server/threads/:thread_id", serve)
	}
}

// resourcePath is the request's resource: "/mcp" or "/mcp/threads/{id}",
// else "" (mcpflow itself; also for an id unfit for a quoted parameter).
func resourcePath(c *gin.Context) string {
	switch c.FullPath() {
	case "/mcp":
		return "/mcp"
	case "/mcp/threads/:thread_id":
		if id := c.Param("thread_id"); mcpflow.ValidateID("thread id", id) == nil {
			return "/mcp/threads/" + id
		}
	case "/mcp/v/:server":
		if vs := c.Param("server"); mcpflow.ValidateID("virtual server name", vs) == nil {
			return "/mcp/v/" + vs
		}
	case "/mcp/v/:server/threads/:thread_id":
		vs, id := c.Param("server"), c.Param("thread_id")
		if mcpflow.ValidateID("virtual server name", vs) == nil && mcpflow.ValidateID("thread id", id) == nil {
			return "/mcp/v/" + vs + "/threads/" + id
		}
	}
	return ""
}

// resources are the resource URIs a token for the request may name in
// its audience: mcpflow itself (with and without the trailing slash a URL
// parser adds to an origin), and the request's own resource.
func (o *OAuthResource) resources(path string) []string {
	r := []string{o.PublicURL, o.PublicURL + "/"}
	if path != "" {
		r = append(r, o.PublicURL+path)
	}
	return r
}

// challenge is the WWW-Authenticate value of a refused request: the
// metadata URL of its resource (RFC 9728 §5.1), the scopes it needs, and
// errorCode ("" for a request without a token).
func (o *OAuthResource) challenge(path, errorCode string, scopes []string) string {
	var b strings.Builder
	b.WriteString(`Bearer resource_metadata="`)
	b.WriteString(o.PublicURL + wellKnownPRM + path)
	b.WriteByte('"')
	if len(scopes) > 0 {
		b.WriteString(`, scope="`)
		b.WriteString(strings.Join(scopes, " "))
		b.WriteByte('"')
	}
	if errorCode != "" {
		b.WriteString(`, error="`)
		b.WriteString(errorCode)
		b.WriteByte('"')
	}
	return b.String()
}

// authenticate accepts a static token, else an identity provider's access
// token for the request's resource. A refusal names no reason a caller
// could learn from (the log has it).
func (s *Server) authenticate(c *gin.Context) {
	o := s.opts.OAuth
	tok := bearerToken(c.GetHeader("Authorization"))
	if tok == "" {
		if o != nil {
			c.Header("WWW-Authenticate", o.challenge(resourcePath(c), "", o.Scopes))
		} else {
			c.Header("WWW-Authenticate", `Bearer realm="mcpflow"`)
		}
		s.renderError(c, mcpflow.Errorf(mcpflow.EUnauthorized, "Authentication required"))
		return
	}
	if p, ok := s.opts.Auth.Authenticate(tok); ok {
		c.Set(ctxPrincipal, p)
		c.Request = c.Request.WithContext(mcpflow.WithCaller(c.Request.Context(), &mcpflow.Caller{UserID: p.UserID, Admin: p.Admin}))
		c.Next()
		return
	}
	if o == nil {
		c.Header("WWW-Authenticate", `Bearer realm="mcpflow", error="invalid_token"`)
		s.renderError(c, mcpflow.Errorf(mcpflow.EUnauthorized, "invalid bearer token"))
		return
	}
	path := resourcePath(c)
	id, err := o.Verifier.VerifyAccessToken(c.Request.Context(), tok, o.resources(path))
	switch {
	case errors.Is(err, mcpflow.ErrTokenProviderUnavailable):
		s.log.LogAttrs(c.Request.Context(), slog.LevelWarn, "access token not checked: identity provider unavailable",
			slog.String("request_id", requestID(c)), slog.String("error", err.Error()))
		c.Header("Retry-After", "5")
		s.renderError(c, mcpflow.Errorf(mcpflow.EUnavailable, "the identity provider cannot be reached; retry later"))
		return
	case err != nil:
		s.log.LogAttrs(c.Request.Context(), slog.LevelInfo, "access token refused",
			slog.String("request_id", requestID(c)), slog.String("route", routeOf(c)), slog.String("reason", err.Error()))
		c.Header("WWW-Authenticate", o.challenge(path, "invalid_token", o.Scopes))
		s.renderError(c, mcpflow.Errorf(mcpflow.EUnauthorized, "invalid bearer token"))
		return
	case len(id.MissingScopes) > 0:
		c.Header("WWW-Authenticate", o.challenge(path, "insufficient_scope", o.Scopes))
		s.renderError(c, mcpflow.Errorf(mcpflow.EForbidden, "the access token lacks a required scope: %s", strings.Join(id.MissingScopes, " ")))
		return
	}
	p := Principal{UserID: id.UserID, Admin: id.Admin, Provider: id.Provider, AdminScope: id.AdminScope}
	if p.Admin {
		p.TokenID = "oidc:" + id.Provider + ":" + id.UserID
	}
	c.Set(ctxPrincipal, p)
	// The token goes on only to the credential layer, for token exchange.
	ctx := mcpflow.WithCaller(c.Request.Context(), &mcpflow.Caller{UserID: id.UserID, Admin: id.Admin, Provider: id.Provider,
		Scopes: id.Scopes, Claims: id.Claims})
	c.Request = c.Request.WithContext(mcpflow.WithCallerToken(ctx, tok))
	c.Next()
}

// refuseAdmin answers a request for an admin route from a caller who is
// not one. A signed-in user whose provider makes admins by scope gets an
// insufficient_scope challenge naming that scope.
func (s *Server) refuseAdmin(c *gin.Context, p Principal) {
	if o := s.opts.OAuth; o != nil && p.Provider != "" && p.AdminScope != "" {
		c.Header("WWW-Authenticate", o.challenge(resourcePath(c), "insufficient_scope", append(append([]string(nil), o.Scopes...), p.AdminScope)))
	}
	s.renderError(c, mcpflow.Errorf(mcpflow.EForbidden, "Admin privileges required to manage MCP configuration."))
}
