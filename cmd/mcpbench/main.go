// Command mcpbench compares ordinary MCP tool calls through mcpflow's HTTP
// API and its MCP endpoint with direct mcp-go calls on the same upstream,
// side by side in one run (make bench):
//
//   - direct-http:   an mcp-go client → demo-mcp over streamable HTTP
//   - mcpflow-http:  HTTP API → mcpflow runtime (shared session) → the same demo-mcp
//   - mcpflow-mcp-http: an mcp-go client → mcpflow's MCP endpoint
//     (/mcp/threads/…) → the same runtime → the same demo-mcp
//   - mcpflow-mcp-raw-*: the same endpoint and session, called with one
//     plain POST per call as mcpflow-* are (no client library): the
//     server side of the MCP path alone
//   - direct-stdio:  an mcp-go client → a demo-mcp stdio child
//   - direct-*-default: the same with mcp-go's default protocol (2026-07-28)
//   - floor-*:       a bare net/http handler in front of the direct client
//   - mcpflow-stdio: HTTP API → mcpflow runtime (pooled stdio session) → a demo-mcp child
//   - mcpflow-mcp-stdio: MCP endpoint → mcpflow runtime (pooled stdio session) → a demo-mcp child
//
// Every round runs every target back to back, rotating the order; ratios are
// taken within a round and the median over rounds is printed. Direct
// clients pin protocol 2025-11-25, the revision mcpflow speaks upstream, so
// both sides put the same bytes on the upstream wire.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpclient"
	"github.com/mcpflow/mcpflow/mcpserver"
	"github.com/mcpflow/mcpflow/store"
)

const benchToken = "bench-user-token"

