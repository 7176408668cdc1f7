package main

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// figure is one of the numbers mcpflow must reach against the peer (issue
// 31, section Numbers): per round, (f(a) − f(a2)) / (f(b) − f(b2)) at
// callers (a2, b2 "": nothing subtracted), and the median over rounds
// compared with limit.
type figure struct {
	item    string // the list item of the requirement
	what    string
	tr      string
	a, a2   string
	b, b2   string
	callers int
	f       func(cell) float64
	unit    string
	limit   float64
	atMost  bool
}

// figures are the summary's rows, for HTTP and stdio upstreams.
func figures() []figure {
	p50 := p(0.50)
	var fs []figure
	for _, item := range []string{"1", "2", "3", "4"} {
		for _, tr := range []string{"http", "stdio"} {
			mcp25, mcp, mcp26 := "mcpflow-proc-mcp-"+tr+"-25", "mcpflow-proc-mcp-"+tr, "mcpflow-proc-mcp26-"+tr
			peer, direct := "peer-"+tr, "direct-"+tr
			switch item {
			case "1":
				fs = append(fs,
					figure{item, "2025-11-25 client and upstream: MCP p50 at 1 caller, mcpflow / peer", tr, mcp25, "", peer, "", 1, p50, "µs", 0.95, true},
					figure{item, "2025-11-25 client and upstream: process CPU per call at 1 caller, mcpflow / peer", tr, mcp25, "", peer, "", 1, cpuPerCall, "µs", 1, true},
					figure{item, "2025-11-25 client and upstream: process CPU per call at 16 callers, mcpflow / peer", tr, mcp25, "", peer, "", 16, cpuPerCall, "µs", 1, true},
					figure{item, "2025-11-25 client and upstream: calls/s at 16 callers, mcpflow / peer", tr, mcp25, "", peer, "", 16, rps, "calls/s", 1.1, false})
			case "2":
				fs = append(fs,
					figure{item, "as users run it (2025 client, upstream's newest revision): MCP p50 at 1 caller, mcpflow / peer", tr, mcp, "", peer, "", 1, p50, "µs", 1, true},
					figure{item, "as users run it (2025 client, upstream's newest revision): calls/s at 16 callers, mcpflow / peer", tr, mcp, "", peer, "", 16, rps, "calls/s", 1, false})
			case "3":
				fs = append(fs, figure{item, "2026-07-28 client and upstream: added p50 at 1 caller, mcpflow (through − direct, 2026) / peer (through − direct, 2025)",
					tr, mcp26, direct + "-default", peer, direct, 1, p50, "µs added", 1, true})
			case "4":
				fs = append(fs, figure{item, "REST p50 at 1 caller (upstream's newest revision) / the peer's MCP p50", tr, "mcpflow-proc-" + tr, "", peer, "", 1, p50, "µs", 0.9, true})
			}
		}
	}
	fs = append(fs,
		figure{"5", "governance (20 policy rules, audit log) on / off: MCP p50 at 1 caller", "http", "mcpflow-gov-mcp-http-25", "", "mcpflow-proc-mcp-http-25", "", 1, p50, "µs", 1.05, true},
		figure{"5", "governance (20 policy rules, audit log) on / off: process CPU per call at 1 caller", "http", "mcpflow-gov-mcp-http-25", "", "mcpflow-proc-mcp-http-25", "", 1, cpuPerCall, "µs", 1.05, true},
		figure{"5", "governance (20 policy rules, audit log) on / off: REST p50 at 1 caller", "http", "mcpflow-gov-http-25", "", "mcpflow-proc-http-25", "", 1, p50, "µs", 1.05, true})
	return fs
}

// summaryReads reports whether a figure of the summary (or its bare hop,
// with -floors) reads target at callers.
func summaryReads(target string, callers int) bool {
	for _, fg := range figures() {
		if fg.callers == callers && (target == fg.a || target == fg.a2 || target == fg.b || target == fg.b2 || target == fg.floor()) {
			return true
		}
	}
	return false
}

// floor is the bare hop (-floors: a net/http handler in front of an mcp-go
// client, as its own process) on the same upstream revision as the
// figure's mcpflow target, or "" for a figure of mcpflow against itself.
// A figure the bare hop misses too asks mcpflow to be cheaper than a hop
// with no MCP server side, auth, log or metrics.
func (fg figure) floor() string {
	rest, ok := strings.CutPrefix(fg.a, "mcpflow-proc-")
	if !ok {
		return ""
	}
	if strings.HasSuffix(rest, "-25") {
		return "floor-proc-" + fg.tr
	}
	return "floor-proc-" + fg.tr + "-default"
}

// floorRatios are the figure's per-round ratios with its bare hop in
// place of mcpflow, or nil when the bare hop did not run.
func (fg figure) floorRatios(res *results) []float64 {
	f := fg.floor()
	if f == "" || len(res.cells[f][fg.callers]) == 0 {
		return nil
	}
	fg.a = f
	ratios, _, _, missing := fg.eval(res)
	if missing != "" {
		return nil
	}
	return ratios
}

