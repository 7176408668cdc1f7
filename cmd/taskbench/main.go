// Command taskbench measures mcpflow's durable tasks against a bare
// Temporal baseline, side by side in one run (make bench), and prints a
// markdown table.
//
// It starts everything itself on 127.0.0.1: a Temporal dev server
// (bin/temporal, fresh SQLite file in a temp directory), the demo MCP
// server over streamable HTTP (bin/demo-mcp), and per target and round a
// fresh task queue with its own worker process:
//
//   - mcpflow: `mcpflow serve` + `mcpflow worker` (bin/mcpflow, sharing one
//     SQLite file); tasks are submitted as an agent does, by calling the
//     submit wrapper demo_submit_job through the HTTP API.
//   - baseline: this binary's hidden `baseline-worker` command, running a
//     minimal workflow (submit_job activity, then sleep + get_job_status
//     activity, as many polls in total as mcpflow made in the round).
//
// Then an RSS phase keeps 1,000 tasks working on one mcpflow worker,
// reads its VmRSS/VmHWM, and cancels them with the cancel signal. Every
// process is stopped at the end, on error and on Ctrl-C.
//
// taskbench imports only mcpflow's workflows package, for the search
// attribute names; it must not wire mcpflow's adapters itself: mcpflow runs
// from its binary and is used through its HTTP API, as in production.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

