package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
)

// roundResult is one target's measurement in one round.
type roundResult struct {
	target      string
	n           int             // accepted submits
	errs        []string        // failed submits
	notDone     int             // tasks that did not complete successfully
	tasksPerSec float64         // n / (first submit → last close)
	lat         []time.Duration // answer latency to the caller, sorted
	jobLat      []time.Duration // baseline: call → remote submit_job answered, sorted
	polls       int             // status calls the demo served for these tasks
	events      []int           // history length of the sampled tasks
	cpu         map[string]time.Duration
	peakRSS     int64 // worker
	problems    []string

	// mcpflow: the sampled tasks' changed and unchanged polls and their
	// history events beyond the zero-unchanged-poll calibration.
	// baseline: unchanged counts all polls of the sampled tasks and extra
	// their history events beyond a run without polls.
	changed, unchanged, extra int
	uncalibrated              int // sampled tasks whose changed-poll count had no calibration
	extraPerTask              []int
}

// calibration is the history length of tasks that made no unchanged poll,
// by number of changed polls.
type calibration map[int]int

// jobArgs are the demo submit_job arguments of a load task.
func jobArgs(label string, durationSeconds, pollAfter float64) map[string]any {
	return map[string]any{"duration_seconds": durationSeconds, "poll_after_seconds": pollAfter, "label": label}
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
	if len(cal) == 0 {
		if err := calibrate(ctx, e, m, cal); err != nil {
			return nil, fmt.Errorf("calibration: %w", err)
		}
	}
	meter := cpuMeter{"temporal": e.temporal.pid(), "demo": e.demo.pid(), "serve": m.serve.pid(), "worker": m.worker.pid(), "bench": 0}
	cpu0 := meter.snap()
	stopRSS := rssPeak(m.worker.pid())
	thread := fmt.Sprintf("r%d", round+1)
	sub := submitAll(ctx, o.n, o.conc, func(i int) string { return fmt.Sprintf("m%d-%d", round+1, i) },
		func(ctx context.Context, i int, label string) (string, error) {
			return m.submit(ctx, thread, jobArgs(label, o.duration, o.pollAfter))
		})
	closed, werr := waitClosed(ctx, e.tc, queue, sub.ids, o.timeout)
	cpu1 := meter.snap()
	r := &roundResult{target: "mcpflow", n: len(sub.ids), errs: sub.errs, lat: sub.lat,
		cpu: cpuDelta(cpu0, cpu1), peakRSS: stopRSS()}
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
		h, err := readHistory(ctx, e.tc, id)
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
		r.events = append(r.events, h.events)
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
	sort.Ints(r.events)
	sort.Ints(r.extraPerTask)
	r.problems = append(r.problems, m.logProblems()...)
	return r, nil
}

// calibrate runs tasks that make no unchanged poll and records their
// history length by changed-poll count: a job of 0 s is completed at the
// first poll (1 changed poll: submitted → completed); a job of 1.6 s is
// running at the first poll (about 1.1 s after the submit) and completed at
// the second (about 1 s later): 2 changed polls. Only tasks whose demo job
// saw exactly as many status calls as changed polls count.
func calibrate(ctx context.Context, e *benchEnv, m *mcpflowProcs, cal calibration) error {
	durations := []float64{0, 0, 1.6, 1.6, 1.6, 1.6}
	sub := submitAll(ctx, len(durations), len(durations), func(i int) string { return fmt.Sprintf("cal-%d", i) },
		func(ctx context.Context, i int, label string) (string, error) {
			return m.submit(ctx, "cal", map[string]any{"duration_seconds": durations[i], "poll_after_seconds": 1, "label": label})
		})
	if len(sub.errs) > 0 {
		return fmt.Errorf("submit: %s", sub.errs[0])
	}
	if _, err := waitClosed(ctx, e.tc, m.queue, sub.ids, time.Minute); err != nil {
		return err
	}
	stats, err := e.jobStats(ctx)
	if err != nil {
		return err
	}
	lengths := map[int][]int{}
	for _, id := range sub.ids {
		h, err := readHistory(ctx, e.tc, id)
		if err != nil {
			return err
		}
		if stats[sub.labels[id]].StatusCalls == h.changed && h.runs == 1 {
			lengths[h.changed] = append(lengths[h.changed], h.events)
		}
	}
	for c, ls := range lengths {
		sort.Ints(ls)
		cal[c] = ls[len(ls)/2]
	}
	if len(cal) == 0 {
		return fmt.Errorf("no calibration task ended without unchanged polls")
	}
	return nil
}

