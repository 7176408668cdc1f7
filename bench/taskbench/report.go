package main

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"
)

// report prints the results.
type report struct {
	o                          options
	host                       string
	shapes                     map[string]*shapeResult
	mcpflow, minimal, baseline []*roundResult
	cal                        calibration
	rss                        *rssResult
	elapsed                    time.Duration
}

const mib = 1 << 20

// targetNames are the report's target rows.
var targetNames = map[string]string{
	targetMcpflow:  "mcpflow: API submit wrapper → update-with-start → TaskWorkflow (row, search attribute, event; retry-driven polls)",
	targetMinimal:  "minimal Temporal: ExecuteWorkflow → submit_job activity → one poll activity retried with NextRetryDelay = poll hint",
	targetBaseline: "timer-loop baseline: ExecuteWorkflow → submit_job activity → k × (sleep + get_job_status activity)",
}

var targetOrder = []string{targetMcpflow, targetMinimal, targetBaseline}

func (r *report) rounds(target string) []*roundResult {
	switch target {
	case targetMcpflow:
		return r.mcpflow
	case targetMinimal:
		return r.minimal
	default:
		return r.baseline
	}
}

func (r *report) print() {
	o := r.o
	fmt.Printf("### Durable tasks: mcpflow vs minimal Temporal vs a timer-loop baseline (`make bench`, bench/taskbench)\n\n")
	fmt.Printf("%s · %s · %s · Temporal CLI dev server (SQLite WAL, eager activities) · everything on 127.0.0.1 · run took %s\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), r.host, runtime.Version(), r.elapsed.Round(time.Second))
	if len(r.mcpflow) > 0 {
		fmt.Printf("%d tasks per target per round, %d submits in flight; each demo job runs %gs and answers poll_after_seconds %g "+
			"(mcpflow poll_interval_seconds 1); %d rounds, order reversed every other round, each target on a fresh task queue with fresh worker "+
			"processes; median (min–max) over rounds; per-task history figures are means over %d sampled tasks per round.\n\n",
			o.n, o.conc, o.duration, o.pollAfter, o.rounds, o.sample)
		r.printRounds()
	}
	if len(r.shapes) > 0 {
		r.printShapes()
	}
	r.printChecks()
	fmt.Printf("\nHow to read it:\n")
	if len(r.mcpflow) > 0 {
		r.printRoundNotes()
	}
	if len(r.shapes) > 0 {
		r.printShapeNotes()
	}
	r.printActionNotes()
	r.printRSSNotes()
	r.printProblems()
}

func (r *report) printRounds() {
	fmt.Printf("| target | tasks/s | answer p50 ms | answer p99 ms | remote job exists p50 / p99 ms | status polls / task | history events / task | state transitions / task | Cloud actions / task (est.): history + heartbeats | CPU ms / task: Temporal · worker(s) · demo · client | worker peak RSS MiB |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, target := range targetOrder {
		rs := r.rounds(target)
		jobs := "(before the answer)"
		if target != targetMcpflow {
			jobs = fmt.Sprintf("%s / %s", stat(each(rs, func(x *roundResult) float64 { return msf(pct(x.jobLat, 0.5)) }), "%.0f"),
				stat(each(rs, func(x *roundResult) float64 { return msf(pct(x.jobLat, 0.99)) }), "%.0f"))
		}
		workers := func(x *roundResult) float64 { return msf(x.cpu["worker"]+x.cpu["serve"]) / float64(x.n) }
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s · %s · %s · %s | %s |\n", targetNames[target],
			stat(each(rs, func(x *roundResult) float64 { return x.tasksPerSec }), "%.1f"),
			stat(each(rs, func(x *roundResult) float64 { return msf(pct(x.lat, 0.5)) }), "%.0f"),
			stat(each(rs, func(x *roundResult) float64 { return msf(pct(x.lat, 0.99)) }), "%.0f"),
			jobs,
			stat(each(rs, func(x *roundResult) float64 { return float64(x.polls) / float64(x.n) }), "%.2f"),
			stat(each(rs, func(x *roundResult) float64 { return mean(x.events) }), "%.1f"),
			stat(each(rs, func(x *roundResult) float64 { return mean(x.transitions) }), "%.1f"),
			stat(each(rs, func(x *roundResult) float64 { return mean(x.actions) }), "%.1f")+" + "+
				stat(each(rs, func(x *roundResult) float64 { hb, _ := heartbeats(x.serverActions, x.n); return hb }), "%.2f"),
			stat(each(rs, func(x *roundResult) float64 { return msf(x.cpu["temporal"]) / float64(x.n) }), "%.1f"),
			stat1(each(rs, workers)),
			stat1(each(rs, func(x *roundResult) float64 { return msf(x.cpu["demo"]) / float64(x.n) })),
			stat1(each(rs, func(x *roundResult) float64 { return msf(x.cpu["bench"]) / float64(x.n) })),
			stat(each(rs, func(x *roundResult) float64 { return float64(x.peakRSS) / mib }), "%.0f"))
	}
}

