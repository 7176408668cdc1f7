// Package worker is mcpflow's Temporal adapter outside workflow code: it
// builds the worker that registers the task workflow and activities,
// prepares the namespace (custom search attributes), and holds the client
// side of tasks (TaskClient: update-with-start submits, cancel signals,
// worker availability).
//
// It imports the Temporal SDK, workflows/, config/ (frozen task servers) and
// the root domain package; it must not import api/, store/ or mcpclient/
// (their pieces arrive through interfaces wired in cmd/).
package worker
