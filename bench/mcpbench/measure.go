package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
)

// target is one path to the demo's echo tool.
type target struct {
	name string
	path string // what the target calls through, for the report
	call func(ctx context.Context) error
	// proc is the separate proxy process of the path (deployed mcpflow,
	// the peer), whose CPU per call the report shows; nil in-process.
	proc *proc
	// pprof is the host:port where that process serves net/http/pprof,
	// "" when it does not (-profile).
	pprof string
}

// cell is one target measured at one number of callers in one round.
type cell struct {
	lat []time.Duration // every call's latency, sorted
	rps float64         // calls / wall time of the cell
	cpu time.Duration   // the proxy process's CPU per call; 0 in-process
}

// measure makes warmup calls, then n timed calls of t, with callers
// goroutines sharing its client.
func measure(ctx context.Context, t target, callers, warmup, n int) (cell, error) {
	if err := drive(ctx, t.call, callers, warmup, nil); err != nil {
		return cell{}, fmt.Errorf("%s, %d callers, warm-up: %w", t.name, callers, err)
	}
	var cpu0 time.Duration
	if t.proc != nil {
		cpu0 = benchproc.ReadCPUPrecise(t.proc.PID())
	}
	ds := make([]time.Duration, n)
	start := time.Now()
	if err := drive(ctx, t.call, callers, n, ds); err != nil {
		return cell{}, fmt.Errorf("%s, %d callers: %w", t.name, callers, err)
	}
	c := cell{lat: ds, rps: float64(n) / time.Since(start).Seconds()}
	if t.proc != nil {
		c.cpu = (benchproc.ReadCPUPrecise(t.proc.PID()) - cpu0) / time.Duration(n)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return c, nil
}

// measureInTurns measures each of targets with n calls in slices parts,
// the targets taking turns part by part (warm-up calls before a target's
// first part only), and returns each target's parts as one cell.
func measureInTurns(ctx context.Context, targets []target, callers, warmup, n, slices int) ([]cell, error) {
	slices = max(1, min(slices, n))
	cells := make([]cell, len(targets))
	wall := make([]time.Duration, len(targets))
	for s := range slices {
		part := n / slices
		if s < n%slices {
			part++
		}
		for i, t := range targets {
			w := 0
			if s == 0 {
				w = warmup
			}
			c, err := measure(ctx, t, callers, w, part)
			if err != nil {
				return nil, err
			}
			wall[i] += time.Duration(float64(part) / c.rps * float64(time.Second))
			cells[i].lat = append(cells[i].lat, c.lat...)
			cells[i].cpu += c.cpu * time.Duration(part) // the part's CPU, divided below
		}
	}
	for i := range cells {
		sort.Slice(cells[i].lat, func(a, b int) bool { return cells[i].lat[a] < cells[i].lat[b] })
		cells[i].rps = float64(n) / wall[i].Seconds()
		cells[i].cpu /= time.Duration(n)
	}
	return cells, nil
}

// drive makes n calls with callers goroutines, each taking the next call
// as soon as its last one answered; ds[i], when ds is not nil, gets the
// latency of call i. The first error stops it.
func drive(ctx context.Context, call func(context.Context) error, callers, n int, ds []time.Duration) error {
	var next atomic.Int64
	return callersDo(ctx, callers, func(ctx context.Context) (bool, error) {
		i := int(next.Add(1)) - 1
		if i >= n {
			return false, nil
		}
		t0 := time.Now()
		if err := call(ctx); err != nil {
			return false, err
		}
		if ds != nil {
			ds[i] = time.Since(t0)
		}
		return true, nil
	})
}

// driveUntil calls with callers goroutines until stop is closed and
// returns the number of calls made. Calls cut by stop are not errors.
func driveUntil(ctx context.Context, call func(context.Context) error, callers int, stop <-chan struct{}) (int64, error) {
	var calls atomic.Int64
	err := callersDo(ctx, callers, func(ctx context.Context) (bool, error) {
		select {
		case <-stop:
			return false, nil
		default:
		}
		if err := call(ctx); err != nil {
			return false, err
		}
		calls.Add(1)
		return true, nil
	})
	return calls.Load(), err
}

// callersDo runs one for each of callers goroutines until it returns
// false; the first error cancels the others' context and is returned.
func callersDo(ctx context.Context, callers int, one func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				more, err := one(ctx)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
					return
				}
				if !more {
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func median(v []float64) (med, lo, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

func stat(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	m, lo, hi := median(v)
	return fmt.Sprintf("%.0f (%.0f–%.0f)", m, lo, hi)
}

func statR(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	m, lo, hi := median(v)
	return fmt.Sprintf("%.2f (%.2f–%.2f)", m, lo, hi)
}
