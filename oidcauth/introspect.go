package oidcauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Token introspection (RFC 7662): for a provider whose access tokens are
// opaque (Ory Hydra's default, Okta's org authorization server) or carry
// their claims only through introspection (Keycloak's lightweight access
// tokens), mcpflow asks the provider's introspection endpoint, as a client
// of its own, what a token is.

// DefaultIntrospectionCacheTTL is the longest an introspection answer is
// remembered when Provider.IntrospectionCacheTTL is zero.
const DefaultIntrospectionCacheTTL = time.Minute

// introspector asks one provider's introspection endpoint about tokens.
type introspector struct {
	p        *provider
	client   *http.Client
	clientID string
	secret   string

	mu  sync.Mutex
	url string // configured, or found by discovery
}

// errIntrospection is a provider's introspection endpoint that did not
// answer as RFC 7662 says: the token is unchecked, not invalid.
var errIntrospection = errors.New("introspection failed")

// introspect asks whether token is active and checks the answer as the
// claims of a JWT are checked: issuer (when named), exp, nbf and iat with
// the clock skew, the user claim, the audience (later, per request) and
// the scopes. It refuses answers about another kind of token (a refresh
// token: "token_type", Hydra's "token_use", Keycloak's "typ"). The token goes to no one but the provider's endpoint.
func (in *introspector) introspect(ctx context.Context, token string, now time.Time) (verifiedToken, error) {
	name := in.p.cfg.Name
	endpoint, err := in.endpoint(ctx)
	if err != nil {
		return verifiedToken{}, unavailable(name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return verifiedToken{}, unavailable(name, fmt.Errorf("%w: %v", errIntrospection, err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: the client id and secret are form-encoded first.
	req.SetBasicAuth(url.QueryEscape(in.clientID), url.QueryEscape(in.secret))
	resp, err := in.client.Do(req)
	if err != nil {
		// A *url.Error names the URL and the cause, not the body.
		return verifiedToken{}, unavailable(name, fmt.Errorf("%w: %v", errIntrospection, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil || len(body) > maxDocumentBytes {
		return verifiedToken{}, unavailable(name, fmt.Errorf("%w: POST %s: unreadable answer", errIntrospection, endpoint))
	}
	if resp.StatusCode != http.StatusOK {
		return verifiedToken{}, unavailable(name, fmt.Errorf("%w: POST %s: %s", errIntrospection, endpoint, resp.Status))
	}
	c, err := parseClaims(body)
	if err != nil {
		return verifiedToken{}, unavailable(name, fmt.Errorf("%w: POST %s: the answer is not a JSON object", errIntrospection, endpoint))
	}
	var active bool
	if raw, ok := c["active"]; !ok || json.Unmarshal(raw, &active) != nil {
		return verifiedToken{}, unavailable(name, fmt.Errorf("%w: POST %s: the answer has no boolean \"active\"", errIntrospection, endpoint))
	}
	if !active {
		return verifiedToken{}, invalid(name, ReasonInactive)
	}
	if iss, ok := c.str("iss"); c.has("iss") && (!ok || iss != in.p.cfg.Issuer) {
		e := invalid(name, ReasonIssuer)
		e.Detail = "the introspection answer names another issuer than the provider's"
		return verifiedToken{}, e
	}
	// An active refresh token (or ID token) is no access token.
	if typ, ok := c.str("token_type"); ok && strings.Contains(strings.ToLower(typ), "refresh") {
		return verifiedToken{}, invalid(name, ReasonTokenType)
	}
	if use, ok := c.str("token_use"); ok && use != "access_token" {
		return verifiedToken{}, invalid(name, ReasonTokenType)
	}
	// Keycloak names the kind in "typ": Bearer, Refresh, ID, Offline.
	if typ, ok := c.str("typ"); ok && !strings.EqualFold(typ, "Bearer") {
		return verifiedToken{}, invalid(name, ReasonTokenType)
	}
	tok, err := in.p.checkClaims(c, now, false)
	if err != nil {
		return verifiedToken{}, err
	}
	tok.introspected = true
	return tok, nil
}

// endpoint is the configured introspection URL, or the discovery
// document's introspection_endpoint (read once).
func (in *introspector) endpoint(ctx context.Context) (string, error) {
	in.mu.Lock()
	u := in.url
	in.mu.Unlock()
	if u != "" {
		return u, nil
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	doc, err := discover(ctx, in.client, in.p.cfg.Issuer)
	if err != nil {
		return "", err
	}
	if doc.IntrospectionEndpoint == "" {
		return "", errors.New("discovery: the document names no introspection_endpoint: set introspection_url")
	}
	if err := checkURL(doc.IntrospectionEndpoint); err != nil {
		return "", fmt.Errorf("discovery: introspection_endpoint: %w", err)
	}
	in.mu.Lock()
	in.url = doc.IntrospectionEndpoint
	in.mu.Unlock()
	return doc.IntrospectionEndpoint, nil
}

// isOpaqueToken reports whether token is an RFC 6750 b64token that is not
// shaped as a JWS or JWE (two dots or more; Hydra's "ory_at_….…" has one),
// i.e. one to introspect.
func isOpaqueToken(token string) bool {
	if token == "" || len(token) > maxTokenBytes || strings.Count(token, ".") >= 2 {
		return false
	}
	body := strings.TrimRight(token, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return false
		}
	}
	return true
}