func (r *report) printShapes() {
	fmt.Printf("\nTask shapes (each demo job ends at an exact status call; median over the tasks of a shape):\n\n")
	fmt.Printf("| target | figure | 1 poll: terminal | 2 polls: changed, terminal | 3 polls: changed, unchanged, terminal | per changed poll (2 − 1) | per unchanged poll (3 − 2) |\n")
	fmt.Printf("|---|---|---|---|---|---|---|\n")
	for _, target := range targetOrder {
		s := r.shapes[target]
		if s == nil {
			continue
		}
		name, _, _ := strings.Cut(targetNames[target], ":")
		for _, f := range []struct {
			name string
			get  func(shapeCell) int
		}{{"history events", cellEvents}, {"state transitions", cellTransitions}, {"Cloud actions from the history (est.)", cellActions}} {
			cells := make([]string, 0, 5)
			for _, k := range shapePolls {
				if c := s.cells[k]; c.tasks > 0 {
					cells = append(cells, fmt.Sprint(f.get(c)))
				} else {
					cells = append(cells, "–")
				}
			}
			for _, d := range [][2]int{{1, 2}, {2, 3}} {
				if v, ok := s.diff(d[0], d[1], f.get); ok {
					cells = append(cells, fmt.Sprint(v))
				} else {
					cells = append(cells, "–")
				}
			}
			fmt.Printf("| %s | %s | %s |\n", name, f.name, strings.Join(cells, " | "))
		}
	}
}

// roundRatios is a/b per round for a figure of two targets.
func roundRatios(a, b []*roundResult, f func(*roundResult) float64) []float64 {
	var out []float64
	for i := range a {
		if i < len(b) && a[i] != nil && b[i] != nil && f(b[i]) > 0 {
			out = append(out, f(a[i])/f(b[i]))
		}
	}
	return out
}

