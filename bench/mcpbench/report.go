package main

import (
	"cmp"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
)

// results holds every cell, by target and number of callers, in round
// order, and how busy the rest of the machine was in each round.
type results struct {
	cells  map[string]map[int][]cell
	others []float64 // share of the CPUs other processes used, per round
}

func (r *results) add(target string, callers int, c cell) {
	if r.cells[target] == nil {
		r.cells[target] = map[int][]cell{}
	}
	r.cells[target][callers] = append(r.cells[target][callers], c)
}

// perRound returns f of each round's cell of target at callers.
func (r *results) perRound(target string, callers int, f func(cell) float64) []float64 {
	var out []float64
	for _, c := range r.cells[target][callers] {
		out = append(out, f(c))
	}
	return out
}

// ratio returns the per-round ratios f(a) / f(b) at callers; nil when
// either target was not run.
func (r *results) ratio(a, b string, callers int, f func(cell) float64) []float64 {
	ca, cb := r.cells[a][callers], r.cells[b][callers]
	if len(ca) == 0 || len(ca) != len(cb) {
		return nil
	}
	var out []float64
	for i := range ca {
		out = append(out, f(ca[i])/f(cb[i]))
	}
	return out
}

func p(q float64) func(cell) float64 {
	return func(c cell) float64 { return float64(pct(c.lat, q).Microseconds()) }
}

func rps(c cell) float64 { return c.rps }

func cpuPerCall(c cell) float64 { return float64(c.cpu.Microseconds()) }

// ratioPairs are the ratios the report prints, a / b.
var ratioPairs = [][2]string{
	{"mcpflow-http", "direct-http"}, {"mcpflow-http", "direct-http-default"},
	{"floor-http", "direct-http"}, {"mcpflow-http", "floor-http"},
	{"mcpflow-mcp-http", "direct-http"}, {"mcpflow-mcp-http", "mcpflow-http"}, {"mcpflow-mcp-raw-http", "mcpflow-http"},
	{"floor-proc-http", "direct-http"}, {"floor-proc-http", "floor-http"},
	{"mcpflow-proc-http", "direct-http"}, {"mcpflow-proc-http", "mcpflow-http"}, {"mcpflow-proc-http", "floor-http"}, {"mcpflow-proc-http", "floor-proc-http"},
	{"mcpflow-proc-mcp-http", "direct-http"}, {"mcpflow-proc-mcp-http", "mcpflow-proc-http"},
	{"peer-http", "direct-http"}, {"mcpflow-proc-http", "peer-http"}, {"mcpflow-proc-mcp-http", "peer-http"},
	{"mcpflow-stdio", "direct-stdio"}, {"mcpflow-stdio", "direct-stdio-default"},
	{"floor-stdio", "direct-stdio"}, {"mcpflow-stdio", "floor-stdio"},
	{"mcpflow-mcp-stdio", "direct-stdio"}, {"mcpflow-mcp-stdio", "mcpflow-stdio"}, {"mcpflow-mcp-raw-stdio", "mcpflow-stdio"},
	{"floor-proc-stdio", "direct-stdio"}, {"floor-proc-stdio", "floor-stdio"},
	{"mcpflow-proc-stdio", "direct-stdio"}, {"mcpflow-proc-stdio", "mcpflow-stdio"}, {"mcpflow-proc-stdio", "floor-stdio"}, {"mcpflow-proc-stdio", "floor-proc-stdio"},
	{"mcpflow-proc-mcp-stdio", "direct-stdio"}, {"mcpflow-proc-mcp-stdio", "mcpflow-proc-stdio"},
	{"peer-stdio", "direct-stdio"}, {"mcpflow-proc-stdio", "peer-stdio"}, {"mcpflow-proc-mcp-stdio", "peer-stdio"},
	{"mcpflow-mcp26-http", "mcpflow-mcp-http"}, {"mcpflow-mcp26-stdio", "mcpflow-mcp-stdio"},
	{"mcpflow-proc-mcp26-http", "direct-http-default"}, {"mcpflow-proc-mcp26-http", "mcpflow-proc-mcp-http"}, {"mcpflow-proc-mcp26-http", "peer-http"},
	{"mcpflow-proc-mcp26-stdio", "direct-stdio-default"}, {"mcpflow-proc-mcp26-stdio", "mcpflow-proc-mcp-stdio"}, {"mcpflow-proc-mcp26-stdio", "peer-stdio"},
}

