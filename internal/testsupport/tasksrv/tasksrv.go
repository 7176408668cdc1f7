// Package tasksrv is an MCP server with native MCP Tasks (protocol
// 2025-11-25) for tests: mcp-go's own task runtime served over streamable
// HTTP on a loopback httptest server, with tools whose tasks complete,
// fail, report isError, run until cancelled or support tasks optionally,
// and switches that make tasks expire, carry a pollInterval or come back
// malformed.
//
// mcp-go v1.2.1 hands task handlers the tools/call request's context,
// which ends once the CreateTaskResult is written (mark3labs/mcp-go#897),
// so the handlers here never use their context: they wait on timers and on
// the server's own stop channel.
//
// Only tests import it; it must not import mcpflow's packages.
package tasksrv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Tool names.
const (
	// ToolReport (taskSupport "required") completes after delay_ms
	// (default 100) with structuredContent {"topic", "pages":
	// 9007199254740993} and a text block, or with a text block only when
	// "text_only" is true.
	ToolReport = "report"
	// ToolExplode (taskSupport "required") fails after delay_ms with the
	// Go error "the reactor melted": tasks/result answers -32603.
	ToolExplode = "explode"
	// ToolRefuse (taskSupport "required") completes after delay_ms with an
	// isError result "quota exceeded" (mcp-go stores it as completed).
	ToolRefuse = "refuse"
	// ToolForever (taskSupport "required") runs until the server closes.
	ToolForever = "forever"
	// ToolMaybe (taskSupport "optional") answers "maybe: <word>" at once,
	// as a task or as a plain call.
	ToolMaybe = "maybe"
	// ToolPlain has no task support; it echoes "plain: <word>".
	ToolPlain = "plain"
	// ToolBroken has no task support; its handler fails with the Go error
	// "the database is down", which mcp-go answers as the JSON-RPC error
	// -32603 (internal error): an upstream failure of one call.
	ToolBroken = "broken"
	// ToolChart (taskSupport "required") completes after delay_ms
	// (default 100) with three content blocks, an image (ChartPNG,
	// image/png) and two texts ("Chart of <title>" and ChartNote, which
	// has an annotation), and structuredContent {"title", "points":
	// 9007199254740993}; with "blocks_only" true, without
	// structuredContent.
	ToolChart = "chart"
	// ToolWrite (taskSupport "required"; AddWriteTool adds it) writes
	// content to the file name under the working directory after
	// delay_ms, and completes with the text "Wrote <absolute path>" and
	// the bare name.
	ToolWrite = "write"
)

// Pages is the exact number ToolReport's structuredContent carries (above
// 2^53: float64 would change it).
const Pages = "9007199254740993"

// ChartPNG is the image ToolChart answers (base64 of a 1×1 PNG), and
// ChartNote the text of its second text block, which has the annotation
// {"audience": ["user"], "priority": 0.5} (and characters JSON encoders
// like to escape).
const (
	ChartPNG  = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	ChartNote = "values < 10 & > 0 are \"small\""
)

// Server is a running task server.
type Server struct {
	// URL is the streamable HTTP endpoint.
	URL string
	// MCP is the mcp-go server (add tools to it for more cases).
	MCP *server.MCPServer

	http  *httptest.Server
	inner http.Handler
	stop  chan struct{}
	once  sync.Once

	mu       sync.Mutex
	ttl      int64 // > 0: the ttl set on every task-augmented tools/call
	poll     int64 // > 0: the pollInterval added to every task answered
	rewrites map[string]func(result map[string]any)
	counts   map[string]int
	metas    []map[string]any // _meta of every tools/call, in order
}

// Start starts a task server on a loopback port; it stops at cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	s := New()
	s.http = httptest.NewServer(s)
	s.URL = s.http.URL + "/mcp"
	t.Cleanup(s.Close)
	return s
}

