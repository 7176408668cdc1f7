package main

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/oidcauth"
)

// oidcRequestTimeout bounds one discovery or key-set request to an
// identity provider.
const oidcRequestTimeout = 10 * time.Second

// oauthResource builds what makes the API an OAuth 2.1 protected resource
// from server.public_url and auth.oidc; nil without identity providers.
// It does not wait for the providers: each is logged and its discovery
// document and keys read in the background, so mcpflow starts while one
// is down (its tokens answer 503 until it is back).
func oauthResource(ctx context.Context, cfg *config.Service, log *slog.Logger) (*api.OAuthResource, error) {
	if len(cfg.Auth.OIDC) == 0 {
		return nil, nil
	}
	var providers []oidcauth.Provider
	var issuers, scopes []string
	for _, p := range cfg.Auth.OIDC {
		providers = append(providers, oidcauth.Provider{
			Name: p.Name, Issuer: p.Issuer, JWKSURL: p.JWKSURL, Audiences: p.Audiences, Algorithms: p.Algorithms,
			ClockSkew: config.Seconds(p.ClockSkewSeconds), UserClaim: p.UserClaim, UserPrefix: p.UserPrefix, ShareUserIDs: p.ShareUserIDs,
			RequiredScopes: p.RequiredScopes, AdminScope: p.AdminScope, AdminClaim: p.AdminClaim, AdminValues: p.AdminValues,
			JWKSMinRefresh: config.Seconds(p.JWKSMinRefreshSeconds), JWKSMaxAge: config.Seconds(p.JWKSMaxAgeSeconds),
			IntrospectionClientID: p.IntrospectionClientID, IntrospectionClientSecret: p.IntrospectionClientSecret,
			IntrospectionURL: p.IntrospectionURL, IntrospectJWTs: p.IntrospectJWTs,
			IntrospectionCacheTTL: config.Seconds(p.IntrospectionCacheSeconds),
		})
		issuers = append(issuers, p.Issuer)
		for _, sc := range append(slices.Clone(p.RequiredScopes), p.AdvertisedScopes...) {
			if !slices.Contains(scopes, sc) {
				scopes = append(scopes, sc)
			}
		}
	}
	v, err := oidcauth.NewVerifier(ctx, providers, oidcauth.Options{
		HTTPClient: &http.Client{Timeout: oidcRequestTimeout}, // oidcauth refuses redirects off https
		Logger:     log,
	})
	if err != nil {
		return nil, err
	}
	// The providers are logged, and checked in the background: a
	// misconfigured issuer shows at start, not at the first sign-in.
	v.Start(ctx)
	return &api.OAuthResource{Verifier: v, PublicURL: cfg.Server.PublicURL, AuthorizationServers: issuers, Scopes: scopes}, nil
}