// report prints the tables (GitHub Markdown) on stdout.
func report(o options, res *results, targets []target, host string, began time.Time, profiles []string) {
	fmt.Printf("ordinary tool call (echo): %d rounds × %d calls per target and number of callers (+%d warm-up each); "+
		"callers %s sharing one client; order rotated per round; median (min–max) over rounds\n\n",
		o.rounds, o.n, o.warmup, joinInts(o.callers))
	fmt.Printf("%s UTC · %s at start, %s at the end · %s · everything on 127.0.0.1 · run took %s\n\n",
		began.UTC().Format("2006-01-02 15:04"), host, benchproc.LoadAvg(), runtime.Version(), time.Since(began).Round(time.Second))
	fmt.Printf("mcpflow speaks MCP %s to the demo servers (-upstream-protocol).\n\n",
		cmp.Or(o.upstreamProtocol, "the newest revision they offer (2026-07-28)"))
	if len(res.others) > 0 {
		var pcts []string
		for _, x := range res.others {
			pcts = append(pcts, fmt.Sprintf("%.0f%%", 100*x))
		}
		fmt.Printf("Other processes on the machine kept %s of its CPUs busy during rounds 1–%d (machine busy CPU time minus this benchmark's process tree, from /proc).\n\n",
			strings.Join(pcts, ", "), len(res.others))
	}

	if o.rounds == 0 {
		printProfiles(profiles)
		return
	}
	fmt.Printf("| target | callers | p50 µs | p90 µs | p99 µs | calls/s | proxy process CPU µs/call |\n|---|---|---|---|---|---|---|\n")
	for _, callers := range o.callers {
		for _, t := range targets {
			cpu := "–"
			if t.proc != nil {
				cpu = stat(res.perRound(t.name, callers, cpuPerCall))
			}
			fmt.Printf("| %s | %d | %s | %s | %s | %s | %s |\n", t.name, callers,
				stat(res.perRound(t.name, callers, p(0.50))), stat(res.perRound(t.name, callers, p(0.90))),
				stat(res.perRound(t.name, callers, p(0.99))), stat(res.perRound(t.name, callers, rps)), cpu)
		}
	}

	fmt.Printf("\n| ratio a / b (per round, median (min–max)) |")
	sep := "|---|"
	for _, c := range o.callers {
		fmt.Printf(" p50, %d | p99, %d | calls/s, %d |", c, c, c)
		sep += "---|---|---|"
	}
	fmt.Printf("\n%s\n", sep)
	for _, pair := range ratioPairs {
		if len(res.cells[pair[0]]) == 0 || len(res.cells[pair[1]]) == 0 {
			continue
		}
		fmt.Printf("| %s / %s |", pair[0], pair[1])
		for _, c := range o.callers {
			fmt.Printf(" %s | %s | %s |", statR(res.ratio(pair[0], pair[1], c, p(0.50))),
				statR(res.ratio(pair[0], pair[1], c, p(0.99))), statR(res.ratio(pair[0], pair[1], c, rps)))
		}
		fmt.Println()
	}

	// The MCP endpoint's budget (issue 12): within 1.1× of the REST call
	// at p50.
	sep = "\n"
	for _, tr := range []string{"http", "stdio"} {
		for _, pre := range []string{"mcpflow-", "mcpflow-proc-"} {
			if r50 := res.ratio(pre+"mcp-"+tr, pre+tr, 1, p(0.50)); r50 != nil {
				fmt.Printf("%sMCP endpoint / REST (%s%s), p50 at 1 caller, median over rounds: %s (target ≤ 1.10)\n", sep, pre, tr, statR(r50))
				sep = ""
			}
		}
	}

	issueTargets(res)
	hopTargets(res)
	printProfiles(profiles)
}

func printProfiles(profiles []string) {
	if len(profiles) > 0 {
		fmt.Printf("\nCPU profiles of the separate mcpflow process (after the rounds; read with `go tool pprof -top FILE`):\n")
		for _, l := range profiles {
			fmt.Printf("- %s\n", l)
		}
	}
}

