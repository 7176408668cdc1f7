// Package api is mcpflow's HTTP API: a Gin server with bearer-token auth,
// one error renderer, health and readiness probes, features, threads, and
// (in later capabilities) tools, tasks, events and the config admin routes
// of DESIGN.md.
//
// It imports the root domain package and reaches everything else through
// interfaces wired in cmd/: it must not import store/, mcpclient/,
// workflows/, activities/ or worker/. *gin.Context never leaves a handler.
package api
