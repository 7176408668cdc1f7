package demomcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// binaryDir holds the demo-mcp binary built once per test binary.
var (
	binaryDir  string
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "demomcp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binaryDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// demoBinary builds ./internal/testsupport/demomcp/cmd/demo-mcp once and returns its path.
func demoBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		moduleRoot := filepath.Join(filepath.Dir(file), "..", "..", "..")
		binaryPath = filepath.Join(binaryDir, "demo-mcp")
		cmd := exec.Command("go", "build", "-o", binaryPath, "./internal/testsupport/demomcp/cmd/demo-mcp")
		cmd.Dir = moduleRoot
		out, err := cmd.CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build ./internal/testsupport/demomcp/cmd/demo-mcp: %v\n%s", err, out)
		}
	})
	require.NoError(t, binaryErr)
	return binaryPath
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testBundle is an in-process demo server and a client connected to it.
type testBundle struct {
	srv     *Server
	client  *client.Client
	workdir string
}

// setup serves a fresh Server over in-process streamable HTTP (httptest)
// and connects a real mcp-go client to it.
func setup(t *testing.T) *testBundle {
	t.Helper()
	workdir := t.TempDir()
	srv, err := New(Config{Workdir: workdir})
	require.NoError(t, err)
	return &testBundle{srv: srv, client: connectHTTP(t, srv, ""), workdir: workdir}
}

// serveHTTP serves srv over transport with httptest and returns the base URL.
func serveHTTP(t *testing.T, srv *Server, transportName string) string {
	t.Helper()
	handler, closeSessions, err := srv.HTTPHandler(transportName)
	require.NoError(t, err)
	ts := httptest.NewServer(handler)
	t.Cleanup(func() {
		closeSessions(context.Background())
		ts.Close()
	})
	return ts.URL
}

// connectHTTP connects a streamable HTTP client; protocolVersion "" lets
// the client negotiate (mcp-go probes the 2026-07-28 protocol first).
func connectHTTP(t *testing.T, srv *Server, protocolVersion string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(serveHTTP(t, srv, TransportHTTP) + StreamableHTTPPath)
	require.NoError(t, err)
	return initClient(t, c, protocolVersion)
}

func connectSSE(t *testing.T, srv *Server) *client.Client {
	t.Helper()
	c, err := client.NewSSEMCPClient(serveHTTP(t, srv, TransportSSE) + SSEPath)
	require.NoError(t, err)
	require.NoError(t, c.Start(testContext(t)))
	return initClient(t, c, "")
}

// connectStdio spawns the built binary as a stdio server. env is appended to
// the test's environment; dir, if set, is the child's working directory.
func connectStdio(t *testing.T, env []string, dir string, args ...string) *client.Client {
	t.Helper()
	bin := demoBinary(t)
	var opts []transport.StdioOption
	if dir != "" {
		opts = append(opts, transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Dir = dir
			return cmd, nil
		}))
	}
	c, err := client.NewStdioMCPClientWithOptions(bin, env, append([]string{"--transport", TransportStdio}, args...), opts...)
	require.NoError(t, err)
	return initClient(t, c, "")
}

func initClient(t *testing.T, c *client.Client, protocolVersion string) *client.Client {
	t.Helper()
	t.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = protocolVersion
	req.Params.ClientInfo = mcp.Implementation{Name: "demomcp-test", Version: "1"}
	res, err := c.Initialize(testContext(t), req)
	require.NoError(t, err)
	require.Equal(t, Name, res.ServerInfo.Name)
	return c
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(testContext(t), req)
	require.NoError(t, err, "call %s", name)
	return res
}

// callStructured calls a tool that must succeed and returns its
// structuredContent decoded as JSON.
func callStructured(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	res := callTool(t, c, name, args)
	require.False(t, res.IsError, "%s returned isError: %s", name, firstText(res))
	return structuredOf(t, res)
}

func structuredOf(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw := []byte(res.RawStructuredContent)
	if len(raw) == 0 {
		require.NotNil(t, res.StructuredContent, "structuredContent missing")
		var err error
		raw, err = json.Marshal(res.StructuredContent)
		require.NoError(t, err)
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func firstText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			return tc.Text
		}
	}
	return ""
}

// waitStatus polls get_job_status until it reports want.
func waitStatus(t *testing.T, c *client.Client, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := callStructured(t, c, ToolGetJobStatus, map[string]any{"task_id": id})
		if got["status"] == want {
			return got
		}
		if time.Now().After(deadline) {
			require.Failf(t, "job did not reach status", "want %q, last payload %v", want, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// process is a demo-mcp binary serving an HTTP transport.
type process struct {
	cmd     *exec.Cmd
	baseURL string
	done    chan struct{}
	mu      sync.Mutex
	stderr  strings.Builder
}

// startProcess runs the binary with args and waits for its listening line.
func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	return startProcessEnv(t, nil, args...)
}

// startProcessEnv is startProcess with env appended to the environment.
func startProcessEnv(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(demoBinary(t), args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	urls := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if u, ok := strings.CutPrefix(line, ListeningPrefix); ok {
				select {
				case urls <- u:
				default: // a second listening line fails the test below
				}
			}
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
			_ = p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("demo-mcp stderr:\n%s", p.stderrText())
		}
	})
	select {
	case p.baseURL = <-urls:
	case <-p.done:
		_ = p.cmd.Wait()
		require.FailNow(t, "demo-mcp exited before listening", p.stderrText())
	case <-time.After(20 * time.Second):
		require.FailNow(t, "no listening line from demo-mcp", p.stderrText())
	}
	return p
}

func (p *process) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait waits for the process to exit and returns its exit code.
func (p *process) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		require.FailNow(t, "demo-mcp did not exit", p.stderrText())
	}
	err := p.cmd.Wait()
	if exitErr, ok := err.(*exec.ExitError); ok {
		return exitErr.ExitCode()
	}
	require.NoError(t, err)
	return p.cmd.ProcessState.ExitCode()
}
