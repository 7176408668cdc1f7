package testenv

import (
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
)

// Demo is a demo MCP server process started by StartDemo.
type Demo struct {
	// Base is the server's base URL, http://127.0.0.1:PORT.
	Base string
	// URL is the MCP endpoint of its transport (/mcp for http, /sse for sse).
	URL  string
	cmd  *exec.Cmd
	once sync.Once
}

// Kill stops the server at once (SIGKILL) and waits for it; the test's
// cleanup calls it too.
func (d *Demo) Kill() {
	d.once.Do(func() {
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
		_ = d.cmd.Wait()
	})
}

// StartDemo runs the demo MCP server (built once by Binary) over transport
// "http" or "sse" on a free 127.0.0.1 port, with extra flags such as
// "--state", FILE, and waits for its "listening on" line.
func StartDemo(t testing.TB, transport string, args ...string) *Demo {
	t.Helper()
	out := &SyncBuffer{}
	cmd := exec.Command(Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp"), append([]string{"--transport", transport, "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start demo-mcp: %v", err)
	}
	d := &Demo{cmd: cmd}
	t.Cleanup(d.Kill)
	deadline := time.Now().Add(30 * time.Second)
	for d.Base == "" {
		for _, line := range strings.Split(out.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, demomcp.ListeningPrefix); ok {
				d.Base = strings.TrimSpace(rest)
			}
		}
		if d.Base == "" {
			if time.Now().After(deadline) {
				t.Fatalf("demo-mcp did not start: %s", out)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	d.URL = d.Base + demomcp.StreamableHTTPPath
	if transport == "sse" {
		d.URL = d.Base + demomcp.SSEPath
	}
	return d
}
