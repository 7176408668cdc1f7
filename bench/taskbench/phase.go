package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
	"go.temporal.io/sdk/client"
)

// Target names, as the report and the progress lines spell them.
const (
	targetMcpflow  = "mcpflow"
	targetMinimal  = "minimal"
	targetBaseline = "baseline"
)

// roundResult is one target's measurement in one round.
type roundResult struct {
	target      string
	n           int             // accepted submits
	errs        []string        // failed submits
	notDone     int             // tasks that did not complete successfully
	tasksPerSec float64         // n / (first submit → last close)
	lat         []time.Duration // answer latency to the caller, sorted
	jobLat      []time.Duration // bare targets: call → remote submit_job answered, sorted
	polls       int             // status calls the demo served for these tasks
	cpu         map[string]time.Duration
	peakRSS     int64 // worker
	problems    []string

	// The sampled tasks' executions (every run): history events, state
	// transitions and estimated Cloud actions per task, and the actions by
	// category summed over the sample.
	events, transitions, actions []int
	actionSum                    cloudActions
	// serverActions is the dev server's own action counter over the load,
	// by action_type (nil when it could not be read).
	serverActions map[string]float64

	// mcpflow: the sampled tasks' changed and unchanged polls and their
	// history events beyond the zero-unchanged-poll calibration.
	changed, unchanged, extra int
	uncalibrated              int // sampled tasks whose changed-poll count had no calibration
	extraPerTask              []int
}

// addSample records one sampled task's execution.
func (r *roundResult) addSample(h history) {
	r.events = append(r.events, h.events)
	r.transitions = append(r.transitions, int(h.transitions))
	r.actions = append(r.actions, h.actions.Total())
	r.actionSum.add(h.actions)
}

// calibration is the history length of tasks that made no unchanged poll,
// by number of changed polls (from the task shapes).
type calibration map[int]int

// jobArgs are the demo submit_job arguments of a load task.
func jobArgs(label string, durationSeconds, pollAfter float64) map[string]any {
	return map[string]any{"duration_seconds": durationSeconds, "poll_after_seconds": pollAfter, "label": label}
}

// loadMeter measures a round's load: CPU of the named processes and the
// dev server's action counter.
type loadMeter struct {
	e       *benchEnv
	cpu     cpuMeter
	cpu0    map[string]time.Duration
	action0 map[string]float64
}

func startLoadMeter(ctx context.Context, e *benchEnv, cpu cpuMeter) *loadMeter {
	m := &loadMeter{e: e, cpu: cpu, cpu0: cpu.snap()}
	m.action0, _ = e.serverActions(ctx)
	return m
}

// stop returns the CPU used and the actions counted since the start. The
// dev server publishes its counters with a delay, so the final read waits
// until two reads half a second apart agree (at most 15 s).
func (m *loadMeter) stop(ctx context.Context) (map[string]time.Duration, map[string]float64) {
	cpu := cpuDelta(m.cpu0, m.cpu.snap())
	if m.action0 == nil {
		return cpu, nil
	}
	var a1 map[string]float64
	deadline := time.Now().Add(15 * time.Second)
	for {
		a, err := m.e.serverActions(ctx)
		if err != nil {
			return cpu, nil
		}
		if sameCounts(a, a1) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		a1 = a
		time.Sleep(500 * time.Millisecond)
	}
	d := map[string]float64{}
	for k, v := range a1 {
		if v-m.action0[k] > 0 {
			d[k] = v - m.action0[k]
		}
	}
	return cpu, d
}

