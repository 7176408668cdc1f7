// Package api is mcpflow's HTTP API: a Gin server with bearer-token auth,
// one error renderer, health and readiness probes, features, threads, MCP
// tools (list, call, cache reset) and durable tasks (list, detail, cancel);
// the event inbox and the config admin routes of DESIGN.md come with later
// capabilities.
//
// It imports the root domain package and reaches everything else through
// interfaces wired in cmd/ (mcpflow.ThreadStore, TaskStore, ToolRuntime and
// a cancel function): it must not import store/, mcpclient/, workflows/,
// activities/ or worker/. *gin.Context never leaves a handler.
package api
