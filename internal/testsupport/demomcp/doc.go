// Package demomcp is the demo MCP server that `make dev` and the integration
// tests run as bin/demo-mcp. It serves a fixed set of tools over stdio, SSE
// and streamable HTTP: ordinary tools (echo, add, slow, write_file, env, fail)
// and a task toolset (submit_job, get_job_status, cancel_job, answer_job,
// job_stats, release_answers) that answers through structuredContent
// exactly as the ordinary task driver expects (spec/mcp-behaviour.md §2.3).
// Jobs and call counters can be persisted to a JSON file so that they
// survive a restart.
//
// Questions: a job submitted with outcome "input_required" (a free-form
// question) or "ask" (an MCP elicitation: {"message", "requested_schema"})
// reaches status input_required after duration_seconds and waits there.
// answer_job (a toolset's input_tool) takes {"task_id", "action",
// "content"?} for such a job only: "accept" and "decline" resume it, and it
// completes answer_duration_seconds later (0 by default) with result
// {"action": ..., "answer": content} ("answer" with accept only, {} when no
// content came); "cancel" cancels it. It answers {"task_id", "status"}.
// A job that does not wait for input answers, without isError and without
// taking the answer, {"task_id", "status", "error_code":
// "input_not_required", "error"}; an unknown job error_code
// "task_not_found". Malformed arguments are isError.
//
// Failures to inject, per job at submit: answer_errors N refuses the next
// N answers the job would take (answer_job answers isError, the answer not
// taken); cancel_errors N fails the next N cancel_job calls (isError, the
// job not cancelled); hold_answers makes answer_job calls wait (at most a
// minute, counted in job_stats as the job's answers_held) until
// release_answers is called for the job, after which they go on as usual
// and later ones are not held.
//
// A job submitted with finish_at_status_call N ends at its N-th
// get_job_status call (earlier calls answer running) instead of after
// duration_seconds, so a benchmark gets an exact number of polls whatever
// their timing; with status_delay_seconds every get_job_status call of the
// job answers that much later (counted first), a slow remote status call.
// With progress true a running job's status carries a "message" ("25%
// done"), which changes at each quarter of duration_seconds.
//
// It stands in for a third-party MCP server, so it must not import any other
// mcpflow package; it depends only on the standard library and mcp-go.
package demomcp