func (r *report) printChecks() {
	fmt.Printf("\n| figure | measured | target | |\n|---|---|---|---|\n")
	m := r.shapes[targetMcpflow]
	if c := m.cell(3); c.tasks > 0 {
		fmt.Printf("| history events per 3-poll task (1 changed, 1 unchanged, 1 terminal poll) | **%d** (minimal Temporal %s, timer loop %s) | ≤ 25 | %s |\n",
			c.events, r.shapes[targetMinimal].cellText(3, cellEvents), r.shapes[targetBaseline].cellText(3, cellEvents), verdict(c.events <= 25))
	}
	if d, ok := m.diff(1, 2, cellEvents); ok {
		fmt.Printf("| history events per changed poll | **%d** = %d − %d (2-poll task − 1-poll task) | ≤ 6 | %s |\n",
			d, m.cells[2].events, m.cells[1].events, verdict(d <= 6))
	}
	if d, ok := m.diff(2, 3, cellEvents); ok {
		fmt.Printf("| history events per unchanged poll, task shapes | **%d** = %d − %d (3-poll task − 2-poll task) | 0 | %s |\n",
			d, m.cells[3].events, m.cells[2].events, verdict(d == 0))
	}
	var changed, unchanged, extra, tasks int
	var extraPerTask []int
	for _, x := range r.mcpflow {
		changed += x.changed
		unchanged += x.unchanged
		extra += x.extra
		tasks += len(x.extraPerTask)
		extraPerTask = append(extraPerTask, x.extraPerTask...)
	}
	sort.Ints(extraPerTask)
	switch {
	case len(r.mcpflow) == 0:
	case unchanged > 0:
		per := float64(extra) / float64(unchanged)
		fmt.Printf("| history events per unchanged poll, finished load tasks | **%.2f** = %d extra events / %d unchanged polls (%d sampled tasks, which also made %d changed polls; extra per task min %d, median %d, max %d) | 0 | %s |\n",
			per, extra, unchanged, tasks, changed, extraPerTask[0], medianInt(extraPerTask), extraPerTask[len(extraPerTask)-1], verdict(extra == 0))
	default:
		fmt.Printf("| history events per unchanged poll, finished load tasks | no unchanged poll in the sample (%d calibrated tasks) | 0 | – |\n", tasks)
	}
	if x := r.rss; x != nil && x.heldPolls > 0 {
		per := float64(x.heldEvents) / float64(x.heldPolls)
		fmt.Printf("| history events per unchanged poll, while %d tasks are working (%d sampled tasks over %s) | **%.2f** = %d events / %d status calls | 0 | %s |\n",
			x.n, x.sampled, x.hold.Round(time.Second), per, x.heldEvents, x.heldPolls, verdict(x.heldEvents == 0))
	}
	if tps := roundRatios(r.mcpflow, r.minimal, func(x *roundResult) float64 { return x.tasksPerSec }); len(tps) > 0 {
		med, _, _ := median(tps)
		fmt.Printf("| tasks/s, mcpflow / minimal Temporal (ratio within each round) | **%s** | ≥ 0.7 | %s |\n", stat(tps, "%.2f"), verdict(med >= 0.7))
	}
	cpu := func(x *roundResult) float64 { return msf(x.cpu["temporal"]) / float64(max(x.n, 1)) }
	if rs := roundRatios(r.mcpflow, r.minimal, cpu); len(rs) > 0 {
		med, _, _ := median(rs)
		fmt.Printf("| Temporal server CPU per task, mcpflow / minimal Temporal (ratio within each round) | **%s** (%s vs %s ms) | ≤ 1.5 | %s |\n",
			stat(rs, "%.2f"), stat1(each(r.mcpflow, cpu)), stat1(each(r.minimal, cpu)), verdict(med <= 1.5))
	}
	if x := r.rss; x != nil {
		worst := max(x.atWorking.RSS, x.peak, x.afterHold.HWM)
		fmt.Printf("| mcpflow worker RSS, %d of %d tasks working | **VmRSS %.0f MiB** when all were working; peak VmRSS %.0f MiB; VmHWM %.0f MiB (idle %.0f MiB) | ≤ 256 MiB | %s |\n",
			x.working, x.n, float64(x.atWorking.RSS)/mib, float64(x.peak)/mib, float64(x.afterHold.HWM)/mib, float64(x.idle.RSS)/mib, verdict(worst <= 256*mib && x.working >= x.n))
	}
	if tps := roundRatios(r.mcpflow, r.baseline, func(x *roundResult) float64 { return x.tasksPerSec }); len(tps) > 0 {
		fmt.Printf("| for reference: tasks/s, mcpflow / timer-loop baseline | %s | – | |\n", stat(tps, "%.2f"))
	}
	for _, f := range []struct {
		name string
		get  func(*roundResult) float64
	}{
		{"history events per task", func(x *roundResult) float64 { return mean(x.events) }},
		{"state transitions per task", func(x *roundResult) float64 { return mean(x.transitions) }},
		{"Cloud actions per task (est., history + heartbeats)", func(x *roundResult) float64 {
			hb, _ := heartbeats(x.serverActions, x.n)
			return mean(x.actions) + hb
		}},
	} {
		if rs := roundRatios(r.mcpflow, r.minimal, f.get); len(rs) > 0 {
			fmt.Printf("| for reference: %s, mcpflow / minimal Temporal | %s | – | |\n", f.name, stat(rs, "%.2f"))
		}
	}
}

