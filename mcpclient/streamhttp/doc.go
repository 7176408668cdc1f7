// Package streamhttp is mcpflow's client transport for MCP's streamable
// HTTP (protocol revisions 2025-03-26 to 2026-07-28): a
// transport.Interface and transport.BidirectionalInterface of mcp-go, so
// that mcp-go's client and types keep working above it, plus a fast path,
// Transport.SendRaw, that posts a JSON-RPC request the caller has already
// encoded and returns the answer's result as the raw bytes the server sent.
//
// Why not mcp-go's transport.StreamableHTTP: per request it starts a
// goroutine that watches for Close, parses the Content-Type with
// mime.ParseMediaType, decodes a JSON answer into a response struct that
// the client then hands on as bytes again, reads an SSE answer in a second
// goroutine (and a third that closes the body on cancellation) and decodes
// each SSE message up to three times; and it has no way to send bytes that
// are already encoded, so every request is encoded once more (a
// json.RawMessage of params is compacted again). Here the answer is read
// on the caller's goroutine into a pooled buffer and decoded once into an
// envelope whose result stays raw; Close cancels requests in flight with
// context.AfterFunc (no goroutine per request); the common Content-Type
// values are compared, not parsed.
//
// What it keeps of mcp-go's transport, as mcpflow's sessions use it:
// Accept "application/json, text/event-stream" on every POST; the
// Mcp-Session-Id the initialize answer sets, sent on every later request
// (never in 2026-07-28, which has no sessions); the Mcp-Protocol-Version
// header once negotiated (SetProtocolVersion); the header function called
// per request, whose headers win; request headers (Mcp-Method, Mcp-Name,
// Mcp-Param-*) passed through; JSON and SSE answers; notifications on an
// answer's stream go to the notification handler and requests on it
// (elicitation, ping) to the request handler, whose answer is posted back;
// a stream the server ends before the answer after it sent an event id is
// resumed with a GET carrying Last-Event-ID (before 2026-07-28); a 404 on a
// request with a session ends the session (transport.ErrSessionTerminated,
// and later requests fail the same way until an initialize succeeds); a
// 4xx to initialize is transport.ErrLegacySSEServer; 401 is a
// *transport.AuthorizationRequiredError (transport.ErrAuthorizationRequired)
// naming the resource_metadata of WWW-Authenticate; other statuses answer
// the JSON-RPC error of their body, else "request failed with status N:
// body"; Close sends DELETE for the session (before 2026-07-28). It does
// not open the standalone GET stream (mcp-go's WithContinuousListening,
// which mcpflow's sessions never asked for) and has no OAuth handler of its
// own: credentials come from the header function.
//
// It imports mcp-go's mcp and client/transport packages and the standard
// library only; it must not import any mcpflow package (the root domain,
// config, mcpclient): mcpclient builds it and wires it into its sessions.
package streamhttp
