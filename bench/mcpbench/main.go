// Command mcpbench compares ordinary MCP tool calls through mcpflow, run as
// its users run it (its own process), with direct mcp-go calls on the same
// upstream and with the peer proxy TBXark/mcp-proxy, side by side in one
// run (make bench), at 1 and at 16 concurrent callers, and prints a summary
// of the figures mcpflow must reach against the peer (see summary).
//
// One demo-mcp serves over streamable HTTP; the stdio paths start their own
// demo-mcp child. One `mcpflow serve` process (see deployed) has four
// upstreams: the demo server over HTTP and a demo child over stdio, each
// twice, once as users run it (the newest revision the demo server offers,
// 2026-07-28) and once pinned to 2025-11-25 (protocol_version), the
// revision the peer speaks upstream. The targets, for TR = http and stdio:
//
//   - direct-TR:          an mcp-go client pinned to 2025-11-25 → demo-mcp
//   - direct-TR-default:  mcp-go with its defaults (2026-07-28) → demo-mcp
//   - mcpflow-proc-mcp-TR-25: the pinned 2025 client → mcpflow's MCP
//     endpoint (/mcp/threads/…) → the upstream pinned to 2025-11-25: the
//     same revisions on both hops as the peer
//   - mcpflow-proc-mcp-TR: the pinned 2025 client → mcpflow → the upstream
//     as users run it (2026-07-28)
//   - mcpflow-proc-mcp26-TR: mcp-go with its defaults (2026-07-28: no
//     session, per-request _meta and headers) → mcpflow → the same
//   - mcpflow-proc-TR, mcpflow-proc-TR-25: one plain POST per call to its
//     REST API → the upstream as users run it / pinned to 2025-11-25
//   - peer-TR: the pinned 2025 client → TBXark/mcp-proxy in its own process
//     (-peer BIN; see peer) → the same demo server / its own stdio child
//   - floor-proc-TR, floor-proc-TR-default: the bare hop, a net/http handler
//     in front of the direct client as its own process, on 2025-11-25 and
//     on the upstream's newest revision: the summary prints each figure's
//     ratio with it in mcpflow's place
//
// With -floors the older floor targets run too: mcpflow's API inside this
// process (mcpflow-*, mcpflow-mcp-*, mcpflow-mcp-raw-*, mcpflow-mcp26-*) and
// the bare hop inside it (floor-*); see inprocess and floorproc.
//
// Every round runs every target, first with 1 caller, then with 16
// (-callers: there only the targets the summary reads, unless -all-cells),
// rotating the order each round and taking turns in -slices parts of the
// calls (measureInTurns); ratios are taken
// within a round and the median over rounds is printed. -profile DIR then
// takes a CPU profile of the mcpflow process under 16 callers on each of
// its targets.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
)

const benchToken = "bench-user-token"

// benchArgs are the echo tool's arguments on every path.
var benchArgs = map[string]any{"message": "hello"}

// options are the command's flags.
type options struct {
	rounds, n, warmup int
	slices            int // parts a round's n calls of each target are made in, the targets taking turns
	callers           []int
	demo              string
	mcpflow           string // "" skips the mcpflow-proc-* targets
	peer              string // "" skips the peer-* targets
	peerVersion       string // what the report calls the peer's build
	floors            bool   // the in-process and floor targets too
	allCells          bool   // every target at every number of callers
	profileDir        string
	profileSeconds    int
	profileCallers    int
	only              string
	workdir           string // "" is a temporary directory, removed at the end
}

func main() {
	var o options
	flag.IntVar(&o.rounds, "rounds", 5, "rounds")
	flag.IntVar(&o.n, "n", 2000, "calls per target, round and number of callers")
	flag.IntVar(&o.warmup, "warmup", 200, "warm-up calls before each measured cell")
	flag.IntVar(&o.slices, "slices", 10, "make each target's n calls of a round in this many parts, the targets taking turns, so that a slow spell of the machine falls on all of them")
	callers := flag.String("callers", "1,16", "comma-separated numbers of concurrent callers sharing one client (the summary reads 1 and 16)")
	flag.StringVar(&o.demo, "demo", "bin/demo-mcp", "path of the demo-mcp binary")
	flag.StringVar(&o.mcpflow, "mcpflow", "bin/mcpflow", "path of the mcpflow binary to run as its own process (mcpflow-proc-* targets; \"\" skips them)")
	flag.StringVar(&o.peer, "peer", "", "path of a TBXark/mcp-proxy binary (peer-* targets; \"\" or a missing file: the summary's peer rows are not measured)")
	flag.StringVar(&o.peerVersion, "peer-version", "", "the peer's build, for the report (make bench passes PEER_COMMIT)")
	flag.BoolVar(&o.floors, "floors", false, "also run the in-process floors: mcpflow's API inside this process (mcpflow-*) and the bare net/http hop in this process (floor-*); the bare hop as its own process (floor-proc-*) always runs")
	flag.BoolVar(&o.allCells, "all-cells", false, "measure every target at every number of callers (default: every target at 1 caller, and at other numbers only the targets the summary reads there)")
	flag.StringVar(&o.profileDir, "profile", "", "after the rounds, write a CPU profile of the separate mcpflow process under load on each mcpflow-proc-* target to this directory (needs $"+EnvPprofAddr+" support in mcpflow)")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 10, "length of each -profile profile")
	flag.IntVar(&o.profileCallers, "profile-callers", 16, "concurrent callers while profiling")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this benchmark process (the in-process targets of -floors) to this file")
	flag.StringVar(&o.only, "only", "", "comma-separated targets to run (default: all)")
	flag.StringVar(&o.workdir, "workdir", "", "keep the configurations, databases and logs (mcpflow.log: its access log) of the run in this directory (default: a temporary one, removed)")
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

