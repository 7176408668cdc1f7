// Package api is mcpflow's HTTP API: a Gin server with bearer-token auth,
// one error renderer, health and readiness probes, features, threads, MCP
// tools (list, call, cache reset), durable tasks (list, detail, cancel) and
// the thread event inbox (with long-polling), the config admin routes
// (GET/PUT/PATCH /api/mcp/config, POST /api/mcp/config/servers), request
// limits (body size 413; per user 429: tool calls in flight, waits, MCP
// streams), HTTP metrics
// and spans, and /openapi.json. With HealthOnly (a worker process) it
// serves /healthz, /readyz and /metrics only.
//
// It imports the root domain package and reaches everything else through
// interfaces wired in cmd/ (mcpflow.ThreadStore, TaskStore, EventStore,
// ToolRuntime, ConfigAdmin, and cancel and thread-deleted functions): it
// must not import store/, mcpclient/, workflows/, activities/, worker/ or
// config/. *gin.Context never leaves a handler.
package api
