// Package internal groups code that only mcpflow itself uses. Two kinds
// live here, in rooms that say which:
//
//   - product helpers: the bounded LRU map the token caches of oidcauth
//     and mcpclient share (internal/lru), and the metric attribute-set
//     cache api and mcpclient share (internal/attrset; the adapters do not
//     import each other), and the walk over a JSON object's members and
//     the string and id appenders the fast paths of mcpserver, mcpclient,
//     its session, route, streamhttp and stdiopipe share
//     (internal/jsonscan);
//   - internal/testsupport: what tests and make dev run, never the product:
//     the test environment (testenv: temporary SQLite, PostgreSQL from
//     TEST_DATABASE_URL, the Temporal dev server from the locally built
//     CLI, the Node SDK clients and servers of internal/testdata/npm), the
//     demo MCP server (demomcp, with its binary cmd/demo-mcp that make dev
//     starts), a native MCP Tasks server (tasksrv), an OpenID provider
//     (testidp) and the check the JSON fast paths' tests share (jsontest).
//
// The benchmarks and their child-process helpers are apart, under bench/.
// Nothing outside this module may import internal/, and no production
// package may import internal/testsupport.
package internal
