// Package credential computes the credentials of upstream calls (spec
// §1.3–1.5, §3.4–3.7). Headers are layered static < OAuth < user_auth <
// headers_from_context: each layer replaces a header of the same name
// whatever its case, keeping the spelling in use, so one header of a name
// reaches the wire. SSE/HTTP servers get them per request; stdio servers
// get the OAuth header as the call's _meta {"headers": {...}} only.
//
// It holds the process's OAuth token cache (Cache: one token source per
// server, so a rotating refresh token is never used twice), RFC 8693 token
// exchange (token_exchange.go), the request-scoped secrets of a call
// (WithSecrets) and the refusal of a call inside the tool layer
// (CredentialError).
//
// It imports the root domain package and config/ only; it must not import
// mcpclient or its other packages (sessions take its header functions).
package credential
