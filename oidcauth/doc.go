// Package oidcauth checks access tokens issued by OpenID Connect identity
// providers: it is the mcpflow.TokenVerifier that makes mcpflow an OAuth 2.1
// protected resource (MCP authorization).
//
// # What is verified
//
// A token must be a compact JWS (a JWT) of at most 16 KiB, or an opaque
// token of a provider with introspection (below). Its unverified "iss" only picks the
// configured Provider; a token naming no provider is refused. Then:
//
//   - header "typ" is absent, "JWT", "at+jwt" or "application/at+jwt";
//   - header "alg" is one of the provider's Algorithms (asymmetric only:
//     HS* and "none" cannot be configured);
//   - the signature verifies with a key of the provider's JSON Web Key Set
//     (go-oidc's IDTokenVerifier over this package's key set), and "iss" is
//     exactly the provider's Issuer;
//   - "exp" is present and not past, "nbf" and "iat" are not ahead, each
//     with the provider's ClockSkew (default 60s) of tolerance;
//   - it is not an ID token ("at_hash", "c_hash" or Keycloak's claim
//     "typ": "ID" are refused as the wrong token type);
//   - the user claim (UserClaim, default "sub") is a non-empty string;
//   - "aud" (a string or an array) holds one of the request's resource URIs
//     or one of the provider's Audiences, compared exactly; a token accepted
//     through Audiences only must have a "scope" or "scp" claim, else it is
//     taken for an ID token (whose audience is a client id) and refused as
//     the wrong token type. Audiences need RequiredScopes.
//
// A refused token is an *Error wrapping mcpflow.ErrInvalidToken with a
// Reason naming the failed check; a provider whose keys cannot be fetched
// (while the token's key is not held) is an *Error wrapping
// mcpflow.ErrTokenProviderUnavailable. No error and no log line carries the
// token, a claim value or key material; refusals are logged at debug level
// only (provider and reason), the caller logs them.
//
// # Introspection
//
// A token that is not shaped as a JWT (no two dots) but is an RFC 6750
// b64token goes, when one provider has IntrospectionClientID, to that
// provider's introspection endpoint (RFC 7662: IntrospectionURL or the
// discovery document's introspection_endpoint), with the client's id and
// secret in HTTP Basic; a JWT of a provider with IntrospectJWTs goes there
// too instead of being checked with keys. The answer must be active; its
// "iss" (when present) is the issuer; an answer about a refresh token
// ("token_type", or "token_use" other than access_token) is the wrong token
// type (so is Keycloak's "typ" other than Bearer); then its claims pass
// the checks above ("exp" optional). It is
// cached until "exp" and at most IntrospectionCacheTTL (default 1 minute).
// An endpoint that fails or answers other than 200 with a JSON object
// makes the token unavailable (503). Without introspection, an opaque
// token is refused with ReasonNotJWT. At most one provider introspects: an
// opaque token does not say whose it is.
//
// # Identity
//
// The user id is UserPrefix + the user claim's value when that passes
// mcpflow.ValidateID and the value does not start with "h-". Otherwise
// (Auth0's "auth0|abc", values with spaces or longer than the 64 characters
// of an id) it is UserPrefix + "h-" + the first 32 hex digits of the
// SHA-256 of the value: stable for a user and always a valid id. NewVerifier
// refuses two providers one of whose UserPrefix starts the other's ("" starts
// every prefix: their users could get one id) unless both set ShareUserIDs;
// the static users' ids are checked by package config. Values
// starting with "h-" are hashed too, so a user cannot pick a value that
// reads as another user's hashed id. Scopes come from "scope" (space
// delimited) and "scp" (a string or an array); required scopes the token
// lacks are listed in TokenIdentity.MissingScopes for the caller to answer
// 403. A required (or admin) scope written as a URI with a path
// ("api://mcpflow/MCP.Use", as Microsoft Entra ID has clients ask for it)
// is also held as its last segment ("MCP.Use", as Entra writes "scp"). A token is an admin when it carries the AdminScope, or when its
// AdminClaim (a string or an array of strings; a dotted name reaches into
// nested objects when no claim has that name) holds one of AdminValues.
//
// # Fetching keys
//
// Verifier.Start logs each provider and reads its discovery document and
// keys in the background; a discovery document naming another issuer is
// logged as an error naming both (and a token naming an issuer no provider
// has is refused with a Detail naming it and the configured ones, with a
// hint when only a trailing slash or case differs).
//
// NewVerifier does no I/O: discovery (Issuer +
// "/.well-known/openid-configuration", unless JWKSURL is set; the document
// must name exactly Issuer) and the key set are read on first use, so
// mcpflow starts while a provider is down. Every URL (Issuer, JWKSURL, the
// discovered jwks_uri, a redirect) must be https, or http to a loopback
// host (mcpflow.SecureURL): keys fetched in the clear could be swapped. The key
// set is refetched when a token names a key id it does not hold (a key
// rotation), by one request shared by every waiting verification and at most
// once per JWKSMinRefresh (default 10s), so tokens with made-up key ids
// cannot make mcpflow hammer the provider (a key published within
// JWKSMinRefresh of the last fetch is thus refused until that time has
// passed); while the provider fails, a fetch is retried at most once per
// min(JWKSMinRefresh, 5s). The key set is also refetched once stale: after
// JWKSMaxAge (default 5 minutes), or its Cache-Control max-age (less Age)
// when that is shorter, but not under JWKSMinRefresh. A verification that
// finds the set stale waits for that fetch (while the provider answered
// the last one; while it fails, the held keys are used and the fetch is
// retried in the background). So a key the provider withdrew stops
// verifying within JWKSMaxAge of its withdrawal, plus one fetch, once the
// provider answers. A token whose key is not held while the provider
// cannot be fetched is unavailable, not invalid; tokens signed with held
// keys keep verifying while the provider is down. Failures and recoveries
// of a fetch are logged (warn, info) once per change, not per token. A
// provider that is down is no reason for mcpflow to be unready (static
// tokens and held keys keep working), so there is no readiness check.
//
// # Cache
//
// A verified token is remembered by the SHA-256 of its text until its "exp"
// and at most one minute (10,000 tokens, least recently used evicted), so an
// agent calling often pays one signature check per minute. Only a token that
// passed every check but the audience gets in, only the identical text finds
// it, and the audience is checked on every request against the request's
// resources. Each entry remembers the key (its RFC 7638 thumbprint) that
// verified it and holds only while that key is in the key set, which is
// refetched first when stale: a key removed from the provider's key set is
// thus honoured no longer by tokens already seen than by new ones.
//
// This package imports the mcpflow domain, go-oidc and go-jose only; it
// must not import the API, the store or any other adapter.
package oidcauth
