// Package mcpclient is mcpflow's adapter to MCP servers, built on
// github.com/mark3labs/mcp-go: connections over stdio, SSE and streamable
// HTTP, discovery and tool-name prefixing, the tool cache, the stdio session
// pool, credential interceptors, path translation and the ordinary task
// driver.
//
// SSE/HTTP servers have one shared session per process, except a server
// whose credential is exchanged per caller (RFC 8693 token exchange): it
// has one session per user (at most Options.MaxCallerSessions open, least
// recently used closed first), opened and listed with that user's
// exchanged token, and its tools are discovered per signed-in user (a
// bounded cache of 1024 users' listings) instead of by the process-wide
// discovery, which never contacts it.
//
// It imports the root domain package and config/ (for the server model); it
// must not import api/, store/, workflows/, activities/ or worker/.
package mcpclient
