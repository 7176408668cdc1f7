// Package taskdriver holds the drivers of durable tasks (mcpflow.Driver):
// Ordinary, over a server's submit, status, cancel and input tools (task
// toolsets); Native, over native MCP Tasks (2025-11-25 task-augmented
// calls, the 2026-07-28 Tasks extension); Approval, over a call a policy
// sent for approval (mcpflow.ApprovalStore: it waits for an approver, then
// calls the tool once through Approval.Call); and Drivers, which hands each
// task to its driver by its driver data.
//
// The drivers reach upstream servers only through the function they are
// given: Ordinary.Call (Runtime.Call) and Native.Run (Runtime.Run), with
// the task's server configuration. Each remote call carries a
// route.TaskPin, by which the Runtime keeps the task's session while the
// remote task runs. It imports the root domain package and
// mcpclient's route, session, credential and question; it must not import
// mcpclient (which imports it), store/, workflows/ or activities/ (its
// tests use store for a real SQLite).
package taskdriver
