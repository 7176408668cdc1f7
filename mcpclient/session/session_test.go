package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// sessWait bounds waits that normally take well under a second; it is never
// a performance assertion.
const sessWait = 30 * time.Second

func sessSeconds(v float64) *float64 { return &v }

func sessCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), sessWait)
	t.Cleanup(cancel)
	return ctx
}

// sessStdioServer is the demo server over stdio.
func sessStdioServer(t *testing.T, name string) *config.Server {
	t.Helper()
	return &config.Server{
		Name: name, Enabled: true, Type: config.TransportStdio,
		Command: testenv.Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp"), Args: []string{"--transport", "stdio"},
		SessionInitTimeout: sessSeconds(10),
	}
}

// sessRemoteServer is an sse/http server entry for url.
func sessRemoteServer(name, transport, url string) *config.Server {
	return &config.Server{Name: name, Enabled: true, Type: transport, URL: url, SessionInitTimeout: sessSeconds(10)}
}

// sessEndpoint is the MCP endpoint of a demo base URL.
func sessEndpoint(base, transport string) string {
	if transport == config.TransportSSE {
		return base + demomcp.SSEPath
	}
	return base + demomcp.StreamableHTTPPath
}

// sessDemoProcess runs the demo-mcp binary over sse or http on 127.0.0.1
// and returns its MCP endpoint; the test stops it.
func sessDemoProcess(t *testing.T, transport string) string {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp"), "--transport", transport, "--addr", "127.0.0.1:0", "--workdir", t.TempDir())
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 0, 256)
		one := make([]byte, 1)
		sent := false
		for {
			n, err := stderr.Read(one)
			if n > 0 && !sent {
				if one[0] == '\n' {
					if u, ok := strings.CutPrefix(string(buf), demomcp.ListeningPrefix); ok {
						lines <- u
						sent = true
					}
					buf = buf[:0]
				} else {
					buf = append(buf, one[0])
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-drained
		_ = cmd.Wait()
	})
	select {
	case base := <-lines:
		return sessEndpoint(base, transport)
	case <-drained:
		t.Fatal("demo-mcp exited before listening")
	case <-time.After(sessWait):
		t.Fatal("demo-mcp printed no listening line")
	}
	return ""
}

// opensSession reports whether a request body is the first request of a
// session's dial: the 2026-07-28 server/discover probe, or a 2025-11-25
// initialize.
func opensSession(body []byte) bool {
	return bytes.Contains(body, []byte(`"server/discover"`)) || bytes.Contains(body, []byte(`"initialize"`))
}

// legacyOnly makes an MCP server a 2025-11-25 one for the client: its
// server/discover probe is answered -32601, so the session initializes.
// For tests of what 2025-11-25 sessions do (Mcp-Session-Id, DELETE).
func legacyOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"server/discover"`)) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}`))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sessDial dials srv and closes the session at cleanup.
func sessDial(t *testing.T, srv *config.Server, o session.DialOptions) *session.Session {
	t.Helper()
	s, err := session.Dial(sessCtx(t), srv, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func sessCall(t *testing.T, s *session.Session, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := s.CallTool(sessCtx(t), name, args, nil)
	require.NoError(t, err, "call %s", name)
	return res
}

func sessText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			return tc.Text
		}
	}
	return ""
}

func sessStructured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw := []byte(res.RawStructuredContent)
	if len(raw) == 0 {
		var err error
		raw, err = json.Marshal(res.StructuredContent)
		require.NoError(t, err)
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func sessRequireError(t *testing.T, err error, code, message string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, mcpflow.ErrorCode(err), "error: %v", err)
	if message != "" {
		require.Equal(t, message, mcpflow.ErrorMessage(err))
	}
}

func sessAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func sessClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestDialTransports(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{config.TransportStdio, config.TransportSSE, config.TransportHTTP} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			srv := sessStdioServer(t, "demo")
			if transport != config.TransportStdio {
				srv = sessRemoteServer("demo", transport, sessDemoProcess(t, transport))
			}
			s := sessDial(t, srv, session.DialOptions{Dir: t.TempDir()})
			require.Equal(t, "demo", s.Server())
			if transport == config.TransportStdio {
				require.Positive(t, s.PID())
			} else {
				require.Zero(t, s.PID())
			}

			tools, err := s.ListTools(sessCtx(t))
			require.NoError(t, err)
			var names []string
			for _, tool := range tools {
				names = append(names, tool.Name)
			}
			require.ElementsMatch(t, demomcp.ToolNames, names)

			require.Equal(t, "hi", sessText(sessCall(t, s, "echo", map[string]any{"message": "hi"})))
			require.Equal(t, map[string]any{"sum": 5.0}, sessStructured(t, sessCall(t, s, "add", map[string]any{"a": 2, "b": 3})))

			// A tool-level failure is a result, not an error.
			res := sessCall(t, s, "fail", map[string]any{"message": "boom"})
			require.True(t, res.IsError)
			require.Equal(t, "boom", sessText(res))

			_, err = s.CallTool(sessCtx(t), "no_such_tool", nil, nil)
			sessRequireError(t, err, mcpflow.ENotFound, "MCP tool 'no_such_tool' not found on server 'demo'")
			require.False(t, session.IsDisconnect(err))
			require.False(t, sessClosed(s.Done()))

			pid := s.PID()
			require.NoError(t, s.Close())
			require.True(t, sessClosed(s.Done()))
			require.NoError(t, s.Close(), "Close is idempotent")
			if pid != 0 {
				require.False(t, sessAlive(pid), "the stdio server is gone when Close returns")
			}
		})
	}
}

func TestDialToolCallTimeout(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{config.TransportStdio, config.TransportSSE, config.TransportHTTP} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			srv := sessStdioServer(t, "demo")
			if transport != config.TransportStdio {
				srv = sessRemoteServer("demo", transport, sessDemoProcess(t, transport))
			}
			srv.ToolCallTimeout = sessSeconds(0.3)
			s := sessDial(t, srv, session.DialOptions{})

			_, err := s.CallTool(sessCtx(t), "slow", map[string]any{"seconds": 5}, nil)
			sessRequireError(t, err, mcpflow.ETimeout, "MCP tool 'slow' on server 'demo' timed out after 0.3s")
			require.False(t, session.IsDisconnect(err))

			// The session survives a timeout.
			require.False(t, sessClosed(s.Done()))
			require.Equal(t, "still here", sessText(sessCall(t, s, "echo", map[string]any{"message": "still here"})))
		})
	}
}

func TestDialCallerDeadline(t *testing.T) {
	t.Parallel()
	s := sessDial(t, sessStdioServer(t, "demo"), session.DialOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := s.CallTool(ctx, "slow", map[string]any{"seconds": 5}, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, session.IsDisconnect(err))
	require.Equal(t, "ok", sessText(sessCall(t, s, "echo", map[string]any{"message": "ok"})))
}

func TestDialStdioEnvironment(t *testing.T) {
	t.Setenv("MCPFLOW_TEST_SECRET", "do-not-leak")
	t.Setenv("DATABASE_URL", "postgres://user:pw@db/mcpflow")
	tmp := t.TempDir()
	srv := sessStdioServer(t, "demo")
	srv.Env = map[string]string{"DEMO_SERVER_VAR": "from-server"}
	s := sessDial(t, srv, session.DialOptions{Env: map[string]string{
		"TMPDIR": tmp, "DEMO_SERVER_VAR": "default-loses",
	}})

	env := sessStructured(t, sessCall(t, s, "env", nil))["env"].(map[string]any)
	want := map[string]any{"TMPDIR": tmp, "DEMO_SERVER_VAR": "from-server"}
	for _, k := range []string{"PATH", "HOME", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			want[k] = v
		}
	}
	require.Contains(t, want, "PATH")
	require.Equal(t, want, env, "the child sees only PATH/HOME/LANG, the defaults and its own env")
}

func TestDialStdioCwd(t *testing.T) {
	t.Parallel()
	dialDir, serverDir := t.TempDir(), t.TempDir()

	s := sessDial(t, sessStdioServer(t, "demo"), session.DialOptions{Dir: dialDir})
	res := sessCall(t, s, "write_file", map[string]any{"name": "a.txt", "content": "A"})
	require.False(t, res.IsError, sessText(res))
	require.FileExists(t, filepath.Join(dialDir, "a.txt"))

	srv := sessStdioServer(t, "demo")
	srv.Cwd = serverDir
	s = sessDial(t, srv, session.DialOptions{Dir: dialDir})
	res = sessCall(t, s, "write_file", map[string]any{"name": "b.txt", "content": "B"})
	require.False(t, res.IsError, sessText(res))
	require.FileExists(t, filepath.Join(serverDir, "b.txt"), "the server's cwd wins")
	require.NoFileExists(t, filepath.Join(dialDir, "b.txt"))
}