func main() {
	rounds := flag.Int("rounds", 5, "rounds")
	n := flag.Int("n", 2000, "calls per target per round")
	warmup := flag.Int("warmup", 200, "warm-up calls per target per round")
	demo := flag.String("demo", "bin/demo-mcp", "path of the demo-mcp binary")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.StringVar(&only, "only", "", "comma-separated targets to run (default: all)")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(*rounds, *n, *warmup, *demo); err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

var only string

type target struct {
	name string
	call func(ctx context.Context) error
}

func run(rounds, n, warmup int, demoBin string) error {
	ctx := context.Background()
	demoBin, err := filepath.Abs(demoBin)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "mcpbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The upstream: one demo-mcp over streamable HTTP.
	upstream, stopUpstream, err := startDemoHTTP(demoBin)
	if err != nil {
		return err
	}
	defer stopUpstream()

	// mcpflow: store + runtime + API (REST and MCP endpoint) on a loopback
	// listener.
	ext := fmt.Sprintf(`{"mcpServers": {
  "demo": {"type": "http", "url": %q},
  "demostdio": {"type": "stdio", "command": %q, "args": ["--transport", "stdio"]}
}}`, upstream+"/mcp", demoBin)
	extPath := filepath.Join(dir, "extensions_config.json")
	if err := os.WriteFile(extPath, []byte(ext), 0o600); err != nil {
		return err
	}
	exts, err := config.LoadExtensions(extPath, nil)
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, store.BackendSQLite, filepath.Join(dir, "mcpflow.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := mcpclient.NewRuntime(mcpclient.Options{ExtensionsPath: extPath, Initial: exts,
		WorkspaceRoot: filepath.Join(dir, "ws"), Logger: quiet})
	defer rt.Close()
	auth, err := api.NewAuthenticator(api.AuthConfig{Users: []api.UserToken{{UserID: "bench", Token: benchToken}}})
	if err != nil {
		return err
	}
	mcpSrv := mcpserver.New(mcpserver.Options{Tools: rt, Sessions: db, Events: db, Logger: quiet})
	defer mcpSrv.Stop()
	srv := api.New(api.Options{Auth: auth, Threads: db, Tools: rt, MCP: mcpSrv, Logger: quiet})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler()}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	base := "http://" + ln.Addr().String()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

	// Direct clients.
	directHTTP, err := client.NewStreamableHttpClient(upstream+"/mcp", transport.WithHTTPBasicClient(hc))
	if err != nil {
		return err
	}
	if err := initialize(ctx, directHTTP); err != nil {
		return fmt.Errorf("direct http: %w", err)
	}
	defer directHTTP.Close()
	directStdio, err := client.NewStdioMCPClientWithOptions(demoBin, nil, []string{"--transport", "stdio"})
	if err != nil {
		return err
	}
	if err := initialize(ctx, directStdio); err != nil {
		return fmt.Errorf("direct stdio: %w", err)
	}
	defer directStdio.Close()

	// mcp-go with its defaults (protocol 2026-07-28, discovery probe): what
	// an agent developer gets without pinning a protocol.
	defaultHTTP, err := client.NewStreamableHttpClient(upstream+"/mcp", transport.WithHTTPBasicClient(hc))
	if err != nil {
		return err
	}
	if err := initializeDefault(ctx, defaultHTTP); err != nil {
		return fmt.Errorf("default http: %w", err)
	}
	defer defaultHTTP.Close()
	defaultStdio, err := client.NewStdioMCPClientWithOptions(demoBin, nil, []string{"--transport", "stdio"})
	if err != nil {
		return err
	}
	if err := initializeDefault(ctx, defaultStdio); err != nil {
		return fmt.Errorf("default stdio: %w", err)
	}
	defer defaultStdio.Close()

	// mcpflow's MCP endpoint: an mcp-go client pinned to 2025-11-25 like
	// the direct ones, with the user's token, on the REST calls' thread.
	// One client (one MCP session) per target.
	viaMCP := func() (*client.Client, error) {
		tr, err := transport.NewStreamableHTTP(base+"/mcp/threads/bench-thread", transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + benchToken}))
		if err != nil {
			return nil, err
		}
		c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
		return c, initialize(ctx, c)
	}
	mcpHTTP, err := viaMCP()
	if err != nil {
		return fmt.Errorf("mcp endpoint http: %w", err)
	}
	defer mcpHTTP.Close()
	mcpStdio, err := viaMCP()
	if err != nil {
		return fmt.Errorf("mcp endpoint stdio: %w", err)
	}
	defer mcpStdio.Close()

	args := map[string]any{"message": "hello"}
	callTool := func(c *client.Client, tool string) func(context.Context) error {
		return func(ctx context.Context) error {
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error")
			}
			return err
		}
	}
	direct := func(c *client.Client) func(context.Context) error { return callTool(c, "echo") }
	// postRaw is an agent's call without a client library: one POST of
	// body with headers, answered 200 with ok in the body.
	postRaw := func(url string, body, ok []byte, headers func(http.Header)) func(context.Context) error {
		return func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			headers(req.Header)
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !bytes.Contains(b, ok) {
				return fmt.Errorf("status %d: %s", resp.StatusCode, b)
			}
			return nil
		}
	}
	// post is a REST call: the call body, answered with is_error false.
	post := func(url, token string) func(context.Context) error {
		return postRaw(url, []byte(`{"arguments":{"message":"hello"}}`), []byte(`"is_error":false`), func(h http.Header) {
			if token != "" {
				h.Set("Authorization", "Bearer "+token)
			}
		})
	}
	viaAPI := func(tool string) func(context.Context) error {
		return post(base+"/api/threads/bench-thread/tools/"+tool+"/call", benchToken)
	}
	// viaMCPRaw is the MCP endpoint called the way post calls the REST
	// API: one POST of a tools/call message on the mcp-go client's session,
	// without a client library, so that mcp/REST of the raw pair is the
	// server side alone.
	viaMCPRaw := func(session *client.Client, tool string) func(context.Context) error {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"message":"hello"}}}`)
		return postRaw(base+"/mcp/threads/bench-thread", body, []byte(`"isError":false`), func(h http.Header) {
			h.Set("Authorization", "Bearer "+benchToken)
			h.Set("Accept", "application/json, text/event-stream")
			h.Set("Mcp-Session-Id", session.GetSessionId())
			h.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
		})
	}
	// The floor of any proxy built from net/http: a bare net/http handler
	// that calls the direct client. floor − direct is what one HTTP hop in
	// front of a blocking upstream call costs on this machine.
	floorLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	floorClients := map[string]*client.Client{"http": directHTTP, "stdio": directStdio}
	floorSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c := floorClients[strings.TrimPrefix(r.URL.Path, "/")]
		res, err := c.CallTool(r.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: args}})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"content": res.Content, "is_error": res.IsError})
	})}
	go func() { _ = floorSrv.Serve(floorLn) }()
	defer floorSrv.Close()
	viaFloor := func(path string) func(context.Context) error {
		return post("http://"+floorLn.Addr().String()+"/"+path, "")
	}

	targets := []target{
		{"direct-http", direct(directHTTP)},
		{"direct-http-default", direct(defaultHTTP)},
		{"floor-http", viaFloor("http")},
		{"mcpflow-http", viaAPI("demo_echo")},
		{"mcpflow-mcp-http", callTool(mcpHTTP, "demo_echo")},
		{"mcpflow-mcp-raw-http", viaMCPRaw(mcpHTTP, "demo_echo")},
		{"direct-stdio", direct(directStdio)},
		{"direct-stdio-default", direct(defaultStdio)},
		{"floor-stdio", viaFloor("stdio")},
		{"mcpflow-stdio", viaAPI("demostdio_echo")},
		{"mcpflow-mcp-stdio", callTool(mcpStdio, "demostdio_echo")},
		{"mcpflow-mcp-raw-stdio", viaMCPRaw(mcpStdio, "demostdio_echo")},
	}

	if only != "" {
		var keep []target
		for _, t := range targets {
			if strings.Contains(","+only+",", ","+t.name+",") {
				keep = append(keep, t)
			}
		}
		targets = keep
	}
	lat := map[string][][]time.Duration{}
	rps := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		order := append([]target(nil), targets...)
		for i := 0; i < r%len(order); i++ {
			order = append(order[1:], order[0])
		}
		for _, t := range order {
			for i := 0; i < warmup; i++ {
				if err := t.call(ctx); err != nil {
					return fmt.Errorf("%s warm-up: %w", t.name, err)
				}
			}
			ds := make([]time.Duration, n)
			start := time.Now()
			for i := 0; i < n; i++ {
				t0 := time.Now()
				if err := t.call(ctx); err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				ds[i] = time.Since(t0)
			}
			rps[t.name] = append(rps[t.name], float64(n)/time.Since(start).Seconds())
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			lat[t.name] = append(lat[t.name], ds)
		}
	}

	fmt.Printf("ordinary tool call (echo), 1 caller, %d rounds × %d calls (+%d warm-up); median (min–max) over rounds\n\n", rounds, n, warmup)
	fmt.Printf("| target | p50 µs | p99 µs | calls/s |\n|---|---|---|---|\n")
	for _, t := range targets {
		fmt.Printf("| %s | %s | %s | %s |\n", t.name,
			stat(perRound(lat[t.name], 0.50)), stat(perRound(lat[t.name], 0.99)), statF(rps[t.name]))
	}
	// ratios returns the per-round p50 and p99 ratios a / b; ok is false
	// when either was not run (-only).
	ratios := func(a, b string) (r50, r99 []float64, ok bool) {
		if len(lat[a]) == 0 || len(lat[b]) == 0 {
			return nil, nil, false
		}
		for i := range lat[a] {
			r50 = append(r50, float64(pct(lat[a][i], 0.50))/float64(pct(lat[b][i], 0.50)))
			r99 = append(r99, float64(pct(lat[a][i], 0.99))/float64(pct(lat[b][i], 0.99)))
		}
		return r50, r99, true
	}
	fmt.Printf("\n| ratio (mcpflow / direct, per round) | p50 | p99 |\n|---|---|---|\n")
	for _, pair := range [][2]string{{"mcpflow-http", "direct-http"}, {"mcpflow-http", "direct-http-default"},
		{"floor-http", "direct-http"}, {"mcpflow-http", "floor-http"},
		{"mcpflow-mcp-http", "direct-http"}, {"mcpflow-mcp-http", "mcpflow-http"}, {"mcpflow-mcp-raw-http", "mcpflow-http"},
		{"mcpflow-stdio", "direct-stdio"}, {"mcpflow-stdio", "direct-stdio-default"},
		{"floor-stdio", "direct-stdio"}, {"mcpflow-stdio", "floor-stdio"},
		{"mcpflow-mcp-stdio", "direct-stdio"}, {"mcpflow-mcp-stdio", "mcpflow-stdio"}, {"mcpflow-mcp-raw-stdio", "mcpflow-stdio"}} {
		if r50, r99, ok := ratios(pair[0], pair[1]); ok {
			fmt.Printf("| %s / %s | %s | %s |\n", pair[0], pair[1], statR(r50), statR(r99))
		}
	}
	// The MCP endpoint's budget: within 1.1× of the REST call at p50.
	sep := "\n"
	for _, tr := range []string{"http", "stdio"} {
		if r50, _, ok := ratios("mcpflow-mcp-"+tr, "mcpflow-"+tr); ok {
			fmt.Printf("%sMCP endpoint / REST (%s), p50 median over rounds: %s (target ≤ 1.10)\n", sep, tr, statR(r50))
			sep = ""
		}
	}
	return nil
}

func initialize(ctx context.Context, c *client.Client) error {
	if err := c.Start(ctx); err != nil {
		return err
	}
	_, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo:      mcp.Implementation{Name: "mcpbench", Version: "1"},
	}})
	return err
}

func initializeDefault(ctx context.Context, c *client.Client) error {
	if err := c.Start(ctx); err != nil {
		return err
	}
	_, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "mcpbench-default", Version: "1"},
	}})
	return err
}

// startDemoHTTP runs demo-mcp over streamable HTTP and returns its base URL.
func startDemoHTTP(bin string) (string, func(), error) {
	cmd := exec.Command(bin, "--transport", "http", "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start %s (run make build first): %w", bin, err)
	}
	stop := func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if _, url, ok := strings.Cut(sc.Text(), "demo-mcp listening on "); ok {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return strings.TrimSpace(url), stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("demo-mcp did not report its address")
}

func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func perRound(rounds [][]time.Duration, p float64) []float64 {
	var out []float64
	for _, ds := range rounds {
		out = append(out, float64(pct(ds, p).Microseconds()))
	}
	return out
}

func median(v []float64) (med, lo, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

func stat(v []float64) string {
	m, lo, hi := median(v)
	return fmt.Sprintf("%.0f (%.0f–%.0f)", m, lo, hi)
}

func statF(v []float64) string { return stat(v) }

func statR(v []float64) string {
	m, lo, hi := median(v)
	return fmt.Sprintf("%.2f (%.2f–%.2f)", m, lo, hi)
}
