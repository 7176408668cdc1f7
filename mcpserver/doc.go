// Package mcpserver is mcpflow's MCP endpoint: mcpflow as an MCP server to
// agent hosts over streamable HTTP, in two revisions at the same URLs.
//
//   - 2025-11-25 (and 2025-06-18, 2025-03-26, 2024-11-05, negotiated by
//     initialize): a session per client (server.go, session.go), its
//     client's capabilities decoded once per session; durable
//     tasks as MCP Tasks: a task-augmented call of a durable tool answers
//     CreateTaskResult with the local task id once the remote submit
//     succeeded and the row is stored, and tasks/get, tasks/list,
//     tasks/cancel and tasks/result read the task store and signal the
//     task's workflow (tasks.go); notifications/tasks/status are pushed on
//     the GET stream from the thread inbox (stream.go); a task's question
//     is an elicitation/create on its tasks/result stream (input.go).
//   - 2026-07-28 (modern.go): a request is of this revision when its
//     params._meta names it (or its Mcp-Protocol-Version header does);
//     it is stateless: server/discover instead of initialize, the client's
//     info and capabilities in each request's _meta, the Mcp-Method,
//     Mcp-Name and Mcp-Param-* headers checked against the body. Durable
//     tasks follow the Tasks extension (modern_tasks.go): tools/call
//     answers resultType "task", tasks/get shows the task with its
//     inputRequests, tasks/update answers them, tasks/cancel cancels;
//     subscriptions/listen streams task changes from the thread inbox
//     (listen.go).
//
// Both revisions serve a thread's tools exactly as the REST listing shows
// them and run tool calls through the same runtime (mcpflow.ToolRuntime),
// relaying an ordinary call's progress and the upstream's questions to the
// caller (relay.go). A durable task is one thing with two faces: the same
// row, workflow, status mapping and answer path.
//
// Nothing here is process memory that matters: sessions live in the
// database (mcpflow.MCPSessionStore), tasks in the task store and Temporal,
// and stream positions are inbox sequence numbers (the SSE event ids), so
// any replica answers any request and a restart loses nothing.
//
// It implements the transport and the JSON-RPC dispatch itself, with
// mcp-go's protocol types (package mcp): a message is decoded once, params
// included (jsonrpc.go), Server.post reads, validates the envelope and
// routes, and each method has one handler in a table per revision over
// the shared core (handlers.go). mcp-go's server does not fit here:
// it keeps tasks in a process-local map under ids of its own, runs task
// handlers asynchronously on the request's context, and registers tools
// statically, while mcpflow's tools are discovered per user and thread and
// its tasks are Temporal workflows.
//
// Each user's long waits are bounded through the slots the API hands over
// in mcpflow.MCPRequest (tool calls, waits shared with the REST events
// long poll, GET streams; per process), and each user's stored sessions
// by Options.MaxSessionsPerUser (database-wide: the least recently used
// end). Waiters wake for their own thread only.
//
// tasks/cancel deviates from the 2025-11-25 spec's "MUST transition the
// task to cancelled before responding": the remote server decides a
// task's outcome and the remote cancel is retried until it confirms, so
// mcpflow answers the task's real state (cancelled when it is, else
// completed, failed, or working with "cancellation requested"), never a
// cancelled it cannot guarantee.
//
// Answers to a task's question (a 2025-11-25 client's response to the
// elicitation/create mcpflow sent on its tasks/result stream, a 2026-07-28
// tasks/update) go to the task's workflow and are answered once the MCP
// server has them. Each outcome of an answer that was not delivered is its
// own (Options.AnswerInput's errors): only an answer to a question that is
// no longer open is taken as done (tasks/update acknowledges it, as the
// Tasks extension says; the elicitation response gets 202). Another answer
// on its way is codeAnswerPending (-32003, data.retryAfterMs; on the 2025
// response HTTP 409 with Retry-After), a task being cancelled -32602 (409),
// the server not taking the answer -32603 (502; the question stays open).
// A 2025 client's response is not a request, so the HTTP status and a
// JSON-RPC error body with id null are all it can see: the TypeScript SDK
// v1 reports a non-2xx answer to its onerror handler ("Failed to send
// response: … Error POSTing to endpoint: <the body>").
//
// The API (api/) authenticates each request, checks its Origin, applies
// the body limit and resolves its thread before it reaches ServeMCP. This
// package imports the root package and mcp-go's mcp package only; it must
// not import api/, store/, mcpclient/, workflows/, activities/, worker/ or
// config/.
package mcpserver