// sessSilentServer is a stdio "server" that never answers initialize and
// writes its pid to a file.
func sessSilentServer(t *testing.T, name string) (*config.Server, string) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	return &config.Server{
		Name: name, Enabled: true, Type: config.TransportStdio,
		Command: "sh", Args: []string{"-c", `echo $$ > "$0"; exec sleep 30`, pidFile},
		SessionInitTimeout: sessSeconds(0.5),
	}, pidFile
}

func sessReadPID(t *testing.T, pidFile string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, sessWait, 10*time.Millisecond)
	return pid
}

func TestDialSessionInitTimeout(t *testing.T) {
	t.Parallel()
	t.Run("bounded", func(t *testing.T) {
		t.Parallel()
		srv, pidFile := sessSilentServer(t, "silent")
		_, err := session.Dial(sessCtx(t), srv, session.DialOptions{})
		sessRequireError(t, err, mcpflow.ETimeout, "MCP session initialization for server 'silent' timed out after 0.5s")
		require.False(t, sessAlive(sessReadPID(t, pidFile)), "the child is killed before Dial returns")
	})
	t.Run("unbounded, caller deadline", func(t *testing.T) {
		t.Parallel()
		srv, pidFile := sessSilentServer(t, "silent")
		srv.SessionInitTimeout = nil
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		_, err := session.Dial(ctx, srv, session.DialOptions{})
		sessRequireError(t, err, mcpflow.ETimeout, "MCP session initialization for server 'silent' timed out")
		require.False(t, sessAlive(sessReadPID(t, pidFile)))
	})
}

func TestDialFailures(t *testing.T) {
	t.Parallel()
	t.Run("missing command", func(t *testing.T) {
		t.Parallel()
		srv := &config.Server{Name: "ghost", Type: config.TransportStdio, Command: filepath.Join(t.TempDir(), "nope")}
		_, err := session.Dial(sessCtx(t), srv, session.DialOptions{})
		sessRequireError(t, err, mcpflow.EUpstream, "MCP server 'ghost' could not start its stdio process")
	})
	t.Run("process exits", func(t *testing.T) {
		t.Parallel()
		srv := &config.Server{Name: "quitter", Type: config.TransportStdio, Command: "true", SessionInitTimeout: sessSeconds(10)}
		_, err := session.Dial(sessCtx(t), srv, session.DialOptions{})
		sessRequireError(t, err, mcpflow.EUpstream, "MCP server 'quitter' connection failed")
	})
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		for _, transport := range []string{config.TransportSSE, config.TransportHTTP} {
			srv := sessRemoteServer("down", transport, "http://"+testenv.FreeAddr(t)+"/mcp")
			srv.Headers = map[string]string{"Authorization": "Bearer SECRET-TOKEN"}
			_, err := session.Dial(sessCtx(t), srv, session.DialOptions{})
			sessRequireError(t, err, mcpflow.EUpstream, "MCP server 'down' connection failed")
			require.NotContains(t, err.Error(), "SECRET-TOKEN")
		}
	})
	t.Run("no url", func(t *testing.T) {
		t.Parallel()
		_, err := session.Dial(sessCtx(t), &config.Server{Name: "nourl", Type: config.TransportHTTP}, session.DialOptions{})
		sessRequireError(t, err, mcpflow.EInvalid, "MCP server 'nourl' with http transport requires 'url' field")
	})
}

func TestSessionStdioProcessExit(t *testing.T) {
	t.Parallel()
	s := sessDial(t, sessStdioServer(t, "demo"), session.DialOptions{})
	require.NoError(t, syscall.Kill(s.PID(), syscall.SIGKILL))
	select {
	case <-s.Done():
	case <-time.After(sessWait):
		t.Fatal("Done not closed after the server exited")
	}
	_, err := s.CallTool(sessCtx(t), "echo", map[string]any{"message": "x"}, nil)
	require.True(t, session.IsDisconnect(err), "error: %v", err)
	t.Logf("disconnect: %v", err)
	require.Equal(t, mcpflow.EUpstream, mcpflow.ErrorCode(err))
	require.Contains(t, mcpflow.ErrorMessage(err), "server 'demo'")
	require.NoError(t, s.Close())
}

// sessHeaderKey carries a per-request credential through the context.
type sessHeaderKey struct{}

