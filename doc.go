// Package mcpflow is the domain of mcpflow: durable, observable tool calls for
// AI agents on top of MCP servers and Temporal.
//
// It holds the task model (Status, Snapshot, Task, SubmitRequest, Submission),
// the payload bounds of the behaviour spec (§2.1, §2.7), threads and their
// events, domain errors with codes, and the small interfaces that adapters
// implement (TaskStore, ThreadStore, EventStore).
//
// This package imports nothing of ours and no adapter technology (no GORM,
// Gin, Temporal or mcp-go): the adapters in store/, api/, mcpclient/,
// workflows/ and activities/ import it, never the other way round.
package mcpflow
