// Command mcpbench compares ordinary MCP tool calls through mcpflow's HTTP
// API and its MCP endpoint with direct mcp-go calls on the same upstream,
// side by side in one run (make bench), at 1 and at 16 concurrent callers:
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
//   - floor-proc-*:  the same handler as its own process (this executable
//     with -serve-floor), with its own direct clients: the floor of a proxy
//     run as users run mcpflow
//   - mcpflow-stdio: HTTP API → mcpflow runtime (pooled stdio session) → a demo-mcp child
//   - mcpflow-mcp-stdio: MCP endpoint → mcpflow runtime (pooled stdio session) → a demo-mcp child
//
// The mcpflow-* targets above run mcpflow's API inside this process: a
// floor that shares one scheduler with its client. With -mcpflow BIN (default
// bin/mcpflow) mcpflow also runs as users run it, in its own process
// (`mcpflow serve` with the access log on, a user token and SQLite; see
// deployed):
//
//   - mcpflow-proc-http, mcpflow-proc-stdio: one plain POST per call to
//     its REST API → the same demo-mcp over HTTP / its own stdio child
//   - mcpflow-proc-mcp-http, mcpflow-proc-mcp-stdio: an mcp-go client →
//     its MCP endpoint → the same
//   - mcpflow-proc-mcp26-http, mcpflow-proc-mcp26-stdio (and in process,
//     mcpflow-mcp26-*): the 2026-07-28 path, an mcp-go client with its
//     defaults (no session; per-request _meta and headers) → its MCP
//     endpoint → the same, which mcpflow speaks 2026-07-28 to as well
//     (demo-mcp offers it on both transports); the report compares it
//     with the peer (issue 25, point 6)
//
// and with -peer BIN the peer gateway TBXark/mcp-proxy runs the same way
// (peer-http, peer-stdio: an mcp-go client → the proxy → the same demo-mcp
// over HTTP / its own stdio child; see peer).
//
// Every round runs every target back to back, first with 1 caller, then
// with 16 (-callers), rotating the order each round; ratios are taken
// within a round and the median over rounds is printed. Direct clients pin
// protocol 2025-11-25, the revision the peer speaks upstream; mcpflow
// speaks the newest revision the demo server offers (2026-07-28) unless
// -upstream-protocol pins its upstream sessions (the servers'
// protocol_version): with -upstream-protocol 2025-11-25 both sides put the
// same bytes on the upstream wire. -profile DIR then takes a CPU profile of
// the separate mcpflow process under 16 callers on each of its targets.
package main

import (
	"bufio"
	"bytes"
	"context"
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpclient"
	"github.com/mcpflow/mcpflow/mcpserver"
	"github.com/mcpflow/mcpflow/store"
)

const benchToken = "bench-user-token"

// benchArgs are the echo tool's arguments on every path.
var benchArgs = map[string]any{"message": "hello"}

// options are the command's flags.
type options struct {
	rounds, n, warmup int
	callers           []int
	demo              string
	mcpflow           string // "" skips the mcpflow-proc-* targets
	peer              string // "" skips the peer-* targets
	profileDir        string
	profileSeconds    int
	profileCallers    int
	only              string
	workdir           string // "" is a temporary directory, removed at the end
	upstreamProtocol  string // the servers' protocol_version, "" for the newest offered
}

