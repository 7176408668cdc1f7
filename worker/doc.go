// Package worker builds mcpflow's Temporal worker: it registers the
// workflows and activities on the task queue, and prepares the namespace
// (custom search attributes).
//
// It imports the Temporal SDK, workflows/ and activities/; it must not import
// api/ or store/ (activities receive their dependencies from cmd/).
package worker
