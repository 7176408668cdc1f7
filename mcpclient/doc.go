// Package mcpclient is mcpflow's runtime over MCP servers: Runtime loads
// the servers' configuration, discovers and prefixes their tools (the tool
// cache, per-caller listings, retries of servers that are down, routing
// hints), routes each call to its session (route.go: the pooled stdio
// session of a user's thread, or a shared SSE/HTTP session), and holds the
// built-in tools: the task tools (background.go) and review_approvals, by
// which approvers decide calls waiting for approval (approvals.go). It
// relays the rest of the servers' surface (surface.go): prompts named like
// tools, resources and templates with reads routed by URI, completions,
// and resource subscriptions.
//
// Its rooms below it, each with one job: session (a session and its
// transports, the stdio pool), credential (OAuth, token exchange, the
// headers of a call), question (the questions of native tasks), workspace
// (a thread's files and path translation), route (a call's route and a
// durable task's pin on its session) and taskdriver (the ordinary,
// native and approval task drivers). They import none of mcpclient; mcpclient imports
// the root domain package, config/ and them, and must not import api/,
// store/, workflows/, activities/ or worker/.
//
// SSE/HTTP servers have one shared session per process, except a server
// whose credential is exchanged per caller (RFC 8693): one session per
// user (at most Options.MaxCallerSessions), its tools listed per user.
package mcpclient
