// Package store is the GORM adapter that persists mcpflow's task projections,
// threads and thread event inboxes in SQLite (pure Go, github.com/glebarez/sqlite)
// or PostgreSQL.
//
// Open connects, applies the embedded, versioned goose migrations of the
// chosen backend (never AutoMigrate) and returns a *DB that implements
// mcpflow.TaskStore, mcpflow.ThreadStore, mcpflow.EventStore,
// mcpflow.TaskSlots (the running-task slots of
// mcp_tasks.max_running_tasks_per_user, reserved in mcp_task_slots and
// consumed by the insert of the task's row), mcpflow.AuditStore (the
// audit log, audit_records: migration 00011) and mcpflow.RateStore (the
// rate limits' buckets and daily quotas shared by the API replicas,
// rate_buckets and rate_quotas: migration 00012) and mcpflow.ApprovalStore
// (calls waiting for approval, mcp_approvals: migration 00013, every state
// change a compare and set), and the optional recorders of a task's
// row: mcpflow.PollRecorder (last_polled_at alone) and
// mcpflow.CancelRecorder (cancel_signalled_at alone, migration 00015;
// UpdateTask never writes it). Storage
// errors become domain errors here: a missing row is an mcpflow.ENotFound
// error, a deleted thread an mcpflow.EGone error, and a second task for the
// same (user, server, remote task id) a *mcpflow.DuplicateRemoteTaskError.
// Threads are keyed by (user_id, id): thread ids are per user, and tasks,
// events and MCP sessions name their thread by both (migration 00009).
//
// The GORM row structs live in this package only. Of mcpflow's own packages
// it imports only the root domain package (github.com/mcpflow/mcpflow); it
// must never import api, mcpclient, workflows, activities or config.
//
// Temporal owns scheduling, leases and retries, so the schema keeps only the
// columns of the task projection that still mean something; see
// migrations/*/00001_init.sql.
package store
