package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	mcpc "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
	"github.com/mcpflow/mcpflow/workflows"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// benchEnv is what every phase shares: a temp directory, one Temporal dev
// server (fresh SQLite file), one demo MCP server over streamable HTTP, a
// Temporal client and an MCP client for the demo's job_stats.
type benchEnv struct {
	opts     options
	dir      string
	temporal *proc
	tAddr    string
	metrics  string // the dev server's Prometheus endpoint
	demo     *proc
	demoURL  string // base URL; the MCP endpoint is demoURL+"/mcp"
	tc       client.Client
	stats    *mcpc.Client
	sdkLog   *os.File
}

// startEnv starts the dev server and the demo server. close stops them;
// it is safe on a half-started env.
func startEnv(ctx context.Context, o options, dir string) (*benchEnv, error) {
	e := &benchEnv{opts: o, dir: dir}
	ports, err := benchproc.FreePorts(3)
	if err != nil {
		return e, err
	}
	e.tAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	e.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[2])
	args := []string{"server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(ports[0]), "--http-port", strconv.Itoa(ports[1]), "--metrics-port", strconv.Itoa(ports[2]),
		"--db-filename", filepath.Join(dir, "temporal.db"),
		"--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
		"--dynamic-config-value", "system.enableActivityEagerExecution=true",
		"--log-level", "error"}
	for _, sa := range workflows.SearchAttributeNames {
		args = append(args, "--search-attribute", sa+"=Keyword")
	}
	e.temporal, err = startProc("temporal", filepath.Join(dir, "temporal.log"), nil, nil, o.temporalBin, args...)
	if err != nil {
		return e, fmt.Errorf("%w (run `make tools` to build bin/temporal)", err)
	}
	e.sdkLog, err = os.Create(filepath.Join(dir, "sdk-client.log"))
	if err != nil {
		return e, err
	}
	e.tc, err = client.NewLazyClient(client.Options{HostPort: e.tAddr, Namespace: "default",
		Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(e.sdkLog, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	if err != nil {
		return e, err
	}
	if err := e.waitTemporal(ctx); err != nil {
		return e, err
	}

	// The demo server prints "demo-mcp listening on URL" once it listens.
	urlc := make(chan string, 1)
	watch := func(line string) {
		if _, url, ok := strings.Cut(line, "demo-mcp listening on "); ok {
			select {
			case urlc <- strings.TrimSpace(url):
			default:
			}
		}
	}
	e.demo, err = startProc("demo-mcp", filepath.Join(dir, "demo-mcp.log"), watch, nil, o.demoBin,
		"--transport", "http", "--addr", "127.0.0.1:0")
	if err != nil {
		return e, fmt.Errorf("%w (run `make build`)", err)
	}
	select {
	case e.demoURL = <-urlc:
	case <-e.demo.Done():
		return e, fmt.Errorf("demo-mcp exited: %s", e.demo.Tail(10))
	case <-time.After(15 * time.Second):
		return e, errors.New("demo-mcp did not report its address within 15s")
	case <-ctx.Done():
		return e, ctx.Err()
	}
	e.stats, err = dialDemo(ctx, e.demoURL+"/mcp", "taskbench-stats")
	if err != nil {
		return e, err
	}
	return e, e.checkDemo(ctx)
}

// checkDemo makes sure the demo server knows finish_at_status_call (the
// task shapes need it): a job that must end at its second status call is
// still running at its first.
func (e *benchEnv) checkDemo(ctx context.Context) error {
	call := func(name string, args map[string]any) (map[string]any, error) {
		res, err := e.stats.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		if res.IsError || json.Unmarshal(b, &out) != nil {
			return nil, fmt.Errorf("%s answered isError or no structured content", name)
		}
		return out, nil
	}
	sub, err := call("submit_job", map[string]any{"duration_seconds": 0, "finish_at_status_call": 2, "label": "taskbench-probe"})
	if err != nil {
		return err
	}
	st, err := call("get_job_status", map[string]any{"task_id": sub["task_id"]})
	if err != nil {
		return err
	}
	if st["status"] != "running" {
		return fmt.Errorf("%s does not know submit_job's finish_at_status_call (status %v at the first call): run `make build`", e.opts.demoBin, st["status"])
	}
	return nil
}

// serverActions reads the dev server's own "action" counter (Prometheus
// text on its metrics port) for namespace default, by action_type.
func (e *benchEnv) serverActions(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", e.metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the dev server's metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		labels, ok := strings.CutPrefix(line, "action{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(labels, "} ")
		if !ok || !strings.Contains(labels, `namespace="default"`) {
			continue
		}
		_, typ, _ := strings.Cut(labels, `action_type="`)
		typ, _, _ = strings.Cut(typ, `"`)
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err == nil {
			out[typ] += v
		}
	}
	return out, nil
}

func (e *benchEnv) waitTemporal(ctx context.Context) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := e.tc.CheckHealth(hctx, &client.CheckHealthRequest{})
		cancel()
		if err == nil {
			return nil
		}
		if e.temporal.Exited() {
			return fmt.Errorf("temporal dev server exited: %s", e.temporal.Tail(20))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("temporal dev server not healthy on %s: %w", e.tAddr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (e *benchEnv) close() {
	if e.stats != nil {
		_ = e.stats.Close()
	}
	if e.tc != nil {
		e.tc.Close()
	}
	e.demo.Stop(5 * time.Second)
	e.temporal.Stop(15 * time.Second)
	if e.sdkLog != nil {
		_ = e.sdkLog.Close()
	}
}

// mcpHTTPClient matches mcpflow's upstream HTTP client: enough idle
// connections per host for concurrent callers.
var mcpHTTPClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: t}
}()

// dialDemo opens an MCP session to the demo server speaking protocol
// 2025-11-25, the revision mcpflow speaks upstream.
func dialDemo(ctx context.Context, url, name string) (*mcpc.Client, error) {
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(mcpHTTPClient))
	if err != nil {
		return nil, err
	}
	c := mcpc.NewClient(tr, mcpc.WithProtocolVersion(mcp.ProtocolVersion20251125))
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("start MCP client: %w", err)
	}
	_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo:      mcp.Implementation{Name: name, Version: "1"},
	}})
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("initialize MCP session with %s: %w", url, err)
	}
	return c, nil
}

// jobStat is one demo job as job_stats reports it.
type jobStat struct {
	Status      string `json:"status"`
	Label       string `json:"label"`
	StatusCalls int    `json:"status_calls"`
	CancelCalls int    `json:"cancel_calls"`
	Submits     int    `json:"submits"` // submit calls answered with this job (a repeated idempotency key answers the same job)
}

// jobStats returns the demo's jobs by label.
func (e *benchEnv) jobStats(ctx context.Context) (map[string]jobStat, error) {
	res, err := e.stats.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "job_stats"}})
	if err != nil {
		return nil, fmt.Errorf("job_stats: %w", err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, err
	}
	var out struct {
		Jobs map[string]jobStat `json:"jobs"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode job_stats: %w", err)
	}
	byLabel := make(map[string]jobStat, len(out.Jobs))
	for _, j := range out.Jobs {
		if j.Label != "" {
			byLabel[j.Label] = j
		}
	}
	return byLabel, nil
}
