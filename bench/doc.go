// Package bench holds mcpflow's benchmarks, tools apart from the product:
// mcpbench (an MCP call through mcpflow against direct calls and a peer
// proxy; make bench, make bench-peer) and taskbench (durable tasks against
// a bare Temporal baseline, and the soak test; make bench, make soak), with
// their child-process helpers in bench/internal/benchproc. No product
// package imports them.
package bench