// New returns a task server that is not listening: serve it with its
// ServeHTTP (Start does).
func New() *Server {
	s := &Server{stop: make(chan struct{}), rewrites: map[string]func(map[string]any){}, counts: map[string]int{}}
	s.MCP = server.NewMCPServer("tasksrv", "1.0.0",
		server.WithToolCapabilities(false),
		server.WithTaskCapabilities(true, true, true))
	s.addTools()
	s.inner = server.NewStreamableHTTPServer(s.MCP)
	return s
}

// Close stops the server and ends every task handler still running.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.stop)
		if s.http != nil {
			s.http.CloseClientConnections()
			s.http.Close()
		}
	})
}

// SetTTL makes every later task-augmented tools/call ask for ttl (the
// server then forgets the task that long after its creation, whatever its
// status: tasks/get answers -32602). 0 turns it off.
func (s *Server) SetTTL(ttl time.Duration) {
	s.mu.Lock()
	s.ttl = ttl.Milliseconds()
	s.mu.Unlock()
}

// SetPollInterval adds pollInterval (ms) to every task a tools/call,
// tasks/get or tasks/cancel answers with (mcp-go sets none). 0 turns it
// off.
func (s *Server) SetPollInterval(d time.Duration) {
	s.mu.Lock()
	s.poll = d.Milliseconds()
	s.mu.Unlock()
}

// Rewrite edits the result of every later answer to method before it
// leaves (nil removes the edit): how tests produce malformed answers.
// A tools/call result of a task holds the task under "task".
func (s *Server) Rewrite(method string, edit func(result map[string]any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if edit == nil {
		delete(s.rewrites, method)
		return
	}
	s.rewrites[method] = edit
}

// Count returns how many requests of method the server received.
func (s *Server) Count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[method]
}

// CallMetas returns the _meta of every tools/call received, in order (nil
// for a call without one).
func (s *Server) CallMetas() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.metas...)
}

