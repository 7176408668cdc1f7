package main

import (
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
	// peerNote says why the peer's targets did not run, "" when they did.
	peerNote string
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

func cpuPerCall(c cell) float64 { return float64(c.cpu) / float64(time.Microsecond) }

// ratioPairs are the ratios the report prints, a / b, for TR = http and
// stdio; pairs of targets that did not run are left out.
func ratioPairs() [][2]string {
	pairs := [][2]string{
		{"mcpflow-proc-mcp-TR-25", "peer-TR"}, {"mcpflow-proc-mcp-TR", "peer-TR"}, {"mcpflow-proc-mcp26-TR", "peer-TR"},
		{"mcpflow-proc-TR", "peer-TR"}, {"mcpflow-proc-TR-25", "peer-TR"},
		{"peer-TR", "direct-TR"}, {"mcpflow-proc-mcp-TR-25", "direct-TR"}, {"mcpflow-proc-mcp26-TR", "direct-TR-default"},
		{"direct-TR-default", "direct-TR"}, {"mcpflow-proc-mcp-TR", "mcpflow-proc-mcp-TR-25"},
		{"mcpflow-proc-mcp26-TR", "mcpflow-proc-mcp-TR"}, {"mcpflow-proc-mcp-TR", "mcpflow-proc-TR"},
		{"mcpflow-proc-TR", "mcpflow-proc-TR-25"},
		// -floors
		{"floor-TR", "direct-TR"}, {"floor-proc-TR", "direct-TR"}, {"floor-proc-TR", "floor-TR"},
		{"floor-proc-TR-default", "direct-TR-default"}, {"floor-proc-TR-default", "peer-TR"}, {"floor-proc-TR", "peer-TR"},
		{"mcpflow-proc-TR", "floor-proc-TR"}, {"mcpflow-proc-TR", "mcpflow-TR"},
		{"mcpflow-mcp-TR", "mcpflow-TR"}, {"mcpflow-mcp-raw-TR", "mcpflow-TR"}, {"mcpflow-mcp26-TR", "mcpflow-mcp-TR"},
	}
	var out [][2]string
	for _, tr := range []string{"http", "stdio"} {
		for _, pr := range pairs {
			out = append(out, [2]string{strings.ReplaceAll(pr[0], "TR", tr), strings.ReplaceAll(pr[1], "TR", tr)})
		}
	}
	return out
}

// report prints the tables (GitHub Markdown) on stdout: every target, the
// ratios, then the summary.
func report(o options, res *results, targets []target, host string, began time.Time, profiles []string) {
	took := time.Since(began).Round(time.Second)
	fmt.Printf("ordinary tool call (echo): %d rounds × %d calls per target and number of callers (+%d warm-up each); "+
		"callers %s sharing one client; order rotated per round, the targets taking turns in %d parts; median (min–max) over rounds\n\n",
		o.rounds, o.n, o.warmup, joinInts(o.callers), o.slices)
	fmt.Printf("%s UTC · %s at start, %s at the end · %s · everything on 127.0.0.1 · run took %s\n\n",
		began.UTC().Format("2006-01-02 15:04"), host, benchproc.LoadAvg(), runtime.Version(), took)
	if len(res.others) > 0 {
		fmt.Printf("Other processes on the machine kept %s of its CPUs busy during rounds 1–%d (machine busy CPU time minus this benchmark's process tree, from /proc).\n\n",
			othersList(res.others), len(res.others))
	}
	if o.rounds == 0 {
		printProfiles(profiles)
		return
	}
	fmt.Printf("| target | path | callers | p50 µs | p90 µs | p99 µs | calls/s | proxy process CPU µs/call |\n|---|---|---|---|---|---|---|---|\n")
	for _, callers := range o.callers {
		for _, t := range targets {
			if len(res.cells[t.name][callers]) == 0 {
				continue // not measured at callers (-all-cells)
			}
			cpu := "–"
			if t.proc != nil {
				cpu = stat(res.perRound(t.name, callers, cpuPerCall))
			}
			fmt.Printf("| %s | %s | %d | %s | %s | %s | %s | %s |\n", t.name, t.path, callers,
				stat(res.perRound(t.name, callers, p(0.50))), stat(res.perRound(t.name, callers, p(0.90))),
				stat(res.perRound(t.name, callers, p(0.99))), stat(res.perRound(t.name, callers, rps)), cpu)
		}
	}

	fmt.Printf("\n| ratio a / b (per round, median (min–max)) |")
	sep := "|---|"
	for _, c := range o.callers {
		fmt.Printf(" p50, %d | p99, %d | calls/s, %d | CPU/call, %d |", c, c, c, c)
		sep += "---|---|---|---|"
	}
	fmt.Printf("\n%s\n", sep)
	for _, pair := range ratioPairs() {
		if len(res.cells[pair[0]]) == 0 || len(res.cells[pair[1]]) == 0 {
			continue
		}
		fmt.Printf("| %s / %s |", pair[0], pair[1])
		for _, c := range o.callers {
			cpu := "–"
			if r := res.ratio(pair[0], pair[1], c, cpuPerCall); r != nil && !hasInf(r) {
				cpu = statR(r)
			}
			fmt.Printf(" %s | %s | %s | %s |", statR(res.ratio(pair[0], pair[1], c, p(0.50))),
				statR(res.ratio(pair[0], pair[1], c, p(0.99))), statR(res.ratio(pair[0], pair[1], c, rps)), cpu)
		}
		fmt.Println()
	}

	summary(o, res, host, began, took)
	printProfiles(profiles)
}

// hasInf reports whether a ratio of CPU per call divided by zero (an
// in-process target has no process CPU) or zero by zero.
func hasInf(v []float64) bool {
	for _, x := range v {
		if x != x || x > 1e300 || x < -1e300 {
			return true
		}
	}
	return false
}

func othersList(others []float64) string {
	var pcts []string
	for _, x := range others {
		pcts = append(pcts, fmt.Sprintf("%.0f%%", 100*x))
	}
	return strings.Join(pcts, ", ")
}

func printProfiles(profiles []string) {
	if len(profiles) > 0 {
		fmt.Printf("\nCPU profiles of the separate mcpflow process (after the rounds; read with `go tool pprof -top FILE`):\n")
		for _, l := range profiles {
			fmt.Printf("- %s\n", l)
		}
	}
}

func joinInts(v []int) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ",")
}
