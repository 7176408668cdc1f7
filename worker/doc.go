// Package worker is mcpflow's Temporal adapter outside workflow code: it
// builds the worker that registers the task workflow and activities,
// prepares the namespace (custom search attributes), and holds the client
// side of tasks (TaskClient: update-with-start submits, cancel signals,
// worker availability). ClientOptions finds the Temporal server as the
// temporal CLI does (envconfig: TEMPORAL_* and temporal.toml) under
// mcpflow's own temporal.* keys; Versioning and Promote make the worker a
// version of a worker deployment (docs/operations.md).
//
// It imports the Temporal SDK, workflows/, config/ (frozen task servers) and
// the root domain package; it must not import api/, store/ or mcpclient/
// (their pieces arrive through interfaces wired in cmd/).
package worker