// ServeHTTP serves the MCP endpoint, applying the switches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	inner := s.handler()
	if r.Method != http.MethodPost {
		inner.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	var msg map[string]any
	_ = json.Unmarshal(body, &msg)
	method, _ := msg["method"].(string)
	params, _ := msg["params"].(map[string]any)

	s.mu.Lock()
	s.counts[method]++
	ttl, poll, edit := s.ttl, s.poll, s.rewrites[method]
	if method == string(mcp.MethodToolsCall) {
		meta, _ := params["_meta"].(map[string]any)
		s.metas = append(s.metas, meta)
	}
	s.mu.Unlock()

	if task, ok := params["task"].(map[string]any); ok && method == string(mcp.MethodToolsCall) && ttl > 0 {
		task["ttl"] = ttl
		body, _ = json.Marshal(msg)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))

	switch method {
	case string(mcp.MethodToolsCall), string(mcp.MethodTasksGet), string(mcp.MethodTasksCancel):
	default:
		edit, poll = nil, 0
	}
	if edit == nil && poll <= 0 {
		inner.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	inner.ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		var b bytes.Buffer
		for _, line := range strings.SplitAfter(string(out), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				line = "data: " + string(rewrite([]byte(strings.TrimRight(data, "\r\n")), method, poll, edit)) + "\n"
			}
			b.WriteString(line)
		}
		out = b.Bytes()
	} else {
		out = rewrite(out, method, poll, edit)
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

// rewrite applies the pollInterval and the edit to one JSON-RPC response.
func rewrite(raw []byte, method string, poll int64, edit func(map[string]any)) []byte {
	var resp map[string]any
	if err := json.Unmarshal(raw, &resp); err != nil {
		return raw
	}
	result, ok := resp["result"].(map[string]any)
	if !ok {
		return raw
	}
	if poll > 0 {
		task := result
		if method == string(mcp.MethodToolsCall) {
			task, _ = result["task"].(map[string]any)
		}
		if task != nil {
			task["pollInterval"] = poll
		}
	}
	if edit != nil {
		edit(result)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return raw
	}
	return b
}

func (s *Server) addTools() {
	delay := mcp.WithNumber("delay_ms", mcp.Description("How long the task runs (ms, default 100)."))
	s.MCP.AddTaskTool(mcp.NewTool(ToolReport,
		mcp.WithDescription("Writes a report on a topic."),
		mcp.WithString("topic", mcp.Required()),
		mcp.WithBoolean("text_only"),
		delay,
		mcp.WithTaskSupport(mcp.TaskSupportRequired),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CreateTaskResult, error) {
		if !s.wait(req) {
			return nil, errors.New("server stopped")
		}
		topic := req.GetString("topic", "")
		res := &mcp.CreateTaskResult{Content: []mcp.Content{mcp.NewTextContent("Report on " + topic)}}
		if !req.GetBool("text_only", false) {
			b, _ := json.Marshal(topic)
			res.StructuredContent = json.RawMessage(`{"topic":` + string(b) + `,"pages":` + Pages + `}`)
		}
		return res, nil
	})
	s.MCP.AddTaskTool(mcp.NewTool(ToolChart,
		mcp.WithDescription("Draws a chart."),
		mcp.WithString("title", mcp.Required()),
		mcp.WithBoolean("blocks_only"),
		delay,
		mcp.WithTaskSupport(mcp.TaskSupportRequired),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CreateTaskResult, error) {
		if !s.wait(req) {
			return nil, errors.New("server stopped")
		}
		title := req.GetString("title", "")
		note := mcp.NewTextContent(ChartNote)
		note.Annotations = &mcp.Annotations{Audience: []mcp.Role{mcp.RoleUser}, Priority: ptr(0.5)}
		res := &mcp.CreateTaskResult{Content: []mcp.Content{
			mcp.NewImageContent(ChartPNG, "image/png"),
			mcp.NewTextContent("Chart of " + title),
			note,
		}}
		if !req.GetBool("blocks_only", false) {
			b, _ := json.Marshal(title)
			res.StructuredContent = json.RawMessage(`{"title":` + string(b) + `,"points":` + Pages + `}`)
		}
		return res, nil
	})
	s.MCP.AddTaskTool(mcp.NewTool(ToolExplode,
		mcp.WithDescription("Fails."), delay, mcp.WithTaskSupport(mcp.TaskSupportRequired),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CreateTaskResult, error) {
		s.wait(req)
		return nil, errors.New("the reactor melted")
	})
	s.MCP.AddTaskTool(mcp.NewTool(ToolRefuse,
		mcp.WithDescription("Answers a tool error."), delay, mcp.WithTaskSupport(mcp.TaskSupportRequired),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CreateTaskResult, error) {
		s.wait(req)
		return &mcp.CreateTaskResult{Content: []mcp.Content{mcp.NewTextContent("quota exceeded")}, IsError: true}, nil
	})
	s.MCP.AddTaskTool(mcp.NewTool(ToolForever,
		mcp.WithDescription("Runs until cancelled."), mcp.WithTaskSupport(mcp.TaskSupportRequired),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CreateTaskResult, error) {
		<-s.stop
		return nil, errors.New("server stopped")
	})
	s.MCP.AddTool(mcp.NewTool(ToolMaybe,
		mcp.WithDescription("Answers at once."), mcp.WithString("word"), mcp.WithTaskSupport(mcp.TaskSupportOptional),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("maybe: " + req.GetString("word", "")), nil
	})
	s.MCP.AddTool(mcp.NewTool(ToolPlain,
		mcp.WithDescription("No task support."), mcp.WithString("word"),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("plain: " + req.GetString("word", "")), nil
	})
	s.MCP.AddTool(mcp.NewTool(ToolBroken,
		mcp.WithDescription("Always fails with an internal error."),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("the database is down")
	})
}

// ForgetSessions makes the server forget every MCP session, as a restart
// would: from now on it validates session ids (mcp-go's stateful session
// manager), so a request with an earlier Mcp-Session-Id answers 404, and
// the tasks stay bound to the sessions that created them (mcp-go keeps
// them per session), so a new session's tasks/get of one answers -32602.
// Tasks keep running. Only for servers from Start.
func (s *Server) ForgetSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inner = server.NewStreamableHTTPServer(s.MCP, server.WithStateful(true))
}

