package main

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// The task shapes: a few tasks per target whose demo job ends at an exact
// status call (submit_job's finish_at_status_call), so the history of a
// known sequence of polls is measured whatever the polls' timing:
//
//   - 1 poll: terminal at once (mcpflow: one changed poll, submitted →
//     completed);
//   - 2 polls: running, then terminal (mcpflow: two changed polls,
//     submitted → working → completed);
//   - 3 polls: running, running, terminal (mcpflow: changed, unchanged,
//     terminal: the "3-poll task").
//
// Per changed poll = shape 2 − shape 1; per unchanged poll = shape 3 −
// shape 2. For the bare targets a poll is a poll: the baseline's timer
// loop makes exactly as many polls as the shape, the minimal workflow
// retries its poll activity until the job ends.

// shapePolls are the shapes' status calls, and shapeChanged mcpflow's
// changed polls in each (the last, terminal poll included).
var (
	shapePolls   = []int{1, 2, 3}
	shapeChanged = map[int]int{1: 1, 2: 2, 3: 2}
)

// shapeCopies is how many tasks of each shape a target runs.
const shapeCopies = 3

// shapeCell is one shape of one target: medians over its tasks that made
// exactly the shape's polls.
type shapeCell struct {
	events, transitions, actions int
	parts                        cloudActions   // of the first such task
	byType                       map[string]int // its history events by type
	tasks                        int
}

// shapeResult is one target's shapes by poll count.
type shapeResult struct {
	target string
	cells  map[int]shapeCell
	// heartbeats is the activity heartbeats per task the dev server counted
	// over all the shapes' tasks (hbOK: it could be read).
	heartbeats float64
	hbOK       bool
	problems   []string
}

// diff is f(shape b) − f(shape a); ok is false when either shape has no
// task.
func (s *shapeResult) diff(a, b int, f func(shapeCell) int) (int, bool) {
	if s == nil || s.cells[a].tasks == 0 || s.cells[b].tasks == 0 {
		return 0, false
	}
	return f(s.cells[b]) - f(s.cells[a]), true
}

func cellEvents(c shapeCell) int      { return c.events }
func cellTransitions(c shapeCell) int { return c.transitions }
func cellActions(c shapeCell) int     { return c.actions }

// runShapes runs the task shapes of every target, each on its own task
// queue and worker process(es), and returns mcpflow's calibration (history
// length by changed polls, no unchanged one) for the load rounds.
func runShapes(ctx context.Context, e *benchEnv) (map[string]*shapeResult, calibration, error) {
	out := map[string]*shapeResult{}
	cal := calibration{}
	for _, target := range []string{targetMcpflow, targetMinimal, targetBaseline} {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		s, err := runShape(ctx, e, target)
		if err != nil {
			return nil, nil, fmt.Errorf("task shapes, %s: %w", target, err)
		}
		out[target] = s
		progress("task shapes %s: %s", target, s.summary())
	}
	if m := out[targetMcpflow]; m != nil {
		for _, k := range []int{1, 2} {
			if c := m.cells[k]; c.tasks > 0 {
				cal[shapeChanged[k]] = c.events
			}
		}
	}
	return out, cal, nil
}

func (s *shapeResult) summary() string {
	txt := ""
	for _, k := range shapePolls {
		c := s.cells[k]
		txt += fmt.Sprintf("%d poll(s): %d events, %d transitions, %d actions (%d tasks); ", k, c.events, c.transitions, c.actions, c.tasks)
	}
	return txt + fmt.Sprintf("%.2f heartbeats/task; %d problem(s)", s.heartbeats, len(s.problems))
}

func runShape(ctx context.Context, e *benchEnv, target string) (*shapeResult, error) {
	o := e.opts
	queue := target + "-shapes"
	var submit func(ctx context.Context, i int, label string) (string, error)
	pollsOf := func(i int) int { return shapePolls[i/shapeCopies] }
	args := func(i int, label string) map[string]any {
		return map[string]any{"finish_at_status_call": pollsOf(i), "poll_after_seconds": o.pollAfter, "label": label}
	}
	if target == targetMcpflow {
		m, err := startMcpflow(ctx, e, queue, o.conc)
		if err != nil {
			return nil, err
		}
		defer m.stop()
		submit = func(ctx context.Context, i int, label string) (string, error) {
			return m.submit(ctx, "shapes", args(i, label))
		}
	} else {
		w, err := startBaselineWorker(ctx, e, queue)
		if err != nil {
			return nil, err
		}
		defer w.Stop(30 * time.Second)
		submit = func(ctx context.Context, i int, label string) (string, error) {
			id := fmt.Sprintf("%s-shape-%d", target, i)
			return id, bareStart(ctx, e, target, queue, id, args(i, label), pollsOf(i))
		}
	}
	n := len(shapePolls) * shapeCopies
	meter := startLoadMeter(ctx, e, cpuMeter{})
	sub := submitAll(ctx, n, n, func(i int) string { return fmt.Sprintf("shape-%s-%d", target, i) }, submit)
	if len(sub.errs) > 0 {
		return nil, fmt.Errorf("submit: %s", sub.errs[0])
	}
	if _, err := waitClosed(ctx, e.tc, queue, sub.ids, 2*time.Minute); err != nil {
		return nil, err
	}
	_, actions := meter.stop(ctx)
	stats, err := e.jobStats(ctx)
	if err != nil {
		return nil, err
	}
	s := &shapeResult{target: target, cells: map[int]shapeCell{}}
	s.heartbeats, s.hbOK = heartbeats(actions, len(sub.ids))
	byShape := map[int][]history{}
	idOf := map[string]string{}
	for _, id := range sub.ids {
		idOf[sub.labels[id]] = id
	}
	for i := 0; i < n; i++ {
		id, ok := idOf[fmt.Sprintf("shape-%s-%d", target, i)]
		if !ok {
			continue
		}
		h, err := readExecution(ctx, e.tc, id, true)
		if err != nil {
			return nil, err
		}
		k, calls := pollsOf(i), stats[sub.labels[id]].StatusCalls
		h = h.withPendingRetries(calls)
		switch {
		case calls != k:
			s.problems = append(s.problems, fmt.Sprintf("%d-poll shape: task %s made %d status calls", k, id, calls))
		case target == targetMcpflow && h.changed != shapeChanged[k]:
			s.problems = append(s.problems, fmt.Sprintf("%d-poll shape: task %s recorded %d changed polls, not %d", k, id, h.changed, shapeChanged[k]))
		default:
			byShape[k] = append(byShape[k], h)
		}
	}
	for _, k := range shapePolls {
		hs := byShape[k]
		if len(hs) == 0 {
			continue
		}
		var ev, tr, ac []int
		for _, h := range hs {
			ev, tr, ac = append(ev, h.events), append(tr, int(h.transitions)), append(ac, h.actions.Total())
		}
		s.cells[k] = shapeCell{events: medianInt(ev), transitions: medianInt(tr), actions: medianInt(ac), parts: hs[0].actions, byType: hs[0].byType, tasks: len(hs)}
		if spread(ev) > 0 {
			s.problems = append(s.problems, fmt.Sprintf("%d-poll shape: history lengths differ between tasks: %v", k, ev))
		}
	}
	return s, nil
}

// spread is max − min.
func spread(v []int) int {
	s := append([]int(nil), v...)
	sort.Ints(s)
	return s[len(s)-1] - s[0]
}
