package testenv

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// oidcProviderScript runs oidc-provider (panva/node-oidc-provider 9.13.3,
// a certified OpenID provider) on loopback; see its comment.
const oidcProviderScript = "oidc_provider.mjs"

// OIDCProviderOptions configures StartOIDCProvider; zero fields take the
// script's defaults.
type OIDCProviderOptions struct {
	// PublicClient is the pre-registered public client (default
	// "mcp-host") and RedirectURI its redirect URI (default
	// "http://127.0.0.1:9/callback").
	PublicClient, RedirectURI string
	// IntrospectionClient and IntrospectionSecret are the confidential
	// client allowed to introspect tokens (default "mcpflow-rs",
	// "introspection-secret").
	IntrospectionClient, IntrospectionSecret string
	// OpaqueMarker: a resource containing it gets opaque access tokens
	// (default "/opaque-"); others get JWTs.
	OpaqueMarker string
	// JWKSCacheControl is the key set's Cache-Control (default none).
	JWKSCacheControl string
}

// OIDCProvider is a running oidc_provider.mjs.
type OIDCProvider struct {
	// Issuer is http://127.0.0.1:PORT.
	Issuer string
}

// StartOIDCProvider runs oidc_provider.mjs on a free 127.0.0.1 port and
// stops it at cleanup. It ends t through MissingDependency when node or
// the npm package oidc-provider is missing (`make testdeps`).
func StartOIDCProvider(t testing.TB, o OIDCProviderOptions) *OIDCProvider {
	t.Helper()
	requireNPMPackage(t, "oidc-provider")
	var args []string
	add := func(name, v string) {
		if v != "" {
			args = append(args, "--"+name, v)
		}
	}
	add("public-client", o.PublicClient)
	add("redirect-uri", o.RedirectURI)
	if o.IntrospectionClient != "" {
		args = append(args, "--introspection-client", o.IntrospectionClient+":"+o.IntrospectionSecret)
	}
	add("opaque-marker", o.OpaqueMarker)
	add("jwks-cache-control", o.JWKSCacheControl)
	return &OIDCProvider{Issuer: startNodeServer(t, oidcProviderScript, args...)}
}

// OIDCProviderKeys are the provider's signing key and published key ids.
type OIDCProviderKeys struct {
	Signing   string   `json:"signing"`
	Published []string `json:"published"`
}

// Keys returns the signing key's id and the ids of the key set.
func (p *OIDCProvider) Keys(t testing.TB) OIDCProviderKeys {
	t.Helper()
	var k OIDCProviderKeys
	p.control(t, http.MethodGet, "/control/keys", &k)
	return k
}

// Rotate makes a new key the signing key; the old ones stay published.
func (p *OIDCProvider) Rotate(t testing.TB) (newKID string) {
	t.Helper()
	var r struct {
		KID string `json:"kid"`
	}
	p.control(t, http.MethodPost, "/control/rotate", &r)
	return r.KID
}

// Withdraw removes the key kid from the key set (GET /jwks).
func (p *OIDCProvider) Withdraw(t testing.TB, kid string) {
	t.Helper()
	p.control(t, http.MethodPost, "/control/withdraw?kid="+url.QueryEscape(kid), nil)
}

func (p *OIDCProvider) control(t testing.TB, method, path string, out any) {
	t.Helper()
	req, err := http.NewRequest(method, p.Issuer+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("oidc provider %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("oidc provider %s %s: %s", method, path, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("oidc provider %s %s: %v", method, path, err)
		}
	}
}