// env is what the targets are built from: the run's directory, the demo
// server and binary, and one HTTP client for every plain POST.
type env struct {
	o        options
	dir      string
	demoBin  string
	upstream string // the demo server's base URL
	ext      string // extensions_config.json of every mcpflow
	hc       *http.Client
	// peerNote says why the peer's targets are missing, "" when they run.
	peerNote string
	// closers run at the end, last first.
	closers []func()
}

func (e *env) later(f func()) { e.closers = append(e.closers, f) }

func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// The upstream servers of every mcpflow in the run, by tool prefix: the
// demo server as users run it (the newest revision it offers) and pinned
// to 2025-11-25, over HTTP and over stdio.
const (
	srvHTTP    = "demo"
	srvHTTP25  = "demo25"
	srvStdio   = "demostdio"
	srvStdio25 = "demostdio25"
)

// extensions is the extensions_config.json of the mcpflow processes.
func extensions(upstreamMCP, demoBin string) string {
	return fmt.Sprintf(`{"mcpServers": {
  %q: {"type": "http", "url": %q},
  %q: {"type": "http", "url": %q, "protocol_version": "2025-11-25"},
  %q: {"type": "stdio", "command": %q, "args": ["--transport", "stdio"]},
  %q: {"type": "stdio", "command": %q, "args": ["--transport", "stdio"], "protocol_version": "2025-11-25"}
}}`, srvHTTP, upstreamMCP, srvHTTP25, upstreamMCP, srvStdio, demoBin, srvStdio25, demoBin)
}

func run(o options) error {
	ctx := context.Background()
	began := time.Now()
	host := machine()
	demoBin, err := filepath.Abs(o.demo)
	if err != nil {
		return err
	}
	e := &env{o: o, demoBin: demoBin}
	defer e.close()
	if e.dir = o.workdir; e.dir == "" {
		if e.dir, err = os.MkdirTemp("", "mcpbench-"); err != nil {
			return err
		}
		e.later(func() { os.RemoveAll(e.dir) })
	} else if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return err
	}
	maxCallers := 1
	for _, c := range append(o.callers, o.profileCallers) {
		maxCallers = max(maxCallers, c)
	}
	e.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(16, maxCallers)}}

	// The upstream: one demo-mcp over streamable HTTP.
	upstream, stopUpstream, err := startDemoHTTP(demoBin)
	if err != nil {
		return err
	}
	e.later(stopUpstream)
	e.upstream = upstream
	e.ext = extensions(upstream+"/mcp", demoBin)

	var targets []target
	for _, add := range []func(context.Context, *env) ([]target, error){directTargets, procTargets, peerTargets, floorTargets} {
		ts, err := add(ctx, e)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if o.selected(t.name) {
				targets = append(targets, t)
			}
		}
	}
	if len(targets) == 0 {
		return fmt.Errorf("-only %q keeps no target", o.only)
	}

	res := &results{cells: map[string]map[int][]cell{}, peerNote: e.peerNote}
	if err := rounds(ctx, o, targets, res); err != nil {
		return err
	}
	var profiles []string
	if o.profileDir != "" {
		if profiles, err = profileAll(ctx, o, targets); err != nil {
			return err
		}
	}
	report(o, res, targets, host, began, profiles)
	return nil
}

// rounds measures every target at every number of callers, o.rounds
// times, rotating the order each round.
func rounds(ctx context.Context, o options, targets []target, res *results) error {
	for r := 0; r < o.rounds; r++ {
		use0, t0 := readCPUUse(), time.Now()
		for _, callers := range o.callers {
			order := append([]target(nil), targets...)
			for i := 0; i < r%len(order); i++ {
				order = append(order[1:], order[0])
			}
			var run []target
			for _, t := range order {
				if o.allCells || callers == 1 || summaryReads(t.name, callers) {
					run = append(run, t)
				}
			}
			cells, err := measureInTurns(ctx, run, callers, o.warmup, o.n, o.slices)
			if err != nil {
				return err
			}
			for i, t := range run {
				res.add(t.name, callers, cells[i])
			}
			progress("round %d/%d, %d caller(s): done (load average %s)", r+1, o.rounds, callers, benchproc.LoadAvg())
		}
		res.others = append(res.others, othersShare(use0, readCPUUse(), time.Since(t0)))
		progress("round %d/%d: other processes kept %.0f%% of the CPUs busy", r+1, o.rounds, 100*res.others[r])
	}
	return nil
}

func profileAll(ctx context.Context, o options, targets []target) ([]string, error) {
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return nil, err
	}
	var profiles []string
	for _, t := range targets {
		if t.pprof == "" {
			continue
		}
		progress("profiling %s for %d s with %d callers", t.name, o.profileSeconds, o.profileCallers)
		line, err := profileTarget(ctx, t, o.profileCallers, o.profileSeconds, o.profileDir)
		if err != nil {
			return nil, err
		}
		profiles = append(profiles, line)
	}
	return profiles, nil
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
