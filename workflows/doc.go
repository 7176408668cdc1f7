// Package workflows holds mcpflow's Temporal workflow definitions and the
// names other packages use to talk to them: search-attribute keys, signal,
// update and query names.
//
// Workflow code is deterministic: workflow.Now, timers, workflow.Go, no I/O,
// no map iteration without sorting. It imports the root domain package and
// the Temporal SDK only; never store/, api/, mcpclient/ or activities/
// (activities are called by name through a nil *Activities pointer type
// declared in activities/, which is a compile-time dependency only).
package workflows