func sameCounts(a, b map[string]float64) bool {
	if a == nil || b == nil || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// heartbeatAction are the dev server's action types of activity
// heartbeats: billed in Cloud, never written to a history.
var heartbeatActions = []string{"grpc_RecordActivityTaskHeartbeat", "grpc_RecordActivityTaskHeartbeatById"}

// heartbeats returns the activity heartbeats per task the dev server
// counted, and whether it could be read.
func heartbeats(actions map[string]float64, n int) (float64, bool) {
	if actions == nil || n == 0 {
		return 0, false
	}
	var hb float64
	for _, k := range heartbeatActions {
		hb += actions[k]
	}
	return hb / float64(n), true
}

// runMcpflow runs one mcpflow round on a fresh task queue (fresh serve and
// worker processes and SQLite file).
func runMcpflow(ctx context.Context, e *benchEnv, round int, cal calibration) (*roundResult, error) {
	o := e.opts
	queue := fmt.Sprintf("mcpflow-r%d", round+1)
	m, err := startMcpflow(ctx, e, queue, o.conc)
	if err != nil {
		return nil, err
	}
	defer m.stop()
	meter := startLoadMeter(ctx, e, cpuMeter{"temporal": e.temporal.PID(), "demo": e.demo.PID(), "serve": m.serve.PID(), "worker": m.worker.PID(), "bench": 0})
	stopRSS := rssPeak(m.worker.PID())
	thread := fmt.Sprintf("r%d", round+1)
	sub := submitAll(ctx, o.n, o.conc, func(i int) string { return fmt.Sprintf("m%d-%d", round+1, i) },
		func(ctx context.Context, i int, label string) (string, error) {
			return m.submit(ctx, thread, jobArgs(label, o.duration, o.pollAfter))
		})
	closed, werr := waitClosed(ctx, e.tc, queue, sub.ids, o.timeout)
	cpu, actions := meter.stop(ctx)
	r := &roundResult{target: targetMcpflow, n: len(sub.ids), errs: sub.errs, lat: sub.lat,
		cpu: cpu, serverActions: actions, peakRSS: stopRSS()}
	end, bad := lastClose(sub.ids, closed)
	r.notDone = bad
	r.tasksPerSec = float64(len(sub.ids)) / end.Sub(sub.start).Seconds()
	if werr != nil {
		r.problems = append(r.problems, werr.Error())
	}
	// Every task must have ended completed: its final status upsert.
	if done, err := count(ctx, e.tc, fmt.Sprintf(`TaskQueue=%q AND McpThreadId=%q AND McpTaskStatus="completed"`, queue, thread)); err == nil && int(done) != len(sub.ids) {
		r.problems = append(r.problems, fmt.Sprintf("%d of %d tasks have McpTaskStatus=completed", done, len(sub.ids)))
	}

	stats, err := e.jobStats(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range sub.ids {
		r.polls += stats[sub.labels[id]].StatusCalls
	}
	// History of a sample, and the task rows of the same sample through
	// the API (the projection a user reads).
	var mu sync.Mutex
	err = parallel(sample(sub.ids, o.sample), 8, func(id string) error {
		h, err := readExecution(ctx, e.tc, id, true)
		if err != nil {
			return err
		}
		var row struct {
			Status string `json:"status"`
		}
		rowErr := m.get(ctx, "/api/threads/"+thread+"/mcp-tasks/"+id, &row)
		mu.Lock()
		defer mu.Unlock()
		if rowErr != nil || row.Status != "completed" {
			r.problems = append(r.problems, fmt.Sprintf("task %s: row status %q (%v)", id, row.Status, rowErr))
		}
		h = h.withPendingRetries(stats[sub.labels[id]].StatusCalls)
		r.addSample(h)
		base, ok := cal[h.changed]
		if !ok || h.runs != 1 {
			r.uncalibrated++
			return nil
		}
		u := stats[sub.labels[id]].StatusCalls - h.changed
		r.changed += h.changed
		r.unchanged += u
		r.extra += h.events - base
		r.extraPerTask = append(r.extraPerTask, h.events-base)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Ints(r.extraPerTask)
	r.problems = append(r.problems, m.logProblems()...)
	return r, nil
}

// bareStart starts one task of a bare Temporal target (baseline or
// minimal) on queue; polls is the baseline's fixed poll count.
func bareStart(ctx context.Context, e *benchEnv, kind, queue, id string, args map[string]any, polls int) error {
	interval := time.Duration(e.opts.pollAfter * float64(time.Second))
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: queue}
	var err error
	if kind == targetMinimal {
		_, err = e.tc.ExecuteWorkflow(ctx, opts, minimalWorkflowName, minimalInput{Args: args, Interval: interval})
	} else {
		_, err = e.tc.ExecuteWorkflow(ctx, opts, baselineWorkflowName, baselineInput{Args: args, Polls: polls, Interval: interval})
	}
	return err
}

// runBare runs one round of a bare Temporal target on a fresh task queue
// with a fresh worker process: kind baseline makes totalPolls status calls
// in all (as mcpflow did), spread evenly over the tasks; kind minimal
// polls each job until it is terminal.
func runBare(ctx context.Context, e *benchEnv, kind string, round, totalPolls int) (*roundResult, error) {
	o := e.opts
	queue := fmt.Sprintf("%s-r%d", kind, round+1)
	w, err := startBaselineWorker(ctx, e, queue)
	if err != nil {
		return nil, err
	}
	defer w.Stop(30 * time.Second)
	per, extra := totalPolls/o.n, totalPolls%o.n
	polls := func(i int) int {
		if i < extra {
			return per + 1
		}
		return per
	}
	meter := startLoadMeter(ctx, e, cpuMeter{"temporal": e.temporal.PID(), "demo": e.demo.PID(), "worker": w.PID(), "bench": 0})
	stopRSS := rssPeak(w.PID())
	sub := submitAll(ctx, o.n, o.conc, func(i int) string { return fmt.Sprintf("%s%d-%d", kind[:3], round+1, i) },
		func(ctx context.Context, i int, label string) (string, error) {
			id := fmt.Sprintf("%s-r%d-%d", kind, round+1, i)
			return id, bareStart(ctx, e, kind, queue, id, jobArgs(label, o.duration, o.pollAfter), polls(i))
		})
	closed, werr := waitClosed(ctx, e.tc, queue, sub.ids, o.timeout)
	cpu, actions := meter.stop(ctx)
	r := &roundResult{target: kind, n: len(sub.ids), errs: sub.errs, lat: sub.lat,
		cpu: cpu, serverActions: actions, peakRSS: stopRSS()}
	end, bad := lastClose(sub.ids, closed)
	r.notDone = bad
	r.tasksPerSec = float64(len(sub.ids)) / end.Sub(sub.start).Seconds()
	if werr != nil {
		r.problems = append(r.problems, werr.Error())
	}
	stats, err := e.jobStats(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range sub.ids {
		r.polls += stats[sub.labels[id]].StatusCalls
	}
	// When did each remote job exist (the submit activity's answer)?
	var mu sync.Mutex
	err = parallel(sub.ids, 16, func(id string) error {
		res, err := baselineResult(ctx, e.tc, id)
		if err != nil {
			return nil // counted in notDone
		}
		mu.Lock()
		r.jobLat = append(r.jobLat, res.At.Sub(sub.called[id]))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(r.jobLat, func(i, j int) bool { return r.jobLat[i] < r.jobLat[j] })
	err = parallel(sample(sub.ids, o.sample), 8, func(id string) error {
		h, err := readExecution(ctx, e.tc, id, true)
		if err != nil {
			return err
		}
		mu.Lock()
		r.addSample(h)
		mu.Unlock()
		return nil
	})
	return r, err
}

// rssResult is the RSS phase's measurement.
type rssResult struct {
	n, working            int
	idle, atWorking       benchproc.MemStat
	peak                  int64 // VmRSS max while submitting and holding
	afterHold, afterClean benchproc.MemStat
	submitP50, submitP99  time.Duration
	submitFor, workingIn  time.Duration
	cancelIn              time.Duration
	hold                  time.Duration
	cancelled             int64
	heldEvents, heldPolls int // history events and status calls added while holding, over the sampled tasks
	sampled               int
	notWaiting            int // sampled tasks left out: not in their poll wait when the hold began
	errs                  []string
	problems              []string
}

// runRSS submits rssN long tasks, waits until all are working, reads the
// worker's memory, holds, then cancels them all with the cancel signal and
// waits until every workflow ended.
func runRSS(ctx context.Context, e *benchEnv) (*rssResult, error) {
	o := e.opts
	queue := "mcpflow-rss"
	m, err := startMcpflow(ctx, e, queue, o.conc)
	if err != nil {
		return nil, err
	}
	defer m.stop()
	res := &rssResult{}
	res.idle, _ = benchproc.ReadMem(m.worker.PID())
	stopRSS := rssPeak(m.worker.PID())
	t0 := time.Now()
	sub := submitAll(ctx, o.rssN, o.conc, func(i int) string { return fmt.Sprintf("rss-%d", i) },
		func(ctx context.Context, i int, label string) (string, error) {
			return m.submit(ctx, "rss", jobArgs(label, o.rssDuration, o.rssPoll))
		})
	res.submitFor = time.Since(t0)
	res.n, res.errs = len(sub.ids), sub.errs
	if len(sub.lat) > 0 {
		res.submitP50, res.submitP99 = pct(sub.lat, 0.50), pct(sub.lat, 0.99)
	}
	working := fmt.Sprintf(`TaskQueue=%q AND McpTaskStatus="working"`, queue)
	// Wait until all are working, while no job can have finished yet.
	jobEnd := t0.Add(time.Duration(o.rssDuration * float64(time.Second)))
	deadline := jobEnd.Add(-o.rssHold - 20*time.Second)
	if d := t0.Add(o.timeout); d.Before(deadline) {
		deadline = d
	}
	for {
		c, err := count(ctx, e.tc, working)
		if err == nil {
			res.working = int(c)
		}
		if res.working >= res.n || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	res.workingIn = time.Since(t0)
	progress("RSS phase: %d tasks submitted in %s, %d working after %s; holding %s",
		res.n, res.submitFor.Round(time.Second), res.working, res.workingIn.Round(time.Second), o.rssHold)
	if res.working < res.n {
		res.problems = append(res.problems, fmt.Sprintf("only %d of %d tasks were working after %s", res.working, res.n, res.workingIn.Round(time.Second)))
	}
	res.atWorking, _ = benchproc.ReadMem(m.worker.PID())

	// Hold: the tasks keep polling, nothing changes. Their history must
	// not grow with the polls. Only tasks already in their retry-driven
	// wait count (a task that turned working moments ago still has its
	// first wait, a timer, ahead of it).
	var ids []string
	ev0, err := historyLengths(ctx, e.tc, sample(sub.ids, o.sample), func(h history) bool {
		if !h.pollWait {
			res.notWaiting++
		}
		return h.pollWait
	})
	if err != nil {
		return nil, err
	}
	for id := range ev0 {
		ids = append(ids, id)
	}
	st0, err := e.jobStats(ctx)
	if err != nil {
		return nil, err
	}
	hold := o.rssHold
	if left := time.Until(jobEnd) - 10*time.Second; hold > left {
		hold = max(left, 0) // the first jobs must still be running at the end of the hold
		res.problems = append(res.problems, fmt.Sprintf("hold shortened to %s so no job completes during it", hold.Round(time.Second)))
	}
	res.hold = hold
	select {
	case <-time.After(hold):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ev1, err := historyLengths(ctx, e.tc, ids, nil)
	if err != nil {
		return nil, err
	}
	st1, err := e.jobStats(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		l := sub.labels[id]
		res.heldEvents += ev1[id] - ev0[id]
		res.heldPolls += st1[l].StatusCalls - st0[l].StatusCalls
	}
	res.sampled = len(ids)
	res.afterHold, _ = benchproc.ReadMem(m.worker.PID())
	res.peak = stopRSS()

	// Cancel everything the way an operator does (`temporal workflow signal --name cancel`).
	progress("RSS phase: worker VmRSS %.0f MiB with all working; cancelling %d tasks", float64(res.atWorking.RSS)/mib, res.n)
	t1 := time.Now()
	if err := parallel(sub.ids, o.conc, func(id string) error {
		return e.tc.SignalWorkflow(ctx, id, "", "cancel", "taskbench cleanup")
	}); err != nil {
		res.problems = append(res.problems, "cancel signal: "+err.Error())
	}
	if _, err := waitClosed(ctx, e.tc, queue, sub.ids, o.timeout); err != nil {
		res.problems = append(res.problems, err.Error())
	}
	res.cancelIn = time.Since(t1)
	res.cancelled, _ = count(ctx, e.tc, fmt.Sprintf(`TaskQueue=%q AND McpTaskStatus="cancelled"`, queue))
	if int(res.cancelled) != res.n {
		res.problems = append(res.problems, fmt.Sprintf("%d of %d tasks ended cancelled", res.cancelled, res.n))
	}
	res.afterClean, _ = benchproc.ReadMem(m.worker.PID())
	res.problems = append(res.problems, m.logProblems()...)
	return res, nil
}

// historyLengths reads the history length of workflows, keeping those
// keep accepts (all when keep is nil).
func historyLengths(ctx context.Context, tc client.Client, ids []string, keep func(history) bool) (map[string]int, error) {
	var mu sync.Mutex
	out := map[string]int{}
	err := parallel(ids, 8, func(id string) error {
		h, err := readHistory(ctx, tc, id)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if keep == nil || keep(h) {
			out[id] = h.events
		}
		return nil
	})
	return out, err
}
