// Package streamhttp is mcpflow's client transport for MCP's streamable
// HTTP (2025-03-26 to 2026-07-28): an mcp-go transport.Interface and
// BidirectionalInterface, so mcp-go's client and types keep working above
// it, plus Transport.SendRaw, which posts an already encoded request and
// returns the answer's result as the raw bytes the server sent.
//
// Why not mcp-go's transport.StreamableHTTP: per request it starts
// goroutines, parses the Content-Type, decodes answers (an SSE message up
// to three times) and encodes again what was already encoded. Here the
// answer is read on the caller's goroutine into a pooled buffer and decoded
// once, with the result kept raw; Close cancels requests in flight with
// context.AfterFunc.
//
// It keeps what mcpflow's sessions used of mcp-go's transport: Accept,
// Mcp-Session-Id (not in 2026-07-28), Mcp-Protocol-Version, the per-request
// header function (whose headers win), JSON and SSE answers, server
// notifications and requests on an answer's stream, resuming a stream with
// Last-Event-ID (before 2026-07-28), 404 ending the session
// (transport.ErrSessionTerminated), transport.ErrLegacySSEServer for a 4xx
// to initialize, *transport.AuthorizationRequiredError for 401, and DELETE
// on Close. It opens the standalone GET stream only when asked (Listen: a
// subscription's updates come on it) and has no OAuth handler. One message
// larger than Options.MaxMessageBytes (128 MiB by default) is not read: the
// request fails, so an answer's memory is bounded.
//
// An answer outside 2xx that is not a JSON-RPC message (a gateway's page)
// is shown in its error cut to 300 bytes, without any credential the
// request carried (redact.go: its header values, its URL's query and user
// information, in the spellings a page may quote them); a request that
// did not reach the server shows its URL without query or user
// information. RedactErrorBodies gives mcp-go's legacy SSE transport,
// which shows such pages whole, the same reading.
//
// Direct is the http.RoundTripper under it (and under every HTTP session's
// client): plain-HTTP requests are written and answered on the caller's
// goroutine over pooled keep-alive connections, with net/http's encoder and
// parser; https and proxied requests go to net/http's Transport.
//
// It imports mcp-go, golang.org/x/net's httpguts, internal/jsonscan (the
// walk over a message's members) and the standard library only; it must
// not import any other mcpflow package.
package streamhttp
