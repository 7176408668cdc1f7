// Package bench holds mcpflow's benchmarks, tools apart from the product:
// mcpbench (an MCP call through mcpflow against direct calls and the peer
// proxy, ending with the summary of the figures mcpflow must reach; make
// bench, make bench-calls) and taskbench (durable tasks against a bare
// Temporal baseline, and the soak test; make bench, make bench-tasks, make
// soak), with their child-process helpers in bench/internal/benchproc. No
// product package imports them.
package bench