func (s *Server) handler() http.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner
}

// AddWriteTool adds ToolWrite, which writes into the process's working
// directory: for a server run as a stdio subprocess in a workspace
// (cmd/tasksrv), never for one in the test process.
func (s *Server) AddWriteTool() {
	s.MCP.AddTaskTool(mcp.NewTool(ToolWrite,
		mcp.WithDescription("Writes a file."), mcp.WithString("name", mcp.Required()), mcp.WithString("content"),
		mcp.WithNumber("delay_ms"), mcp.WithTaskSupport(mcp.TaskSupportRequired),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CreateTaskResult, error) {
		if !s.wait(req) {
			return nil, errors.New("server stopped")
		}
		name := req.GetString("name", "")
		abs, err := filepath.Abs(name)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(abs, []byte(req.GetString("content", "")), 0o600); err != nil {
			return nil, err
		}
		return &mcp.CreateTaskResult{Content: []mcp.Content{
			mcp.NewTextContent("Wrote " + abs),
			mcp.NewTextContent("see " + filepath.Base(abs)),
		}}, nil
	})
}

// ServeStdio serves the server over stdin/stdout until stdin closes, then
// stops its task handlers.
func (s *Server) ServeStdio() error {
	defer s.Close()
	return server.ServeStdio(s.MCP)
}

// wait waits for the call's delay_ms (never for its context, see the
// package comment); false when the server stopped first.
func (s *Server) wait(req mcp.CallToolRequest) bool {
	t := time.NewTimer(time.Duration(req.GetFloat("delay_ms", 100)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.stop:
		return false
	}
}

// StartStateless is Start with mcp-go's stateless streamable HTTP
// (server.WithStateLess): the server mints no Mcp-Session-Id, so its tasks
// are bound to no session and any client session can read them, such as
// another process's, or one that replaced the session that created them.
// Start's server binds each task to the session whose tools/call created it
// (mcp-go's session isolation): another session's tasks/get of it answers
// -32602 "task not found".
func StartStateless(t testing.TB) *Server {
	t.Helper()
	s := New()
	s.inner = server.NewStreamableHTTPServer(s.MCP, server.WithStateLess(true))
	s.http = httptest.NewServer(s)
	s.URL = s.http.URL + "/mcp"
	t.Cleanup(s.Close)
	return s
}

// ToolGate (taskSupport "required"; AddGateTool adds it) runs until the
// test opens the gate, then completes like ToolReport ("Report on <topic>"
// and structuredContent {"topic", "pages": Pages}).
const ToolGate = "gate"

// AddGateTool adds ToolGate and returns the function that opens its gate:
// every gate task, running or started later, then completes at once.
// Opening twice does nothing more. Tests use it to end a task exactly when
// they want, never on a timer.
func (s *Server) AddGateTool() (open func()) {
	gate := make(chan struct{})
	var once sync.Once
	s.MCP.AddTaskTool(mcp.NewTool(ToolGate,
		mcp.WithDescription("Writes a report on a topic once the gate opens."),
		mcp.WithString("topic", mcp.Required()),
		mcp.WithTaskSupport(mcp.TaskSupportRequired),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CreateTaskResult, error) {
		select { // never the context: see the package comment
		case <-gate:
		case <-s.stop:
			return nil, errors.New("server stopped")
		}
		topic := req.GetString("topic", "")
		b, _ := json.Marshal(topic)
		return &mcp.CreateTaskResult{
			Content:           []mcp.Content{mcp.NewTextContent("Report on " + topic)},
			StructuredContent: json.RawMessage(`{"topic":` + string(b) + `,"pages":` + Pages + `}`),
		}, nil
	})
	return func() { once.Do(func() { close(gate) }) }
}

func ptr[T any](v T) *T { return &v }
