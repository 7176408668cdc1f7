// Package credential computes the credentials of upstream calls (spec
// §1.3–1.5, §3.4–3.7). Headers are layered static < OAuth < user_auth < headers_from_context: every layer
// replaces a header of the same name whatever its case, keeping the
// spelling already in use, so exactly one header of a name reaches the
// wire. SSE/HTTP servers get them as HTTP headers of each request; stdio
// servers get the OAuth header as the call's _meta {"headers": {...}}
// (user_auth and headers_from_context do not apply to stdio servers).
//
// An oauth block with the token-exchange grant (RFC 8693, sse/http only)
// puts in the OAuth layer a token exchanged per call from the access token
// of the caller signed in with an identity provider (mcpflow.CallerToken),
// never that token itself (token_exchange.go). Such a server has one
// session per user, whose own requests (initialize, discovery's
// tools/list, notifications) carry that user's exchanged token, and its
// tools are listed per user (by mcpclient). A request-scoped call
// without a caller token (a caller with a static mcpflow token, a durable
// submit in a task activity) is refused with a *CredentialError; a durable
// poll carries no OAuth header. Durable tasks cannot use such a server:
// task_toolsets and native_tasks on it are configuration errors, and a
// tool whose taskSupport is "required" is refused at submit.
//
// It holds the process's OAuth token cache (Cache: one token source per
// server, so a rotating refresh token is never used twice), RFC 8693
// token exchange, the request-scoped secrets of a call (WithSecrets) and
// the refusal of a call inside the tool layer (CredentialError).
//
// It imports the root domain package and config/ only; it must not import
// mcpclient or its other packages (sessions take its header functions).
package credential
