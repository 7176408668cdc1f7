// Package internal groups code that only mcpflow itself uses: the test
// environment (internal/testenv: temporary SQLite, PostgreSQL from
// TEST_DATABASE_URL, the Temporal dev server from the locally built CLI, the
// reference MCP server from internal/testdata), the demo MCP server
// (internal/demomcp), a native MCP Tasks server for tests
// (internal/tasksrv), an OpenID provider for tests (internal/testidp), the benchmarks' child processes (internal/benchproc),
// the bounded LRU map the token caches of oidcauth and mcpclient
// share (internal/lru), and the metric attribute-set cache api and mcpclient share
// (internal/attrset; the adapters do not import each other). Nothing outside this module may import it, and
// production packages must not import internal/testenv, internal/tasksrv or
// internal/testidp.
package internal