// issueTargets prints the figures of issue 15 with their targets: mcpflow
// as its own process against direct mcp-go (same protocol), beside the
// peer.
func issueTargets(res *results) {
	type figure struct {
		what    string
		tr      string
		callers int
		f       func(cell) float64
		target  float64
		atMost  bool
	}
	figures := []figure{
		{"tool call p50 / direct, 1 caller, HTTP upstream", "http", 1, p(0.50), 1.8, true},
		{"tool call p50 / direct, 1 caller, stdio upstream", "stdio", 1, p(0.50), 2.6, true},
		{"calls/s / direct, 16 callers, HTTP upstream", "http", 16, rps, 0.6, false},
		{"calls/s / direct, 16 callers, stdio upstream", "stdio", 16, rps, 0.4, false},
	}
	var rows []string
	for _, fg := range figures {
		rest := res.ratio("mcpflow-proc-"+fg.tr, "direct-"+fg.tr, fg.callers, fg.f)
		if rest == nil {
			continue
		}
		mcp := res.ratio("mcpflow-proc-mcp-"+fg.tr, "direct-"+fg.tr, fg.callers, fg.f)
		peer := res.ratio("peer-"+fg.tr, "direct-"+fg.tr, fg.callers, fg.f)
		floor := res.ratio("floor-proc-"+fg.tr, "direct-"+fg.tr, fg.callers, fg.f)
		m, _, _ := median(rest)
		cmp, verdict := judge(m, fg.target, fg.atMost)
		// The floor says what the machine allows a proxy process at all:
		// a target the floor itself misses is below it.
		if f, _, _ := median(floor); floor != nil && ((fg.atMost && f > fg.target) || (!fg.atMost && f < fg.target)) {
			verdict += " (below the floor: a bare hop misses it too)"
		}
		rows = append(rows, fmt.Sprintf("| %s | **%s** | %s %.1f | %s | %s | %s | %s |", fg.what, statR(rest), cmp, fg.target, verdict, statR(floor), statR(mcp), statR(peer)))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Printf("\nissue 15: mcpflow as its own process (mcpflow serve: access log on, user token, SQLite) against direct mcp-go, ratios within each round\n\n")
	fmt.Printf("| figure | mcpflow REST | target | | floor: bare net/http hop, own process | mcpflow MCP endpoint (mcp-go client) | peer proxy (mcp-go client) |\n|---|---|---|---|---|---|---|\n")
	fmt.Println(strings.Join(rows, "\n"))
}

// hopTargets prints the figures of issue 25, point 6: the 2026-07-28 path
// through mcpflow as its own process (an mcp-go client with its defaults on
// /mcp, mcpflow speaking 2026-07-28 to the demo server, which offers it)
// against the peer proxy (which speaks 2025-11-25 only, called by the
// pinned client): p50 at 1 caller at or below the peer's, calls/s at 16
// callers at or above it. The 2025 path through mcpflow is beside it.
func hopTargets(res *results) {
	type figure struct {
		what    string
		tr      string
		callers int
		f       func(cell) float64
		atMost  bool
	}
	figures := []figure{
		{"p50, 1 caller, HTTP upstream", "http", 1, p(0.50), true},
		{"p50, 1 caller, stdio upstream", "stdio", 1, p(0.50), true},
		{"calls/s, 16 callers, HTTP upstream", "http", 16, rps, false},
		{"calls/s, 16 callers, stdio upstream", "stdio", 16, rps, false},
	}
	var rows []string
	for _, fg := range figures {
		r := res.ratio("mcpflow-proc-mcp26-"+fg.tr, "peer-"+fg.tr, fg.callers, fg.f)
		if r == nil {
			continue
		}
		m, _, _ := median(r)
		cmp, verdict := judge(m, 1, fg.atMost)
		legacy := res.ratio("mcpflow-proc-mcp-"+fg.tr, "peer-"+fg.tr, fg.callers, fg.f)
		up := res.ratio("direct-"+fg.tr+"-default", "direct-"+fg.tr, fg.callers, fg.f)
		rows = append(rows, fmt.Sprintf("| %s | **%s** | %s 1.00 | %s | %s | %s |", fg.what, statR(r), cmp, verdict, statR(legacy), statR(up)))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Printf("\nissue 25, point 6: the 2026-07-28 path through mcpflow as its own process against the peer proxy, ratios within each round\n\n")
	fmt.Printf("| figure | mcpflow 2026 / peer | target | | mcpflow 2025 / peer | direct 2026 / direct 2025 (the revision's own cost) |\n|---|---|---|---|---|---|\n")
	fmt.Println(strings.Join(rows, "\n"))
}

// judge compares a figure's median m with its target: at most or at
// least; it returns the comparison's sign and "met" or "not met".
func judge(m, target float64, atMost bool) (cmp, verdict string) {
	ok := m <= target
	cmp = "≤"
	if !atMost {
		ok, cmp = m >= target, "≥"
	}
	if ok {
		return cmp, "met"
	}
	return cmp, "not met"
}

func joinInts(v []int) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ",")
}
