// Package demomcp is the demo MCP server that `make dev` and the integration
// tests run as bin/demo-mcp. It serves a fixed set of tools over stdio, SSE
// and streamable HTTP: ordinary tools (echo, add, slow, write_file, env, fail)
// and a task toolset (submit_job, get_job_status, cancel_job, job_stats) that
// answers through structuredContent exactly as the ordinary task driver
// expects (spec/mcp-behaviour.md §2.3). Jobs and call counters can be
// persisted to a JSON file so that they survive a restart.
//
// It stands in for a third-party MCP server, so it must not import any other
// mcpflow package; it depends only on the standard library and mcp-go.
package demomcp
