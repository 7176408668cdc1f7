// Package testidp is a real OpenID provider on loopback for tests of
// mcpflow's MCP authorization (mcpflow as an OAuth 2.1 protected resource,
// and token exchange towards upstream MCP servers).
//
// It is the OP core of github.com/zitadel/oidc/v3/pkg/op (discovery,
// /authorize, /oauth/token with PKCE, JWKS, userinfo, introspection,
// revocation, RFC 8693 token exchange) over an in-memory storage of this
// package, with what tests need around it:
//
//   - Start listens on 127.0.0.1 (issuer "http://127.0.0.1:PORT") and stops
//     with t.Cleanup; every IdP has its own users, clients, keys and
//     requests, so several can run in one test process.
//   - Access tokens are JWTs signed RS256 (RFC 9068 style): iss, sub (the
//     user's name), aud (the client id and every RFC 8707 resource the
//     client asked for), exp, iat, nbf, jti, client_id, scope (space
//     delimited) and, for users that have groups, "groups".
//   - The login needs no browser: the OP's login page signs in the user of
//     SetLoginUser (or a known user named by login_hint) and redirects back
//     at once, so any HTTP client that follows redirects ends at the
//     client's redirect_uri?code=...&state=... . Login runs that whole
//     authorization-code + PKCE flow and returns the access token.
//   - Rotate, Retire (withdraw a key), SigningKey, SetKeysCacheControl and
//     JWKSHits control and observe the keys;
//     Forge makes bad tokens (alg none, HS256 key confusion, unknown kid,
//     tampered payload or signature, or any claims signed with the real
//     key).
//   - The discovery document is also served at RFC 8414's
//     /.well-known/oauth-authorization-server.
//
// What zitadel's op does not do itself is added around it: RFC 8707
// resource indicators (at /authorize and /oauth/token; a resource must be an
// absolute URI without fragment, and one at /oauth/token must be among
// those of /authorize when /authorize named any, else invalid_target), a
// resource of a token exchange counts as an audience, and a token exchange
// client may authenticate with client_id/client_secret in the form
// (client_secret_post) as well as with HTTP Basic. An authorization request
// without scope gets the scope "openid". Refresh tokens are not issued.
//
// Default users: "alice" and "bob" (no groups) and "carol" (groups
// ["mcpflow-admins"]). Tests only: nothing here is meant for production.
package testidp