func main() {
	var o options
	flag.IntVar(&o.rounds, "rounds", 5, "rounds")
	flag.IntVar(&o.n, "n", 2000, "calls per target, round and number of callers")
	flag.IntVar(&o.warmup, "warmup", 200, "warm-up calls before each measured cell")
	callers := flag.String("callers", "1,16", "comma-separated numbers of concurrent callers sharing one client")
	flag.StringVar(&o.demo, "demo", "bin/demo-mcp", "path of the demo-mcp binary")
	flag.StringVar(&o.mcpflow, "mcpflow", "bin/mcpflow", "path of the mcpflow binary to run as its own process (mcpflow-proc-* targets; \"\" skips them)")
	flag.StringVar(&o.peer, "peer", "", "path of a TBXark/mcp-proxy binary (peer-* targets; \"\" skips them)")
	flag.StringVar(&o.profileDir, "profile", "", "after the rounds, write a CPU profile of the separate mcpflow process under load on each mcpflow-proc-* target to this directory (needs $"+EnvPprofAddr+" support in mcpflow)")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 10, "length of each -profile profile")
	flag.IntVar(&o.profileCallers, "profile-callers", 16, "concurrent callers while profiling")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this benchmark process (the in-process targets) to this file")
	flag.StringVar(&o.only, "only", "", "comma-separated targets to run (default: all)")
	flag.StringVar(&o.workdir, "workdir", "", "keep the configurations, databases and logs (mcpflow.log: its access log) of the run in this directory (default: a temporary one, removed)")
	flag.StringVar(&o.upstreamProtocol, "upstream-protocol", "", "pin the MCP revision mcpflow speaks to the demo servers (their protocol_version: 2025-11-25 or 2026-07-28; default: the newest they offer)")
	floorAddr := flag.String("serve-floor", "", "internal: serve the floor handler on this address (the floor-proc-* targets' process)")
	floorUpstream := flag.String("floor-upstream", "", "internal: the demo server's MCP URL for -serve-floor")
	flag.Parse()
	if *floorAddr != "" {
		if err := serveFloor(*floorAddr, *floorUpstream, o.demo); err != nil {
			fmt.Fprintln(os.Stderr, "mcpbench floor:", err)
			os.Exit(1)
		}
		return
	}
	for _, f := range strings.Split(*callers, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			fmt.Fprintf(os.Stderr, "mcpbench: -callers: %q is not a positive number\n", f)
			os.Exit(2)
		}
		o.callers = append(o.callers, c)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// progress reports on stderr, so that stdout is the report alone.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mcpbench: "+format+"\n", args...)
}

// selected reports whether -only keeps a target named name.
func (o options) selected(name string) bool {
	return o.only == "" || strings.Contains(","+o.only+",", ","+name+",")
}

