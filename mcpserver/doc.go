// Package mcpserver is mcpflow's MCP endpoint: mcpflow as an MCP server to
// agent hosts over streamable HTTP, in two revisions at the same URLs.
//
//   - 2025-11-25 (and 2025-06-18, 2025-03-26, 2024-11-05, negotiated by
//     initialize): a session per client (server.go, session.go); durable
//     tasks as MCP Tasks (tasks.go): a task-augmented call answers
//     CreateTaskResult once the remote submit succeeded and the row is
//     stored; notifications/tasks/status on the GET stream (stream.go); a
//     task's question as an elicitation/create on its tasks/result stream
//     (input.go).
//   - 2026-07-28 (modern.go), stateless: server/discover, the client's info
//     and capabilities in each request's _meta, checked Mcp-* headers;
//     durable tasks follow the Tasks extension (modern_tasks.go) and
//     subscriptions/listen streams their changes (listen.go).
//
// Both revisions serve a thread's tools as the REST listing shows them and
// run calls through the same runtime (mcpflow.ToolRuntime), relaying an
// ordinary call's progress, questions and log messages (relay.go,
// logging.go). The thread's prompts, resources and completions come through
// the runtime too when it relays them (mcpflow.SurfaceRuntime; surface.go),
// with resource subscriptions on 2025-11-25 sessions (subscribe.go). A
// durable task is one row and one workflow with two faces.
//
// Little process memory matters: sessions live in the database, tasks in
// the task store and Temporal, stream positions are inbox sequence numbers
// (the SSE event ids), so any replica answers any request. The exceptions
// are what needs a live connection: a 2025-11-25 session's resource
// subscriptions are held by the replica that took them (their updates
// reach its GET stream there), as a relayed question waits on the replica
// of its call.
//
// The transport and JSON-RPC dispatch are our own, on mcp-go's protocol
// types: a message is decoded once (jsonrpc.go), Server.post routes, and
// each method has one handler in a table per revision (handlers.go).
// mcp-go's server does not fit: it keeps tasks in process memory under its
// own ids and registers tools statically, while mcpflow's tools are per
// user and thread and its tasks are Temporal workflows.
//
// Each user's long waits are bounded by the slots in mcpflow.MCPRequest
// (per process) and stored sessions by Options.MaxSessionsPerUser.
//
// tasks/cancel deviates from the 2025-11-25 spec's "MUST transition the
// task to cancelled before responding": the remote server decides the
// outcome, so mcpflow answers the task's real state, never a cancelled it
// cannot guarantee.
//
// The API (api/) authenticates each request, checks its Origin, applies
// the body limit and resolves its thread before ServeMCP. This package
// imports the root package and mcp-go's mcp package only; it must not
// import api/, store/, mcpclient/, workflows/, activities/, worker/ or
// config/.
package mcpserver
