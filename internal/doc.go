// Package internal groups code that only mcpflow itself uses: the test
// environment (internal/testenv: temporary SQLite, PostgreSQL from
// TEST_DATABASE_URL, the Temporal dev server from the locally built CLI) and
// the demo MCP server (internal/demomcp). Nothing outside this module may
// import it, and production packages must not import internal/testenv.
package internal
