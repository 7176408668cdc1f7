// Package config loads and validates mcpflow's two configuration files.
//
// The service config (config.yaml, overridable per key by MCPFLOW_* environment
// variables) says where the API listens, which database and Temporal cluster
// to use, the durable-task bounds (mcp_tasks), tool search, auth tokens and
// the notification webhook. See Service, DefaultService and LoadService.
//
// The extensions config (extensions_config.json) is DeerFlow-compatible: MCP
// servers, skills, middlewares and mcpInterceptors. LoadExtensions parses it
// (tolerating Python's bare NaN/Infinity tokens so validation can name the
// field that holds them), resolves whole-string $VAR placeholders, decodes it
// into the typed Extensions model and validates it. The unresolved document is
// kept as a RawDocument so writers can write $VAR placeholders and unknown keys
// back losslessly. Locate finds the file, FileSignature fingerprints it, and
// CheckHeaderValue and LooksSecret implement the header-value and secret-key
// rules shared by the MCP client and the API.
//
// Admin is the admin API's side of the file (spec §4): masking, the
// secret-preserving merge, the stdio launch policy (LaunchPolicy, spec §5),
// locking (WithLock) and atomic writes (WriteFileAtomic).
//
// This package imports the root domain package (for its error codes) and
// no other mcpflow package, so every adapter may import it.
package config