// anySelected reports whether -only keeps a target whose name starts with
// prefix.
func (o options) anySelected(prefix string) bool {
	if o.only == "" {
		return true
	}
	for _, n := range strings.Split(o.only, ",") {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

func run(o options) error {
	ctx := context.Background()
	began := time.Now()
	host := machine()
	demoBin, err := filepath.Abs(o.demo)
	if err != nil {
		return err
	}
	dir := o.workdir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "mcpbench-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	maxCallers := 1
	for _, c := range append(o.callers, o.profileCallers) {
		maxCallers = max(maxCallers, c)
	}

	// The upstream: one demo-mcp over streamable HTTP.
	upstream, stopUpstream, err := startDemoHTTP(demoBin)
	if err != nil {
		return err
	}
	defer stopUpstream()

	// mcpflow in this process: store + runtime + API (REST and MCP
	// endpoint) on a loopback listener.
	pin := ""
	if o.upstreamProtocol != "" {
		pin = fmt.Sprintf(`, "protocol_version": %q`, o.upstreamProtocol)
	}
	ext := fmt.Sprintf(`{"mcpServers": {
  "demo": {"type": "http", "url": %q%s},
  "demostdio": {"type": "stdio", "command": %q, "args": ["--transport", "stdio"]%s}
}}`, upstream+"/mcp", pin, demoBin, pin)
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
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(16, maxCallers)}}

	// mcpflow and the peer in their own processes.
	var dep *deployed
	if o.mcpflow != "" && o.anySelected("mcpflow-proc-") {
		progress("starting %s serve", o.mcpflow)
		dep, err = startDeployed(ctx, o.mcpflow, filepath.Join(dir, "deployed"), ext, o.profileDir != "")
		if err != nil {
			return err
		}
		defer dep.stop()
	}
	var fp *floorProc
	if o.anySelected("floor-proc-") {
		progress("starting the floor process")
		fp, err = startFloorProc(filepath.Join(dir, "floor"), upstream+"/mcp", demoBin)
		if err != nil {
			return err
		}
		defer fp.stop()
	}
	var pr *peer
	if o.peer != "" && o.anySelected("peer-") {
		progress("starting the peer proxy %s", o.peer)
		pr, err = startPeer(o.peer, filepath.Join(dir, "peer"), upstream+"/mcp", demoBin)
		if err != nil {
			return err
		}
		defer pr.stop()
	}

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

	// pinned is an mcp-go client pinned to 2025-11-25 like the direct
	// ones, on url, with headers. One client (one MCP session) per target.
	pinned := func(url string, headers map[string]string) (*client.Client, error) {
		tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(hc), transport.WithHTTPHeaders(headers))
		if err != nil {
			return nil, err
		}
		c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
		return c, initialize(ctx, c)
	}
	// viaMCP is an mcp-go client on an mcpflow MCP endpoint at base, with
	// the user's token, on the REST calls' thread.
	viaMCP := func(base string) (*client.Client, error) {
		return pinned(base+"/mcp/threads/bench-thread", map[string]string{"Authorization": "Bearer " + benchToken})
	}
	mcpHTTP, err := viaMCP(base)
	if err != nil {
		return fmt.Errorf("mcp endpoint http: %w", err)
	}
	defer mcpHTTP.Close()
	mcpStdio, err := viaMCP(base)
	if err != nil {
		return fmt.Errorf("mcp endpoint stdio: %w", err)
	}
	defer mcpStdio.Close()
	// via2026 is an mcp-go client with its defaults (2026-07-28: discovery
	// probe, no session, per-request _meta and headers) on an mcpflow MCP
	// endpoint at base: the 2026 path, which mcpflow also speaks upstream
	// (demo-mcp offers 2026-07-28 on both transports).
	via2026 := func(base string) (*client.Client, error) {
		tr, err := transport.NewStreamableHTTP(base+"/mcp/threads/bench-thread", transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + benchToken}))
		if err != nil {
			return nil, err
		}
		c := client.NewClient(tr)
		return c, initializeDefault(ctx, c)
	}
	mcp26 := map[string]*client.Client{}
	for _, tr := range []string{"http", "stdio"} {
		c, err := via2026(base)
		if err != nil {
			return fmt.Errorf("mcp endpoint, 2026-07-28: %w", err)
		}
		defer c.Close()
		mcp26[tr] = c
	}

	args := benchArgs
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
	viaAPI := func(base, tool string) func(context.Context) error {
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
	floorSrv := &http.Server{Handler: floorHandler(map[string]*client.Client{"http": directHTTP, "stdio": directStdio}, args)}
	go func() { _ = floorSrv.Serve(floorLn) }()
	defer floorSrv.Close()
	viaFloor := func(path string) func(context.Context) error {
		return post("http://"+floorLn.Addr().String()+"/"+path, "")
	}

	targets := []target{
		{name: "direct-http", call: direct(directHTTP)},
		{name: "direct-http-default", call: direct(defaultHTTP)},
		{name: "floor-http", call: viaFloor("http")},
		{name: "mcpflow-http", call: viaAPI(base, "demo_echo")},
		{name: "mcpflow-mcp-http", call: callTool(mcpHTTP, "demo_echo")},
		{name: "mcpflow-mcp-raw-http", call: viaMCPRaw(mcpHTTP, "demo_echo")},
		{name: "mcpflow-mcp26-http", call: callTool(mcp26["http"], "demo_echo")},
		{name: "direct-stdio", call: direct(directStdio)},
		{name: "direct-stdio-default", call: direct(defaultStdio)},
		{name: "floor-stdio", call: viaFloor("stdio")},
		{name: "mcpflow-stdio", call: viaAPI(base, "demostdio_echo")},
		{name: "mcpflow-mcp-stdio", call: callTool(mcpStdio, "demostdio_echo")},
		{name: "mcpflow-mcp-raw-stdio", call: viaMCPRaw(mcpStdio, "demostdio_echo")},
		{name: "mcpflow-mcp26-stdio", call: callTool(mcp26["stdio"], "demostdio_echo")},
	}
	if fp != nil {
		targets = append(targets,
			target{name: "floor-proc-http", call: post(fp.base+"/http", ""), proc: fp.proc},
			target{name: "floor-proc-stdio", call: post(fp.base+"/stdio", ""), proc: fp.proc})
	}
	if dep != nil {
		procMCP := map[string]*client.Client{}
		for _, tr := range []string{"http", "stdio"} {
			c, err := viaMCP(dep.base)
			if err != nil {
				return fmt.Errorf("deployed mcpflow's MCP endpoint: %w", err)
			}
			defer c.Close()
			procMCP[tr] = c
			c26, err := via2026(dep.base)
			if err != nil {
				return fmt.Errorf("deployed mcpflow's MCP endpoint, 2026-07-28: %w", err)
			}
			defer c26.Close()
			procMCP["26"+tr] = c26
		}
		targets = append(targets,
			target{name: "mcpflow-proc-http", call: viaAPI(dep.base, "demo_echo"), proc: dep.proc, pprof: dep.pprof},
			target{name: "mcpflow-proc-mcp-http", call: callTool(procMCP["http"], "demo_echo"), proc: dep.proc, pprof: dep.pprof},
			target{name: "mcpflow-proc-stdio", call: viaAPI(dep.base, "demostdio_echo"), proc: dep.proc, pprof: dep.pprof},
			target{name: "mcpflow-proc-mcp-stdio", call: callTool(procMCP["stdio"], "demostdio_echo"), proc: dep.proc, pprof: dep.pprof},
			target{name: "mcpflow-proc-mcp26-http", call: callTool(procMCP["26http"], "demo_echo"), proc: dep.proc, pprof: dep.pprof},
			target{name: "mcpflow-proc-mcp26-stdio", call: callTool(procMCP["26stdio"], "demostdio_echo"), proc: dep.proc, pprof: dep.pprof})
	}
	if pr != nil {
		for _, up := range []struct{ name, path string }{{"peer-http", "demo"}, {"peer-stdio", "demostdio"}} {
			var c *client.Client
			err := pr.initialize(func() error {
				var err error
				c, err = pinned(pr.url(up.path), nil)
				return err
			})
			if err != nil {
				return fmt.Errorf("peer proxy, %s: %w\n%s", up.path, err, pr.proc.Tail(20))
			}
			defer c.Close()
			targets = append(targets, target{name: up.name, call: direct(c), proc: pr.proc})
		}
	}

	var keep []target
	for _, t := range targets {
		if o.selected(t.name) {
			keep = append(keep, t)
		}
	}
	targets = keep
	if len(targets) == 0 {
		return fmt.Errorf("-only %q keeps no target", o.only)
	}

	res := &results{cells: map[string]map[int][]cell{}}
	for r := 0; r < o.rounds; r++ {
		use0, t0 := readCPUUse(), time.Now()
		for _, callers := range o.callers {
			order := append([]target(nil), targets...)
			for i := 0; i < r%len(order); i++ {
				order = append(order[1:], order[0])
			}
			for _, t := range order {
				c, err := measure(ctx, t, callers, o.warmup, o.n)
				if err != nil {
					return err
				}
				res.add(t.name, callers, c)
			}
			progress("round %d/%d, %d caller(s): done (load average %s)", r+1, o.rounds, callers, benchproc.LoadAvg())
		}
		res.others = append(res.others, othersShare(use0, readCPUUse(), time.Since(t0)))
		progress("round %d/%d: other processes kept %.0f%% of the CPUs busy", r+1, o.rounds, 100*res.others[r])
	}

	var profiles []string
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return err
		}
		for _, t := range targets {
			if t.pprof == "" {
				continue
			}
			progress("profiling %s for %d s with %d callers", t.name, o.profileSeconds, o.profileCallers)
			line, err := profileTarget(ctx, t, o.profileCallers, o.profileSeconds, o.profileDir)
			if err != nil {
				return err
			}
			profiles = append(profiles, line)
		}
	}

	report(o, res, targets, host, began, profiles)
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
	// Killed with the benchmark, even when it dies without its defers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
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
