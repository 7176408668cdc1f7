// Package mcpclient is mcpflow's adapter to MCP servers, built on
// github.com/mark3labs/mcp-go: connections over stdio, SSE and streamable
// HTTP, discovery and tool-name prefixing, the tool cache, the stdio session
// pool, credential interceptors, path translation and the ordinary task
// driver.
//
// It imports the root domain package and config/ (for the server model); it
// must not import api/, store/, workflows/, activities/ or worker/.
package mcpclient
