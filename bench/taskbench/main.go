// Command taskbench measures mcpflow's durable tasks against two bare
// Temporal targets, side by side in one run (make bench), and prints
// markdown tables with the targets of issue 15.
//
// It starts everything itself on 127.0.0.1: a Temporal dev server
// (bin/temporal, fresh SQLite file in a temp directory), the demo MCP
// server over streamable HTTP (bin/demo-mcp), and per target and round a
// fresh task queue with its own worker process:
//
//   - mcpflow: `mcpflow serve` + `mcpflow worker` (bin/mcpflow, sharing one
//     SQLite file); tasks are submitted as an agent does, by calling the
//     submit wrapper demo_submit_job through the HTTP API.
//   - minimal Temporal: this binary's hidden `baseline-worker` command
//     running MinimalTask (submit_job activity, then one poll activity
//     whose retries, delayed by the job's poll hint with NextRetryDelay,
//     are the polls; no row, no search attribute, no event): the honest
//     floor.
//   - timer-loop baseline: the same worker running BaselineTask (submit_job
//     activity, then sleep + get_job_status activity, as many polls in
//     total as mcpflow made in the round).
//
// Before the rounds, the task shapes run a few tasks per target whose demo
// job ends at an exact status call (1, 2 or 3 polls), so the history,
// state transitions and Cloud actions of a changed and an unchanged poll
// are measured exactly (shape.go). After them an RSS phase keeps 1,000
// tasks working on one mcpflow worker, reads its VmRSS/VmHWM, and cancels
// them with the cancel signal. Every process is stopped at the end, on
// error and on Ctrl-C.
//
// Per target it reports tasks/s, history events, state transitions
// (DescribeWorkflowExecution) and estimated Temporal Cloud actions per task
// (history.go says what is counted), and the CPU of the dev server and the
// other processes per task (/proc/<pid>/stat).
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
	"syscall"
	"time"
)

type options struct {
	n, conc, rounds, sample int
	duration, pollAfter     float64
	timeout                 time.Duration

	skipShapes           bool
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
	flag.IntVar(&o.rounds, "rounds", 2, "rounds (each runs mcpflow, minimal Temporal and the timer-loop baseline, order alternating); 0 runs only the RSS phase")
	flag.IntVar(&o.sample, "sample", 50, "tasks per round whose history is read")
	flag.Float64Var(&o.duration, "duration", 3, "demo job duration in seconds")
	flag.Float64Var(&o.pollAfter, "poll-after", 1, "demo job poll hint (poll_after_seconds), baseline sleep and minimal first-poll wait, in seconds")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to wait for a round's tasks to finish")
	flag.BoolVar(&o.skipShapes, "skip-shapes", false, "skip the task shapes (the per-poll history figures)")
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
	if !o.skipShapes && o.rounds > 0 {
		rep.shapes, rep.cal, err = runShapes(ctx, e)
		if err != nil {
			return err
		}
	}
	lastPolls := 0
	for r := 0; r < o.rounds; r++ {
		// The order reverses every other round (once mcpflow's poll count,
		// which the baseline copies, is known).
		order := []string{targetMcpflow, targetMinimal, targetBaseline}
		if r%2 == 1 && lastPolls > 0 {
			order = []string{targetBaseline, targetMinimal, targetMcpflow}
		}
		got := map[string]*roundResult{}
		for _, target := range order {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var x *roundResult
			switch target {
			case targetMcpflow:
				x, err = runMcpflow(ctx, e, r, rep.cal)
				if err == nil {
					lastPolls = x.polls * o.n / max(x.n, 1)
				}
			case targetMinimal:
				x, err = runBare(ctx, e, targetMinimal, r, 0)
			case targetBaseline:
				x, err = runBare(ctx, e, targetBaseline, r, lastPolls)
			}
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, target, err)
			}
			got[target] = x
			progress("round %d/%d %s: %d tasks, %.1f tasks/s, answer p50 %s p99 %s, %.2f status polls/task, %.1f events/task, %.1f transitions/task, %.1f actions/task, server CPU %.1f ms/task, %d submit errors, %d not completed",
				r+1, o.rounds, target, x.n, x.tasksPerSec, ms(pct(x.lat, 0.5)), ms(pct(x.lat, 0.99)), float64(x.polls)/float64(max(x.n, 1)),
				mean(x.events), mean(x.transitions), mean(x.actions), msf(x.cpu["temporal"])/float64(max(x.n, 1)), len(x.errs), x.notDone)
		}
		rep.mcpflow = append(rep.mcpflow, got[targetMcpflow])
		rep.minimal = append(rep.minimal, got[targetMinimal])
		rep.baseline = append(rep.baseline, got[targetBaseline])
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
