package oidcauth

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow"
)

// Defaults of a Provider.
const (
	DefaultClockSkew      = 60 * time.Second
	DefaultUserClaim      = "sub"
	DefaultJWKSMinRefresh = 10 * time.Second
	DefaultJWKSMaxAge     = 5 * time.Minute
	// MaxClockSkew is the largest ClockSkew accepted.
	MaxClockSkew = 5 * time.Minute
)

// DefaultAlgorithms are the JWS algorithms a Provider accepts when it
// names none: every asymmetric algorithm go-oidc supports.
var DefaultAlgorithms = mcpflow.TokenAlgorithms

// Provider is an identity provider (an OpenID Connect issuer) whose access
// tokens are accepted. Zero fields take the documented defaults.
type Provider struct {
	// Name is the configured name, used in logs and as
	// TokenIdentity.Provider. Required, unique.
	Name string
	// Issuer is the exact issuer URL: tokens must carry it as "iss", and
	// its OpenID discovery document is read at
	// Issuer+"/.well-known/openid-configuration". Required, unique.
	Issuer string
	// JWKSURL, when set, is the provider's JSON Web Key Set, read instead
	// of running discovery (the issuer is still checked).
	JWKSURL string
	// Audiences are accepted in "aud" besides the request's resource URIs
	// (e.g. "api://mcpflow" for providers that cannot put a URL in "aud").
	// They need RequiredScopes, and a token accepted through one of them
	// (not through a resource URI) must have a "scope" or "scp" claim:
	// an ID token, whose audience is a client id, has neither.
	Audiences []string
	// Algorithms are the JWS algorithms accepted (default
	// DefaultAlgorithms). HS* and "none" are refused.
	Algorithms []string
	// ClockSkew is tolerated on "exp", "nbf" and "iat" (default 60s, at
	// most MaxClockSkew).
	ClockSkew time.Duration
	// UserClaim names the string claim holding the user (default "sub").
	UserClaim string
	// UserPrefix is prepended to the user claim's value to form the user
	// id (a namespace per issuer, e.g. "kc.").
	UserPrefix string
	// ShareUserIDs lets this provider's user ids be another's: NewVerifier
	// refuses two providers one of whose UserPrefix starts the other's
	// ("" starts every prefix) unless both set it.
	ShareUserIDs bool
	// RequiredScopes are scopes every token needs; a valid token lacking
	// any lists them in TokenIdentity.MissingScopes.
	RequiredScopes []string
	// AdminScope makes a token carrying it an admin.
	AdminScope string
	// AdminClaim and AdminValues, instead of AdminScope, make a token an
	// admin when its claim AdminClaim (a string or an array of strings,
	// e.g. "groups" or "roles") holds one of AdminValues. A name absent
	// from the claims but holding dots is read as a path into nested
	// objects ("realm_access.roles" for Keycloak).
	AdminClaim  string
	AdminValues []string
	// JWKSMinRefresh is the least time between two fetches of the key set
	// (default 10s): a token signed with an unknown key id refetches it at
	// most this often, so tokens with made-up key ids cannot make mcpflow
	// hammer the identity provider.
	JWKSMinRefresh time.Duration
	// JWKSMaxAge is the longest the key set is used before it is fetched
	// again (default 5 minutes): the key set's Cache-Control max-age,
	// bounded by JWKSMinRefresh and JWKSMaxAge, or JWKSMaxAge when it
	// names none. It bounds how long a key the provider withdrew (a
	// compromised key) still verifies tokens, cached ones included.
	JWKSMaxAge time.Duration
	// IntrospectionClientID and IntrospectionClientSecret, when set, are
	// the credentials mcpflow presents (HTTP Basic) at the provider's
	// token introspection endpoint (RFC 7662): tokens that are not JWTs
	// are then checked there (at most one provider may introspect: an
	// opaque token does not say whose it is). The secret is never logged.
	IntrospectionClientID     string
	IntrospectionClientSecret string
	// IntrospectionURL is the introspection endpoint (default: the
	// discovery document's introspection_endpoint).
	IntrospectionURL string
	// IntrospectJWTs checks this provider's JWTs by introspection too,
	// not with its keys (Keycloak's lightweight access tokens, Okta's org
	// authorization server). Needs IntrospectionClientID.
	IntrospectJWTs bool
	// IntrospectionCacheTTL is the longest an active answer is remembered
	// (default DefaultIntrospectionCacheTTL, never past the token's exp):
	// a token revoked at the provider is still accepted that long.
	IntrospectionCacheTTL time.Duration
}

// errAudiencesNeedScopes refuses Audiences without RequiredScopes: an
// audience that is a client id is the audience of that client's ID tokens
// too, and only a scope tells an access token from one.
const errAudiencesNeedScopes = "audiences need required_scopes: an audience that is a client id is also the audience of its ID tokens, and only a required scope tells an access token from one"

