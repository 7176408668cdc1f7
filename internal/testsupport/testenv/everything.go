package testenv

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// EverythingEntry returns the entry point (dist/index.js) of the reference
// MCP server @modelcontextprotocol/server-everything that `make testdeps`
// installs in internal/testdata/npm, skipping t when it or node is
// missing (MissingDependency). Run it with `node <entry> stdio`, or see StartEverythingHTTP.
func EverythingEntry(t testing.TB) string {
	t.Helper()
	pkg := filepath.Join(RepoRoot(), "internal", "testdata", "npm", "node_modules", "@modelcontextprotocol", "server-everything")
	entry := filepath.Join(pkg, "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		MissingDependency(t, "the reference MCP server is not installed at %s: run `make testdeps` (needs npm)", pkg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		MissingDependency(t, "node not found on PATH: install Node.js and run `make testdeps` to test against @modelcontextprotocol/server-everything")
	}
	return entry
}

// everythingLoopback makes every node HTTP server that is given only a
// port listen on 127.0.0.1 (the reference server listens on every
// interface by default).
const everythingLoopback = `const http = require("node:http");
const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (port, ...rest) {
  if ((typeof port === "number" || typeof port === "string") && typeof rest[0] !== "string") {
    return listen.call(this, port, "127.0.0.1", ...rest);
  }
  return listen.call(this, port, ...rest);
};
`

// StartEverythingHTTP runs the reference server's streamable HTTP
// transport (entry from EverythingEntry) on a free 127.0.0.1 port, waits
// until it listens and returns its MCP endpoint URL. It is killed at
// cleanup.
func StartEverythingHTTP(t testing.TB, entry string) string {
	t.Helper()
	url, _ := StartEverythingHTTPAt(t, entry, FreeAddr(t))
	return url
}

// StartEverythingHTTPAt is StartEverythingHTTP on addr (a restart on the
// same address); stop kills the server, as cleanup does.
func StartEverythingHTTPAt(t testing.TB, entry, addr string) (url string, stop func()) {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	preload := filepath.Join(t.TempDir(), "loopback.cjs")
	if err := os.WriteFile(preload, []byte(everythingLoopback), 0o600); err != nil {
		t.Fatal(err)
	}
	out := &SyncBuffer{}
	cmd := exec.Command("node", "--require", preload, entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	cmd.Stdout, cmd.Stderr = out, out
	c, err := startChild(t, cmd)
	if err != nil {
		t.Fatal(err)
	}
	stop = c.stop
	// The server says which port it listens on (something else might have
	// bound the port).
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "listening on port "+port) {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("the reference server did not listen on %s: %s", addr, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + addr + "/mcp", stop
}