func (s *shapeResult) cell(k int) shapeCell {
	if s == nil {
		return shapeCell{}
	}
	return s.cells[k]
}

func (s *shapeResult) cellText(k int, f func(shapeCell) int) string {
	if c := s.cell(k); c.tasks > 0 {
		return fmt.Sprint(f(c))
	}
	return "–"
}

func (r *report) printRoundNotes() {
	o := r.o
	fmt.Printf("- tasks/s = tasks / (first submit call → last workflow close, from visibility). \"answer\" is what the caller waits for: " +
		"mcpflow's HTTP submit returns after the remote submit_job succeeded and the task row is stored (update-with-start, stage completed); " +
		"the bare targets' ExecuteWorkflow returns at the start acknowledgement, so \"remote job exists\" (call → its submit_job activity answered) is their comparable figure.\n")
	fmt.Printf("- minimal Temporal polls each job until it is terminal: its one poll activity waits %gs before its first get_job_status call "+
		"(the submit answer has no hint, and mcpflow waits its poll interval too; waiting inside the activity adds no history), and every "+
		"non-terminal answer fails the attempt with a benign error whose NextRetryDelay is the job's poll_after_seconds. Retries are not written to the history.\n", o.pollAfter)
	fmt.Printf("- The timer-loop baseline makes as many get_job_status calls in total as mcpflow made in the same or the previous round (spread evenly over its tasks), "+
		"with a %gs workflow timer before each. Neither bare target writes rows, search attributes or events.\n", o.pollAfter)
	fmt.Printf("- History events, state transitions and Cloud actions per task are means over the sampled tasks' executions, every run of a continue-as-new chain " +
		"included (the latest run's WorkflowExecutionStarted names the run it continued; each run is read with GetWorkflowHistory and " +
		"DescribeWorkflowExecution, whose WorkflowExecutionInfo.StateTransitionCount is summed).\n")
	keys := make([]int, 0, len(r.cal))
	for c := range r.cal {
		keys = append(keys, c)
	}
	sort.Ints(keys)
	var calTxt []string
	for _, c := range keys {
		calTxt = append(calTxt, fmt.Sprintf("%d changed → %d events", c, r.cal[c]))
	}
	uncal := 0
	for _, x := range r.mcpflow {
		uncal += x.uncalibrated
	}
	fmt.Printf("- Events per unchanged poll of finished load tasks = Σ (history events − E0(c)) / Σ u over mcpflow's sampled tasks, where c = the task's changed polls "+
		"(completed Poll activities, or report signals in the report shape: polls whose answer changed something and is recorded), u = the demo job's status_calls − c (polls that changed nothing), and "+
		"E0(c) = the history length of the 1- and 2-poll task shapes, which make c polls and no unchanged one (%s). "+
		"The while-working row reads the history length and the demo's status_calls of sampled working tasks (those waiting in a Poll activity) before and after a hold in which nothing changes.\n",
		strings.Join(calTxt, ", "))
	if uncal > 0 {
		fmt.Printf("- %d sampled tasks had a changed-poll count without calibration (or more than one run) and are left out of that ratio.\n", uncal)
	}
	fmt.Printf("- CPU from /proc/<pid>/stat over each round's load, first submit to last close (10 ms ticks); \"Temporal\" is the dev server process (frontend, history, matching and SQLite in one); " +
		"\"worker(s)\" is mcpflow serve + worker, or the bare targets' worker; \"client\" is this benchmark process.\n")
}