// withDefaults returns p with its zero fields set to their defaults.
func (p Provider) withDefaults() Provider {
	if len(p.Algorithms) == 0 {
		p.Algorithms = slices.Clone(DefaultAlgorithms)
	}
	if p.ClockSkew == 0 {
		p.ClockSkew = DefaultClockSkew
	}
	if p.UserClaim == "" {
		p.UserClaim = DefaultUserClaim
	}
	if p.JWKSMinRefresh == 0 {
		p.JWKSMinRefresh = DefaultJWKSMinRefresh
	}
	if p.JWKSMaxAge == 0 {
		p.JWKSMaxAge = DefaultJWKSMaxAge
	}
	if p.IntrospectionCacheTTL == 0 {
		p.IntrospectionCacheTTL = DefaultIntrospectionCacheTTL
	}
	return p
}

// validate checks p after withDefaults.
func (p Provider) validate() error {
	if strings.TrimSpace(p.Name) == "" {
		return errors.New("name must not be empty")
	}
	if err := checkURL(p.Issuer); err != nil {
		return fmt.Errorf("issuer: %w", err)
	}
	if p.JWKSURL != "" {
		if err := checkURL(p.JWKSURL); err != nil {
			return fmt.Errorf("jwks_url: %w", err)
		}
	}
	for _, a := range p.Algorithms {
		if !slices.Contains(DefaultAlgorithms, a) {
			if a == "none" || strings.HasPrefix(a, "HS") {
				return fmt.Errorf("algorithms: %q is refused: only asymmetric signatures are accepted", a)
			}
			return fmt.Errorf("algorithms: unknown algorithm %q (want one of %s)", a, strings.Join(DefaultAlgorithms, ", "))
		}
	}
	if p.ClockSkew < 0 || p.ClockSkew > MaxClockSkew {
		return fmt.Errorf("clock_skew must be between 0 and %s", MaxClockSkew)
	}
	if p.JWKSMinRefresh < 0 {
		return errors.New("jwks_min_refresh must not be negative")
	}
	if p.JWKSMaxAge < p.JWKSMinRefresh {
		return fmt.Errorf("jwks_max_age (%s) must be at least jwks_min_refresh (%s)", p.JWKSMaxAge, p.JWKSMinRefresh)
	}
	// The longest id the prefix can yield is the hashed fallback.
	if err := mcpflow.ValidateID("user id", p.UserPrefix+hashedIDPrefix+strings.Repeat("0", hashedIDHexDigits)); err != nil {
		return fmt.Errorf("user_prefix %q cannot form user ids: at most %d characters of letters, digits and '._@-', not starting with '.'",
			p.UserPrefix, 64-len(hashedIDPrefix)-hashedIDHexDigits)
	}
	for _, a := range p.Audiences {
		if a == "" {
			return errors.New("audiences must not hold an empty audience")
		}
	}
	for _, s := range append(slices.Clone(p.RequiredScopes), p.AdminScope) {
		if strings.ContainsAny(s, " \t\r\n\"\\") {
			return fmt.Errorf("scope %q must not hold spaces, quotes or backslashes", s)
		}
	}
	switch {
	case (p.IntrospectionClientID == "") != (p.IntrospectionClientSecret == ""):
		return errors.New("introspection needs both introspection_client_id and introspection_client_secret")
	case p.IntrospectionClientID == "" && (p.IntrospectionURL != "" || p.IntrospectJWTs):
		return errors.New("introspection_url and introspect_jwts need introspection_client_id and introspection_client_secret")
	case p.IntrospectionCacheTTL < 0:
		return errors.New("introspection_cache must not be negative")
	}
	if p.IntrospectionURL != "" {
		if err := checkURL(p.IntrospectionURL); err != nil {
			return fmt.Errorf("introspection_url: %w", err)
		}
	}
	if len(p.Audiences) > 0 && len(p.RequiredScopes) == 0 {
		return errors.New(errAudiencesNeedScopes)
	}
	if slices.Contains(p.RequiredScopes, "") {
		return errors.New("required_scopes must not hold an empty scope")
	}
	switch {
	case p.AdminScope != "" && (p.AdminClaim != "" || len(p.AdminValues) > 0):
		return errors.New("admin_scope and admin_claim are exclusive: admins come from a scope or from a claim")
	case p.AdminClaim != "" && len(p.AdminValues) == 0:
		return errors.New("admin_claim needs admin_values")
	case p.AdminClaim == "" && len(p.AdminValues) > 0:
		return errors.New("admin_values needs admin_claim")
	case slices.Contains(p.AdminValues, ""):
		return errors.New("admin_values must not hold an empty value")
	}
	return nil
}

// checkURL accepts an absolute http or https URL with a host and no
// fragment.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	if !mcpflow.SecureURL(s) {
		// Discovery or keys over plain http could be swapped on the way.
		return fmt.Errorf("%q is not https (http only for a loopback host)", s)
	}
	return nil
}