// runBaseline runs one bare-Temporal round on a fresh task queue, making
// totalPolls status calls in all (as mcpflow did), spread evenly over the
// tasks. base0 (when 0) is filled with the history length of a task with
// no poll.
func runBaseline(ctx context.Context, e *benchEnv, round, totalPolls int, base0 *int) (*roundResult, error) {
	o := e.opts
	queue := fmt.Sprintf("baseline-r%d", round+1)
	w, err := startBaselineWorker(ctx, e, queue)
	if err != nil {
		return nil, err
	}
	defer w.stop(30 * time.Second)
	interval := time.Duration(o.pollAfter * float64(time.Second))
	start := func(ctx context.Context, id string, in baselineInput) error {
		_, err := e.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, baselineWorkflowName, in)
		return err
	}
	if *base0 == 0 {
		ids := []string{fmt.Sprintf("baseline-cal-%d-0", round+1), fmt.Sprintf("baseline-cal-%d-1", round+1)}
		for _, id := range ids {
			if err := start(ctx, id, baselineInput{Args: map[string]any{"duration_seconds": 0, "label": id}, Interval: interval}); err != nil {
				return nil, err
			}
		}
		if _, err := waitClosed(ctx, e.tc, queue, ids, time.Minute); err != nil {
			return nil, err
		}
		h, err := readHistory(ctx, e.tc, ids[0])
		if err != nil {
			return nil, err
		}
		*base0 = h.events
	}
	per, extra := totalPolls/o.n, totalPolls%o.n
	polls := func(i int) int {
		if i < extra {
			return per + 1
		}
		return per
	}
	meter := cpuMeter{"temporal": e.temporal.pid(), "demo": e.demo.pid(), "worker": w.pid(), "bench": 0}
	cpu0 := meter.snap()
	stopRSS := rssPeak(w.pid())
	sub := submitAll(ctx, o.n, o.conc, func(i int) string { return fmt.Sprintf("b%d-%d", round+1, i) },
		func(ctx context.Context, i int, label string) (string, error) {
			id := fmt.Sprintf("baseline-r%d-%d", round+1, i)
			return id, start(ctx, id, baselineInput{Args: jobArgs(label, o.duration, o.pollAfter), Polls: polls(i), Interval: interval})
		})
	closed, werr := waitClosed(ctx, e.tc, queue, sub.ids, o.timeout)
	cpu1 := meter.snap()
	r := &roundResult{target: "baseline", n: len(sub.ids), errs: sub.errs, lat: sub.lat,
		cpu: cpuDelta(cpu0, cpu1), peakRSS: stopRSS()}
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
		h, err := readHistory(ctx, e.tc, id)
		if err != nil {
			return err
		}
		mu.Lock()
		r.events = append(r.events, h.events)
		r.extra += h.events - *base0
		r.unchanged += stats[sub.labels[id]].StatusCalls // all baseline polls
		mu.Unlock()
		return nil
	})
	sort.Ints(r.events)
	return r, err
}

// rssResult is the RSS phase's measurement.
type rssResult struct {
	n, working            int
	idle, atWorking       memStat
	peak                  int64 // VmRSS max while submitting and holding
	afterHold, afterClean memStat
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
	res.idle, _ = readMem(m.worker.pid())
	stopRSS := rssPeak(m.worker.pid())
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
	res.atWorking, _ = readMem(m.worker.pid())

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
	res.afterHold, _ = readMem(m.worker.pid())
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
	res.afterClean, _ = readMem(m.worker.pid())
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