func (r *report) printShapeNotes() {
	defer func() {
		for _, target := range targetOrder {
			c := r.shapes[target].cell(3)
			if c.tasks == 0 {
				continue
			}
			types := make([]string, 0, len(c.byType))
			for t := range c.byType {
				types = append(types, t)
			}
			sort.Strings(types)
			var parts []string
			for _, t := range types {
				parts = append(parts, fmt.Sprintf("%s %d", strings.TrimPrefix(t, "EVENT_TYPE_"), c.byType[t]))
			}
			name, _, _ := strings.Cut(targetNames[target], ":")
			fmt.Printf("  - %s, 3-poll task, %d events: %s.\n", name, c.events, strings.Join(parts, ", "))
		}
	}()
	fmt.Printf("- Task shapes: %d tasks per shape and target, on their own task queue before the rounds; each demo job is submitted with finish_at_status_call = the shape's polls "+
		"(poll hint %gs), so it answers running until that call. For mcpflow the first poll is always a change (submitted → working) and the terminal poll too: "+
		"the 3-poll shape is changed, unchanged, terminal. A task counts only if the demo saw exactly the shape's status calls (and, for mcpflow, it recorded the shape's changed polls).\n",
		shapeCopies, r.o.pollAfter)
}

func (r *report) printActionNotes() {
	fmt.Printf("- Cloud actions are estimated from each run's history after https://docs.temporal.io/cloud/actions: 1 per WorkflowExecutionStarted (each continue-as-new run counts, "+
		"an update-with-start bills its start here), 1 per WorkflowExecutionUpdateAccepted, 1 per ActivityTaskScheduled plus ActivityTaskStarted.attempt − 1 "+
		"(every retry, the unrecorded failed attempts of retry-driven polling included; mcpflow's poll activity, which the run closes with pending, has no started event: "+
		"its retries are the task's status calls, from the demo server), 1 per TimerStarted, 1 per WorkflowExecutionSignaled, 1 per "+
		"UpsertWorkflowSearchAttributes, 1 per workflow task whose completion recorded markers (local activities; all markers of one workflow task are one action) "+
		"plus WorkflowTaskCompleted's metering_metadata.nonfirst_local_activity_execution_attempts, 1 per WorkflowExecutionOptionsUpdated and 2 per child workflow "+
		"start. Not in a history: %s. Of these the tables add activity heartbeats, read from the dev server's own action counter "+
		"(grpc_RecordActivityTaskHeartbeat) over the load and divided by its tasks; the other three do not occur here (the benchmark "+
		"sends no query and no update a validator rejects, and no local activity runs long enough to heartbeat its workflow task).\n", notCounted)
	for _, target := range targetOrder {
		s := r.shapes[target]
		if c := s.cell(3); c.tasks > 0 {
			name, _, _ := strings.Cut(targetNames[target], ":")
			hb := ""
			if s.hbOK {
				hb = fmt.Sprintf("; plus %.2f activity heartbeats per task counted by the server during the task shapes", s.heartbeats)
			}
			fmt.Printf("  - %s, 3-poll task: %d = %s%s.\n", name, c.actions, c.parts, hb)
		}
	}
	var lines []string
	for _, target := range targetOrder {
		rs := r.rounds(target)
		sum := map[string]float64{}
		n := 0
		for _, x := range rs {
			if x == nil || x.serverActions == nil {
				continue
			}
			n += x.n
			for k, v := range x.serverActions {
				sum[k] += v
			}
		}
		if n == 0 || len(sum) == 0 {
			continue
		}
		keys := make([]string, 0, len(sum))
		for k := range sum {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		total := 0.0
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, sum[k]/float64(n)))
			total += sum[k]
		}
		name, _, _ := strings.Cut(targetNames[target], ":")
		lines = append(lines, fmt.Sprintf("  - %s: %.2f = %s", name, total/float64(n), strings.Join(parts, ", ")))
	}
	if len(lines) > 0 {
		fmt.Printf("- For comparison, the dev server's own `action` counter (its metrics endpoint, namespace default) per task over the load rounds; "+
			"it counts API calls and commands as the open-source server meters them (Cloud's bill may differ):\n%s\n", strings.Join(lines, "\n"))
	}
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
	for _, target := range targetOrder {
		if s := r.shapes[target]; s != nil {
			for _, p := range s.problems {
				problems = append(problems, "task shapes, "+target+": "+p)
			}
		}
	}
	for _, target := range targetOrder {
		for _, x := range r.rounds(target) {
			if x == nil {
				continue
			}
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

// mean is the average of v (0 for none).
func mean(v []int) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0
	for _, x := range v {
		s += x
	}
	return float64(s) / float64(len(v))
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
