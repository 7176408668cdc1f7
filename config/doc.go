// Package config loads and validates mcpflow's two configuration files.
//
// The service config (config.yaml, overridable per key by MCPFLOW_* environment
// variables) says where the API listens, which database and Temporal cluster
// to use, the durable-task bounds (mcp_tasks), tool search, auth tokens and
// the notification webhook. See Service, DefaultService and LoadService.
// yaml.v3 decodes it over DefaultService, after a shape pass against the
// schema yaml.v3 itself encodes from DefaultService, which gives each error
// its field path and line; the MCPFLOW_* variables are read off the same
// schema. Validation is a separate pass over the decoded values.
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
// The extensions config keeps a small hand-written reader (objReader) over
// its own ordered JSON tree (Object) rather than encoding/json into
// structs, because the behaviour it implements is DeerFlow's, not JSON's:
// unknown keys are kept, in order, at every level and written back; null
// and an absent key differ (session_init_timeout, oauth's nullable
// strings); transport stands in for type by Python truthiness; Python's
// NaN and Infinity parse so that their field can be named; and every
// message is DeerFlow's, with values from $VAR placeholders named instead
// of shown. Struct tags would need a custom type or a second pass for each
// of these (and yaml.v3 nodes, which keep key order, take YAML that
// DeerFlow's json.load refuses), so a field is one line of the reader.
//
// Admin is the admin API's side of the file (spec §4): masking, the
// secret-preserving merge, the stdio launch policy (LaunchPolicy, spec §5),
// locking (WithLock) and atomic writes (WriteFileAtomic).
//
// This package imports the root domain package (for its error codes) and
// no other mcpflow package, so every adapter may import it.
package config