type options struct {
	n, conc, rounds, sample int
	duration, pollAfter     float64
	timeout                 time.Duration

	skipRSS              bool
	rssN                 int
	rssDuration, rssPoll float64
	rssHold              time.Duration

	temporalBin, mcpflowBin, demoBin string
	keep                             bool

	soak bool
	so   soakOptions
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "baseline-worker" {
		os.Exit(baselineWorkerMain(os.Args[2:]))
	}
	var o options
	flag.IntVar(&o.n, "n", 500, "tasks per target per round")
	flag.IntVar(&o.conc, "c", 32, "submits in flight")
	flag.IntVar(&o.rounds, "rounds", 2, "rounds (each runs mcpflow and the baseline, order alternating); 0 runs only the RSS phase")
	flag.IntVar(&o.sample, "sample", 50, "tasks per round whose history is read")
	flag.Float64Var(&o.duration, "duration", 3, "demo job duration in seconds")
	flag.Float64Var(&o.pollAfter, "poll-after", 1, "demo job poll hint (poll_after_seconds) and baseline sleep, in seconds")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to wait for a round's tasks to finish")
	flag.BoolVar(&o.skipRSS, "skip-rss", false, "skip the RSS phase")
	flag.IntVar(&o.rssN, "rss-n", 1000, "tasks working at once in the RSS phase")
	flag.Float64Var(&o.rssDuration, "rss-duration", 600, "demo job duration in the RSS phase, seconds (longer than the phase: no job finishes on its own)")
	flag.Float64Var(&o.rssPoll, "rss-poll", 5, "demo job poll hint in the RSS phase, seconds (mcpflow's default poll_interval_seconds; 1 s saturates a 2-core box)")
	flag.DurationVar(&o.rssHold, "rss-hold", 15*time.Second, "how long the RSS phase holds all tasks working")
	flag.StringVar(&o.temporalBin, "temporal", "bin/temporal", "Temporal CLI (make tools)")
	flag.StringVar(&o.mcpflowBin, "mcpflow", "bin/mcpflow", "mcpflow binary (make build)")
	flag.StringVar(&o.demoBin, "demo", "bin/demo-mcp", "demo MCP server binary (make build)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp directory (databases and logs)")
	flag.BoolVar(&o.soak, "soak", false, "run the soak instead (make soak): 2 serve + 2 worker processes on PostgreSQL, workers killed at random")
	flag.IntVar(&o.so.n, "soak-n", 1000, "soak: tasks")
	flag.IntVar(&o.so.conc, "soak-c", 16, "soak: submits in flight")
	flag.IntVar(&o.so.threads, "soak-threads", 10, "soak: threads the tasks spread over")
	flag.Float64Var(&o.so.maxDuration, "soak-max-duration", 8, "soak: longest demo job, seconds (each is 1 s to this)")
	flag.DurationVar(&o.so.killEvery, "soak-kill-every", 4*time.Second, "soak: mean time between worker kills")
	flag.DurationVar(&o.so.timeout, "soak-timeout", 20*time.Minute, "soak: how long to wait for every task and notification to settle")
	flag.Float64Var(&o.so.failRate, "soak-webhook-fail", 0.1, "soak: share of webhook POSTs answered 500")
	pgDefault := os.Getenv("TEST_DATABASE_URL")
	if pgDefault == "" {
		pgDefault = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	flag.StringVar(&o.so.pgURL, "pg", pgDefault, "soak: PostgreSQL server (a database is created and dropped on it)")
	flag.Parse()
	if o.n < 1 || o.conc < 1 || o.rounds < 0 || o.sample < 1 || o.rssN < 1 {
		fmt.Fprintln(os.Stderr, "taskbench: -n, -c, -sample and -rss-n must be positive, -rounds not negative")
		os.Exit(2)
	}
	for _, p := range []*string{&o.temporalBin, &o.mcpflowBin, &o.demoBin} {
		if abs, err := filepath.Abs(*p); err == nil {
			*p = abs
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if o.soak {
		err = runSoak(ctx, o, o.so)
	} else {
		err = run(ctx, o)
	}
	interrupted := ctx.Err() != nil
	stop()
	if interrupted {
		fmt.Fprintln(os.Stderr, "taskbench: interrupted; every process it started was stopped")
		os.Exit(130)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskbench:", err)
		os.Exit(1)
	}
}

func progress(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "taskbench: "+format+"\n", a...)
}

func run(ctx context.Context, o options) (err error) {
	host := machine()
	started := time.Now()
	dir, err := os.MkdirTemp("", "taskbench-")
	if err != nil {
		return err
	}
	defer func() {
		if o.keep {
			progress("kept %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	e, err := startEnv(ctx, o, dir)
	defer e.close()
	if err != nil {
		return err
	}
	progress("Temporal dev server on %s, demo MCP server on %s", e.tAddr, e.demoURL)

	rep := &report{o: o, host: host, cal: calibration{}}
	lastPolls := 0
	for r := 0; r < o.rounds; r++ {
		order := []string{"mcpflow", "baseline"}
		if r%2 == 1 && lastPolls > 0 {
			order = []string{"baseline", "mcpflow"}
		}
		var mr, br *roundResult
		for _, target := range order {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			switch target {
			case "mcpflow":
				mr, err = runMcpflow(ctx, e, r, rep.cal)
				if err != nil {
					return fmt.Errorf("round %d, mcpflow: %w", r+1, err)
				}
				lastPolls = mr.polls * o.n / max(mr.n, 1)
				progress("round %d/%d mcpflow: %d tasks, %.1f tasks/s, submit p50 %s p99 %s, %.2f status polls/task, %d submit errors, %d not completed",
					r+1, o.rounds, mr.n, mr.tasksPerSec, ms(pct(mr.lat, 0.5)), ms(pct(mr.lat, 0.99)), float64(mr.polls)/float64(max(mr.n, 1)), len(mr.errs), mr.notDone)
			case "baseline":
				br, err = runBaseline(ctx, e, r, lastPolls, &rep.base0)
				if err != nil {
					return fmt.Errorf("round %d, baseline: %w", r+1, err)
				}
				progress("round %d/%d baseline: %d tasks, %.1f tasks/s, start p50 %s p99 %s, %.2f status polls/task, %d start errors, %d not completed",
					r+1, o.rounds, br.n, br.tasksPerSec, ms(pct(br.lat, 0.5)), ms(pct(br.lat, 0.99)), float64(br.polls)/float64(max(br.n, 1)), len(br.errs), br.notDone)
			}
		}
		rep.mcpflow = append(rep.mcpflow, mr)
		rep.baseline = append(rep.baseline, br)
	}
	if !o.skipRSS {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		progress("RSS phase: %d tasks of %gs, poll hint %gs", o.rssN, o.rssDuration, o.rssPoll)
		rep.rss, err = runRSS(ctx, e)
		if err != nil {
			return fmt.Errorf("RSS phase: %w", err)
		}
	}
	rep.elapsed = time.Since(started)
	rep.print()
	return nil
}

// report prints the results.
type report struct {
	o        options
	host     string
	mcpflow  []*roundResult
	baseline []*roundResult
	cal      calibration
	base0    int
	rss      *rssResult
	elapsed  time.Duration
}

const mib = 1 << 20

func (r *report) print() {
	o := r.o
	fmt.Printf("### Durable tasks: mcpflow vs a bare Temporal baseline (`make bench`, cmd/taskbench)\n\n")
	fmt.Printf("%s · %s · %s · Temporal CLI dev server (SQLite WAL, eager activities) · everything on 127.0.0.1 · run took %s\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), r.host, runtime.Version(), r.elapsed.Round(time.Second))
	if len(r.mcpflow) > 0 {
		fmt.Printf("%d tasks per target per round, %d submits in flight; each demo job runs %gs and answers poll_after_seconds %g "+
			"(mcpflow poll_interval_seconds 1); %d rounds, order alternating, each target on a fresh task queue with fresh worker "+
			"processes; median (min–max) over rounds.\n\n", o.n, o.conc, o.duration, o.pollAfter, o.rounds)
	}

	if len(r.mcpflow) > 0 {
		r.printRounds()
	}
	r.printChecks()
}

func (r *report) printRounds() {
	fmt.Printf("| target | tasks/s | answer p50 ms | answer p99 ms | remote job exists p50 / p99 ms | status polls / task | history events / task | CPU ms / task: Temporal · worker(s) · demo · client | worker peak RSS MiB |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range []struct {
		name string
		rs   []*roundResult
	}{
		{"mcpflow: API submit wrapper → update-with-start → TaskWorkflow (retry-driven polls)", r.mcpflow},
		{"bare Temporal: ExecuteWorkflow → submit_job activity → k × (sleep + get_job_status activity)", r.baseline},
	} {
		jobs := "(before the answer)"
		if t.rs[0].target == "baseline" {
			jobs = fmt.Sprintf("%s / %s", stat(each(t.rs, func(x *roundResult) float64 { return msf(pct(x.jobLat, 0.5)) }), "%.0f"),
				stat(each(t.rs, func(x *roundResult) float64 { return msf(pct(x.jobLat, 0.99)) }), "%.0f"))
		}
		workers := func(x *roundResult) float64 { return msf(x.cpu["worker"]+x.cpu["serve"]) / float64(x.n) }
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s · %s · %s · %s | %s |\n", t.name,
			stat(each(t.rs, func(x *roundResult) float64 { return x.tasksPerSec }), "%.1f"),
			stat(each(t.rs, func(x *roundResult) float64 { return msf(pct(x.lat, 0.5)) }), "%.0f"),
			stat(each(t.rs, func(x *roundResult) float64 { return msf(pct(x.lat, 0.99)) }), "%.0f"),
			jobs,
			stat(each(t.rs, func(x *roundResult) float64 { return float64(x.polls) / float64(x.n) }), "%.2f"),
			stat(each(t.rs, func(x *roundResult) float64 { return float64(medianInt(x.events)) }), "%.0f"),
			stat1(each(t.rs, func(x *roundResult) float64 { return msf(x.cpu["temporal"]) / float64(x.n) })),
			stat1(each(t.rs, workers)),
			stat1(each(t.rs, func(x *roundResult) float64 { return msf(x.cpu["demo"]) / float64(x.n) })),
			stat1(each(t.rs, func(x *roundResult) float64 { return msf(x.cpu["bench"]) / float64(x.n) })),
			stat(each(t.rs, func(x *roundResult) float64 { return float64(x.peakRSS) / mib }), "%.0f"))
	}
}

func (r *report) printChecks() {
	var ratios []float64
	for i := range r.mcpflow {
		ratios = append(ratios, r.mcpflow[i].tasksPerSec/r.baseline[i].tasksPerSec)
	}
	var changed, unchanged, extra, tasks, uncal int
	var extraPerTask []int
	for _, x := range r.mcpflow {
		changed += x.changed
		unchanged += x.unchanged
		extra += x.extra
		tasks += len(x.extraPerTask)
		uncal += x.uncalibrated
		extraPerTask = append(extraPerTask, x.extraPerTask...)
	}
	sort.Ints(extraPerTask)
	var bExtra, bPolls int
	for _, x := range r.baseline {
		bExtra += x.extra
		bPolls += x.unchanged
	}

	fmt.Printf("\n| check | measured | target | |\n|---|---|---|---|\n")
	if med, _, _ := median(ratios); len(ratios) > 0 {
		fmt.Printf("| throughput, mcpflow / baseline (ratio within each round) | **%s** | ≥ 0.7 | %s |\n", stat(ratios, "%.2f"), verdict(med >= 0.7))
	}
	switch {
	case len(r.mcpflow) == 0:
	case unchanged > 0:
		per := float64(extra) / float64(unchanged)
		fmt.Printf("| history events per unchanged poll, finished tasks | **%.2f** = %d extra events / %d unchanged polls (%d sampled tasks, which also made %d changed polls; extra per task min %d, median %d, max %d) | ≤ 1 | %s |\n",
			per, extra, unchanged, tasks, changed, extraPerTask[0], medianInt(extraPerTask), extraPerTask[len(extraPerTask)-1], verdict(per <= 1))
	default:
		fmt.Printf("| history events per unchanged poll, finished tasks | no unchanged poll in the sample (%d tasks) | ≤ 1 | – |\n", tasks)
	}
	if x := r.rss; x != nil {
		if x.heldPolls > 0 {
			per := float64(x.heldEvents) / float64(x.heldPolls)
			fmt.Printf("| history events per unchanged poll, while %d tasks are working (%d sampled tasks over %s) | **%.2f** = %d events / %d status calls | ≤ 1 | %s |\n",
				x.n, x.sampled, x.hold.Round(time.Second), per, x.heldEvents, x.heldPolls, verdict(per <= 1))
		}
		worst := max(x.atWorking.RSS, x.peak, x.afterHold.HWM)
		fmt.Printf("| mcpflow worker RSS, %d of %d tasks working | **VmRSS %.0f MiB** when all were working; peak VmRSS %.0f MiB; VmHWM %.0f MiB (idle %.0f MiB) | ≤ 256 MiB | %s |\n",
			x.working, x.n, float64(x.atWorking.RSS)/mib, float64(x.peak)/mib, float64(x.afterHold.HWM)/mib, float64(x.idle.RSS)/mib, verdict(worst <= 256*mib && x.working >= x.n))
	}
	if e1, ok1 := r.cal[1]; ok1 {
		if e2, ok2 := r.cal[2]; ok2 {
			fmt.Printf("| for reference: mcpflow history events per *changed* poll | %d = E0(2) − E0(1) = %d − %d (poll, row update, status upsert, next wait) | – | |\n", e2-e1, e2, e1)
		}
	}
	if bPolls > 0 {
		fmt.Printf("| for reference: baseline history events per poll | %.2f = %d events / %d polls beyond a %d-event no-poll run | – | |\n",
			float64(bExtra)/float64(bPolls), bExtra, bPolls, r.base0)
	}

	fmt.Printf("\nHow to read it:\n")
	if len(r.mcpflow) > 0 {
		r.printRoundNotes(uncal)
	}
	r.printRSSNotes()
	r.printProblems()
}

func (r *report) printRoundNotes(uncal int) {
	o := r.o
	fmt.Printf("- tasks/s = tasks / (first submit call → last workflow close, from visibility). \"answer\" is what the caller waits for: " +
		"mcpflow's HTTP submit returns after the remote submit_job succeeded and the task row is stored (update-with-start, stage completed); " +
		"the baseline's ExecuteWorkflow returns at the start acknowledgement, so \"remote job exists\" (call → its submit_job activity answered) is its comparable figure.\n")
	fmt.Printf("- The baseline makes as many get_job_status calls in total as mcpflow made in the same or the previous round (spread evenly over its tasks), "+
		"with a %gs workflow timer before each, and writes no rows and no search attributes: it is the floor, not a competitor.\n", o.pollAfter)
	keys := make([]int, 0, len(r.cal))
	for c := range r.cal {
		keys = append(keys, c)
	}
	sort.Ints(keys)
	var calTxt []string
	for _, c := range keys {
		calTxt = append(calTxt, fmt.Sprintf("%d changed → %d events", c, r.cal[c]))
	}
	fmt.Printf("- Events per unchanged poll = Σ (history events − E0(c)) / Σ u over the sampled finished tasks, where c = the task's completed Poll "+
		"activities (polls whose answer changed something and is recorded), u = the demo job's status_calls − c (polls that changed nothing), and "+
		"E0(c) = the history length of calibration tasks that made c polls and no unchanged one (%s). "+
		"The RSS-phase row reads the history length and the demo's status_calls of sampled working tasks (those waiting in a Poll activity) before and after a hold in which nothing changes.\n",
		strings.Join(calTxt, ", "))
	if uncal > 0 {
		fmt.Printf("- %d sampled tasks had a changed-poll count without calibration and are left out of that ratio.\n", uncal)
	}
	fmt.Printf("- CPU from /proc/<pid>/stat over each round's load (10 ms ticks); \"worker(s)\" is mcpflow serve + worker, or the baseline worker; \"client\" is this benchmark process.\n")
}

func (r *report) printRSSNotes() {
	o := r.o
	if x := r.rss; x != nil {
		fmt.Printf("- RSS phase: %d tasks of %gs with poll hint %gs, submitted in %s (answer p50 %s, p99 %s); all working after %s; "+
			"cancelled with the cancel signal in %s (%d ended cancelled); worker VmRSS after cleanup %.0f MiB. "+
			"History growth while working is read on the sampled tasks waiting in a Poll activity when the hold began (%d of %d were not yet and are left out).\n",
			x.n, o.rssDuration, o.rssPoll, x.submitFor.Round(100*time.Millisecond), ms(x.submitP50), ms(x.submitP99),
			x.workingIn.Round(100*time.Millisecond), x.cancelIn.Round(100*time.Millisecond), x.cancelled, float64(x.afterClean.RSS)/mib,
			x.notWaiting, x.notWaiting+x.sampled)
	}
}

func (r *report) printProblems() {
	var problems []string
	for _, x := range append(append([]*roundResult{}, r.mcpflow...), r.baseline...) {
		if len(x.errs) > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d submit errors, first: %s", x.target, len(x.errs), truncate(x.errs[0], 300)))
		}
		if x.notDone > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d tasks did not complete", x.target, x.notDone))
		}
		for _, p := range x.problems {
			problems = append(problems, x.target+": "+p)
		}
	}
	if x := r.rss; x != nil {
		if len(x.errs) > 0 {
			problems = append(problems, fmt.Sprintf("RSS phase: %d submit errors, first: %s", len(x.errs), truncate(x.errs[0], 300)))
		}
		for _, p := range x.problems {
			problems = append(problems, "RSS phase: "+p)
		}
	}
	if len(problems) > 0 {
		fmt.Printf("\nProblems seen (WARN/ERROR log lines of mcpflow serve/worker are grouped by message):\n")
		for _, p := range problems {
			fmt.Printf("- %s\n", p)
		}
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func each(rs []*roundResult, f func(*roundResult) float64) []float64 {
	var out []float64
	for _, x := range rs {
		out = append(out, f(x))
	}
	return out
}

// pct is the nearest-rank percentile of sorted durations.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	i = min(max(i, 0), len(sorted)-1)
	return sorted[i]
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", msf(d)) }

func median(v []float64) (med, lo, hi float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[0], s[len(s)-1]
}

func medianInt(v []int) int {
	if len(v) == 0 {
		return 0
	}
	s := append([]int(nil), v...)
	sort.Ints(s)
	return s[len(s)/2]
}

// stat prints median (min–max), or just the value for one round.
func stat(v []float64, f string) string {
	m, lo, hi := median(v)
	if len(v) == 1 {
		return fmt.Sprintf(f, m)
	}
	return fmt.Sprintf(f+" ("+f+"–"+f+")", m, lo, hi)
}

// stat1 prints just the median with one decimal (CPU cells stay short).
func stat1(v []float64) string {
	m, _, _ := median(v)
	return fmt.Sprintf("%.1f", m)
}