func TestSessionHeaders(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{config.TransportSSE, config.TransportHTTP} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var calls, streams []http.Header
			url, _ := testenv.DemoInProcess(t, transport, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(body))
					mu.Lock()
					switch {
					case r.Method == http.MethodGet:
						streams = append(streams, r.Header.Clone())
					case bytes.Contains(body, []byte(`"tools/call"`)):
						calls = append(calls, r.Header.Clone())
					}
					mu.Unlock()
					next.ServeHTTP(w, r)
				})
			})
			srv := sessRemoteServer("demo", transport, url)
			srv.Headers = map[string]string{"X-Static": "static", "x-api-key": "static-key"}
			o := session.DialOptions{Headers: func(ctx context.Context) map[string]string {
				user, _ := ctx.Value(sessHeaderKey{}).(string)
				return map[string]string{"X-API-KEY": "key-of-" + user, "X-Request-User": user}
			}}
			s, err := session.Dial(context.WithValue(sessCtx(t), sessHeaderKey{}, "dialer"), srv, o)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })

			_, err = s.CallTool(context.WithValue(sessCtx(t), sessHeaderKey{}, "alice"), "echo", map[string]any{"message": "x"}, nil)
			require.NoError(t, err)

			mu.Lock()
			defer mu.Unlock()
			require.Len(t, calls, 1)
			h := calls[0]
			require.Equal(t, []string{"static"}, h.Values("X-Static"))
			require.Equal(t, []string{"key-of-alice"}, h.Values("X-Api-Key"), "the per-request header replaces the static one, whatever its case")
			require.Equal(t, []string{"alice"}, h.Values("X-Request-User"))
			if transport == config.TransportSSE {
				require.NotEmpty(t, streams)
				require.Equal(t, []string{"key-of-dialer"}, streams[0].Values("X-Api-Key"), "the SSE stream is opened with the Dial context's headers")
				require.Equal(t, []string{"static"}, streams[0].Values("X-Static"))
			}
		})
	}
}

func TestSessionJSONRPCErrors(t *testing.T) {
	t.Parallel()
	// Inject a -32602 answer for add with a non-numeric b; everything else
	// reaches the real demo server.
	url, _ := testenv.DemoInProcess(t, config.TransportHTTP, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name      string         `json:"name"`
					Arguments map[string]any `json:"arguments"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" && msg.Params.Name == "add" {
				if _, isString := msg.Params.Arguments["b"].(string); isString {
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":{"code":-32602,"message":"b must be a number"}}`))
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	s := sessDial(t, sessRemoteServer("demo", config.TransportHTTP, url), session.DialOptions{})

	_, err := s.CallTool(sessCtx(t), "add", map[string]any{"a": 1, "b": "two"}, nil)
	sessRequireError(t, err, mcpflow.EInvalid, "MCP tool 'add' on server 'demo' rejected the request: b must be a number")
	require.False(t, session.IsDisconnect(err))

	// mcp-go answers an unknown tool with -32602 "tool '…' not found".
	_, err = s.CallTool(sessCtx(t), "missing", nil, nil)
	sessRequireError(t, err, mcpflow.ENotFound, "MCP tool 'missing' not found on server 'demo'")

	require.Equal(t, map[string]any{"sum": 3.0}, sessStructured(t, sessCall(t, s, "add", map[string]any{"a": 1, "b": 2})))
}