// side returns, per round, f of target t less f of minus, if any, or why
// it was not measured.
func (fg figure) side(res *results, t, minus string) ([]float64, string) {
	ct, cm := res.cells[t][fg.callers], res.cells[minus][fg.callers]
	for _, x := range []struct {
		name  string
		cells []cell
	}{{t, ct}, {minus, cm}} {
		if x.name != "" && len(x.cells) == 0 {
			if strings.HasPrefix(x.name, "peer-") && res.peerNote != "" {
				return nil, "no peer"
			}
			return nil, fmt.Sprintf("%s at %d caller(s) did not run", x.name, fg.callers)
		}
	}
	if minus != "" && len(cm) != len(ct) {
		return nil, "the targets ran a different number of rounds"
	}
	var out []float64
	for i, c := range ct {
		v := fg.f(c)
		if minus != "" {
			v -= fg.f(cm[i])
		}
		out = append(out, v)
	}
	return out, ""
}

// eval returns the per-round ratios and the two sides' per-round values,
// or why the figure was not measured.
func (fg figure) eval(res *results) (ratios, as, bs []float64, missing string) {
	as, missA := fg.side(res, fg.a, fg.a2)
	bs, missB := fg.side(res, fg.b, fg.b2)
	if missing = cmp.Or(missA, missB); missing != "" {
		return nil, as, bs, missing
	}
	if len(as) != len(bs) {
		return nil, as, bs, "the targets ran a different number of rounds"
	}
	for i := range as {
		r := as[i] / bs[i]
		if bs[i] <= 0 { // the peer added nothing (or used no CPU): any cost is above it
			r = math.Inf(1)
			if as[i] <= 0 {
				r = 1
			}
		}
		ratios = append(ratios, r)
	}
	return ratios, as, bs, ""
}

// holds reports whether the median of ratios (not empty) meets the
// figure's limit; a NaN never does.
func (fg figure) holds(ratios []float64) bool {
	m, _, _ := median(ratios)
	if fg.atMost {
		return m <= fg.limit
	}
	return m >= fg.limit
}

// medianOr is v's median formatted, or "–" when v is empty.
func medianOr(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	m, _, _ := median(v)
	return fmt.Sprintf("%.0f", m)
}

// summary prints the figures as one Markdown table, with what was
// measured, where and when, above it.
func summary(o options, res *results, host string, began time.Time, took time.Duration) {
	fmt.Printf("\n### Summary: mcpflow against the peer proxy\n\n")
	fmt.Printf("- mcpflow: %s; peer: TBXark/mcp-proxy %s\n", mcpflowVersion(o.mcpflow), cmp.Or(o.peerVersion, "(build not given)"))
	fmt.Printf("- %s UTC; %s; %s; %s; everything on 127.0.0.1\n", began.UTC().Format("2006-01-02 15:04"), cpuModel(), host, runtime.Version())
	fmt.Printf("- %d rounds × %d calls (+%d warm-up) per target and number of callers, all targets side by side in each round, "+
		"taking turns in %d parts, one `mcpflow serve` process for every mcpflow target; run took %s\n", o.rounds, o.n, o.warmup, o.slices, took)
	if len(res.others) > 0 {
		fmt.Printf("- other processes kept %s of the CPUs busy in rounds 1–%d\n", othersList(res.others), len(res.others))
	}
	fmt.Printf("- ratio: per round, median (min–max) over rounds; holds: the median meets the requirement\n")
	fmt.Printf("- bare hop's ratio: the same ratio with the bare hop (floor-proc-*: a net/http handler in front of an mcp-go client, " +
		"as its own process, on the same upstream revision) in mcpflow's place; a figure the bare hop misses too asks mcpflow " +
		"for less than a hop that only relays (no MCP server side, auth, log or metrics)\n\n")
	fmt.Printf("| # | figure | upstream | required | measured ratio | mcpflow vs peer (medians) | bare hop's ratio | holds |\n|---|---|---|---|---|---|---|---|\n")
	held, failed, belowFloor, unmeasured := 0, 0, 0, 0
	for _, fg := range figures() {
		sign := "≤"
		if !fg.atMost {
			sign = "≥"
		}
		ratios, as, bs, missing := fg.eval(res)
		floor := fg.floorRatios(res)
		measured, verdict := statR(ratios), "yes"
		switch {
		case missing != "":
			measured, verdict = "not measured ("+missing+")", "not measured"
			unmeasured++
		case !fg.holds(ratios) && floor != nil && !fg.holds(floor):
			verdict = "**no**, nor does the bare hop"
			failed++
			belowFloor++
		case !fg.holds(ratios):
			verdict = "**no**"
			failed++
		default:
			held++
		}
		floorCell := "–"
		if floor != nil {
			floorCell = statR(floor)
		}
		fmt.Printf("| %s | %s | %s | %s %.2f | %s | %s vs %s %s | %s | %s |\n", fg.item, fg.what, fg.tr, sign, fg.limit, measured,
			medianOr(as), medianOr(bs), fg.unit, floorCell, verdict)
	}
	if res.peerNote != "" {
		fmt.Printf("\nNo peer: %s.\n", res.peerNote)
	}
	fmt.Printf("\n%d of %d figures hold, %d do not (%d of them missed by the bare hop too), %d not measured.\n",
		held, held+failed+unmeasured, failed, belowFloor, unmeasured)
}

// mcpflowVersion is what the mcpflow binary under test says it is (make
// build stamps the commit).
func mcpflowVersion(bin string) string {
	if bin == "" {
		return "not run"
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return bin + " (its version did not answer: " + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

// cpuModel is the first CPU's model name from /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "CPU model unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "CPU model unknown"
}
