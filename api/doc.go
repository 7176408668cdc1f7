// Package api is mcpflow's HTTP API: a Gin server with bearer-token auth,
// one error renderer, health and readiness probes, threads, MCP tools,
// durable tasks, the thread event inbox (long-polling), the config admin
// routes, the MCP endpoint's edge, per-user limits, HTTP metrics and spans,
// and /openapi.json. With HealthOnly (a worker) it serves /healthz, /readyz
// and /metrics only.
//
// It imports the root domain package and reaches everything else through
// interfaces wired in cmd/: it must not import store/, mcpclient/,
// workflows/, activities/, worker/ or config/. *gin.Context never leaves a
// handler.
package api