func TestSessionCallMeta(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var metas []map[string]any
	url, _ := testenv.DemoInProcess(t, config.TransportHTTP, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Meta map[string]any `json:"_meta"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				mu.Lock()
				metas = append(metas, msg.Params.Meta)
				mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	})
	s := sessDial(t, sessRemoteServer("demo", config.TransportHTTP, url), session.DialOptions{})
	meta := map[string]any{"headers": map[string]any{"Authorization": "Bearer x"}}
	_, err := s.CallTool(sessCtx(t), "echo", map[string]any{"message": "m"}, meta)
	require.NoError(t, err)
	_, err = s.CallTool(sessCtx(t), "echo", map[string]any{"message": "m"}, nil)
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, metas, 2)
	// 2026-07-28 (the demo server speaks it): every request carries the
	// revision, mcpflow's capabilities and identity beside the call's own.
	envelope := []string{"io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/protocolVersion"}
	require.Equal(t, "2026-07-28", metas[0]["io.modelcontextprotocol/protocolVersion"])
	require.Equal(t, map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
		metas[0]["io.modelcontextprotocol/clientCapabilities"])
	require.Equal(t, meta["headers"], metas[0]["headers"])
	require.ElementsMatch(t, append([]string{"headers"}, envelope...), slices.Collect(maps.Keys(metas[0])))
	require.ElementsMatch(t, envelope, slices.Collect(maps.Keys(metas[1])), "no call meta: the envelope alone")
}

func TestSessionSSEStreamLost(t *testing.T) {
	t.Parallel()
	url, closeSessions := testenv.DemoInProcess(t, config.TransportSSE, nil)
	s := sessDial(t, sessRemoteServer("demo", config.TransportSSE, url), session.DialOptions{})
	sessCall(t, s, "echo", map[string]any{"message": "x"})

	closeSessions() // the server ends the stream
	select {
	case <-s.Done():
	case <-time.After(sessWait):
		t.Fatal("Done not closed after the SSE stream ended")
	}
	_, err := s.CallTool(sessCtx(t), "echo", map[string]any{"message": "x"}, nil)
	require.True(t, session.IsDisconnect(err), "error: %v", err)
	t.Logf("disconnect: %v", err)
}

func TestIsDisconnect(t *testing.T) {
	t.Parallel()
	require.False(t, session.IsDisconnect(nil))
	require.False(t, session.IsDisconnect(context.DeadlineExceeded))
	require.False(t, session.IsDisconnect(mcpflow.Errorf(mcpflow.ETimeout, "timed out")))
	require.True(t, session.IsDisconnect(io.ErrUnexpectedEOF))
	require.True(t, session.IsDisconnect(errors.Join(errors.New("read"), syscall.ECONNRESET)))
}

// The function of mcpflow.WithBeforeSend runs before the tool call leaves;
// when it fails, nothing is sent and its error comes back.
func TestSessionBeforeSend(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	url, _ := testenv.DemoInProcess(t, config.TransportHTTP, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				mu.Lock()
				calls++
				mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	})
	s := sessDial(t, sessRemoteServer("demo", config.TransportHTTP, url), session.DialOptions{})
	refused := errors.New("marker not recorded")
	_, err := s.CallTool(mcpflow.WithBeforeSend(sessCtx(t), func(context.Context) error { return refused }), "echo", map[string]any{"message": "m"}, nil)
	require.ErrorIs(t, err, refused)
	mu.Lock()
	require.Zero(t, calls, "a refused call is not sent")
	mu.Unlock()

	ran := 0
	_, err = s.CallTool(mcpflow.WithBeforeSend(sessCtx(t), func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		require.Zero(t, calls, "the function runs before the call is sent")
		ran++
		return nil
	}), "echo", map[string]any{"message": "m"}, nil)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, ran)
	require.Equal(t, 1, calls)
}

// TestSessionParamHeaders: in 2026-07-28 a call of a tool whose input
// schema binds a parameter to a header (x-mcp-header) carries that
// Mcp-Param-* header with the argument's value, which the server (mcp-go,
// which checks it) accepts; a call of a tool without bindings carries none.
func TestSessionParamHeaders(t *testing.T) {
	t.Parallel()
	s := server.NewMCPServer("headers", "1.0.0", server.WithToolCapabilities(false))
	answer := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	s.AddTool(mcp.NewToolWithRawSchema("region_call", "bound", json.RawMessage(
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"q":{"type":"string"}},"required":["region"]}`)), answer)
	s.AddTool(mcp.NewTool("plain_call", mcp.WithString("q")), answer)
	var mu sync.Mutex
	seen := map[string]http.Header{} // tool → the headers of its call
	h := server.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
			mu.Lock()
			seen[msg.Params.Name] = r.Header.Clone()
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	sess := sessDial(t, sessRemoteServer("h", config.TransportHTTP, ts.URL+"/mcp"), session.DialOptions{})
	require.True(t, sess.Modern())
	_, err := sess.ListTools(sessCtx(t))
	require.NoError(t, err)
	require.Equal(t, "ok", sessText(sessCall(t, sess, "region_call", map[string]any{"region": "eu-west", "q": "x"})))
	require.Equal(t, "ok", sessText(sessCall(t, sess, "plain_call", map[string]any{"q": "x"})))

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "eu-west", seen["region_call"].Get(mcp.HeaderParamPrefix+"Region"))
	for k := range seen["plain_call"] {
		require.False(t, strings.HasPrefix(k, mcp.HeaderParamPrefix), "a tool without bindings gets no %s header", k)
	}
}
