package mcpflow

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"strings"
	"time"
)

// Callers signed in with an identity provider (MCP authorization, issue 26).
//
// mcpflow is an OAuth 2.1 protected resource: besides the static bearer
// tokens of its configuration it accepts access tokens issued by the
// configured OpenID providers, checked by a TokenVerifier. The token itself
// never leaves the request: it is not logged, stored or put in a Temporal
// history, and never forwarded to an MCP server (token passthrough is
// forbidden by the MCP spec); an MCP server that needs the caller's identity
// gets a token exchanged for its own audience (RFC 8693).

// TokenIdentity is what a TokenVerifier learned from a valid access token.
type TokenIdentity struct {
	// UserID is the caller's user id, mapped from the provider's user claim;
	// it passes ValidateID.
	UserID string
	// Admin is set when the token carries the provider's admin scope or one
	// of its admin claim values.
	Admin bool
	// Provider is the configured name of the provider that issued the token.
	Provider string
	// Scopes are the token's scopes ("scope" or "scp").
	Scopes []string
	// MissingScopes are the provider's required scopes the token lacks; a
	// request with any is refused with 403 insufficient_scope.
	MissingScopes []string
	// AdminScope is the scope that makes a caller an admin ("" when admins
	// come from a claim), named in a 403 insufficient_scope challenge.
	AdminScope string
	// Expiry is the token's "exp".
	Expiry time.Time
	// Claims are the token's claims as it carried them (an introspected
	// token's: the introspection answer's), for the tool policies; never
	// logged, stored or forwarded.
	Claims map[string]json.RawMessage
}

// Caller is who a request is made by, as the API authenticated it: what
// the tool policies decide with (package policy).
type Caller struct {
	UserID   string // "" for an admin token
	Admin    bool
	Provider string   // the identity provider's name; "" for a static token
	Scopes   []string // an identity provider's token's scopes
	// Claims are an identity provider's token's claims (nil for a static
	// token); never logged, stored or forwarded.
	Claims map[string]json.RawMessage
}

type callerKey struct{}

// WithCaller marks ctx as a request of c.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller WithCaller put in ctx, nil for none (a
// durable task's poll, a test without the API).
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// TokenVerifier checks bearer access tokens issued by identity providers.
type TokenVerifier interface {
	// VerifyAccessToken checks token's signature, algorithm, issuer,
	// expiry and audience: one of its audiences must be one of resources
	// (the resource URIs the request is for) or one configured for its
	// provider. A token that fails any check is ErrInvalidToken (wrapped
	// with a reason safe to log); a provider whose keys cannot be fetched
	// is ErrTokenProviderUnavailable. No error carries the token or its
	// claims.
	VerifyAccessToken(ctx context.Context, token string, resources []string) (TokenIdentity, error)
}

// TokenAlgorithms are the signature algorithms an identity provider's
// access tokens may use, and the default set (asymmetric only: with a
// shared-secret HS* or "none", anyone holding the published key could sign
// tokens).
var TokenAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Token verification failures.
var (
	ErrInvalidToken             = errors.New("invalid access token")
	ErrTokenProviderUnavailable = errors.New("identity provider unavailable")
)

type callerTokenKey struct{}

// WithCallerToken marks ctx as a call made for a caller who signed in with
// an identity provider, carrying its access token for token exchange
// (RFC 8693). Only the credential layer of upstream calls reads it.
func WithCallerToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, callerTokenKey{}, token)
}

// CallerToken returns the access token WithCallerToken put in ctx, "" when
// the caller used a static token or the call is not on a caller's behalf
// (a durable task's poll).
func CallerToken(ctx context.Context) string {
	s, _ := ctx.Value(callerTokenKey{}).(string)
	return s
}

// SecureURL reports whether raw is an https URL, or an http one to a
// loopback host: where access tokens and signing keys may travel.
func SecureURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		if strings.EqualFold(h, "localhost") {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
	return false
}
