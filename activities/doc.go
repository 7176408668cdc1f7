// Package activities holds mcpflow's Temporal activities as methods on one
// Activities struct that carries their dependencies (the task store, the MCP
// task driver, the notifier), so workflows can reference them through a nil
// *Activities pointer.
//
// It imports the root domain package and the Temporal SDK; its dependencies
// arrive as domain interfaces wired in cmd/, so it never imports store/,
// mcpclient/ or api/.
package activities
