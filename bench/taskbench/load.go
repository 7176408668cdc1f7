package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// submitted is the outcome of a bounded-concurrency submit burst.
type submitted struct {
	ids    []string          // accepted task (workflow) ids, in submit order
	labels map[string]string // id → demo job label
	called map[string]time.Time
	lat    []time.Duration // answer latency of the accepted submits
	errs   []string
	// refused are the demo job labels of the refused submits.
	refused []string
	start   time.Time // the first submit call
	end     time.Time // the last answer
}

// submitAll calls submit for i in [0,n) with conc calls in flight.
func submitAll(ctx context.Context, n, conc int, label func(i int) string,
	submit func(ctx context.Context, i int, label string) (string, error)) *submitted {
	ids := make([]string, n)
	lats := make([]time.Duration, n)
	calls := make([]time.Time, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				ids[i], errs[i] = submit(ctx, i, label(i))
				calls[i], lats[i] = t0, time.Since(t0)
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	s := &submitted{labels: map[string]string{}, called: map[string]time.Time{}, start: start, end: time.Now()}
	for i := 0; i < n; i++ {
		if errs[i] != nil || ids[i] == "" {
			if errs[i] != nil {
				s.errs = append(s.errs, errs[i].Error())
			}
			s.refused = append(s.refused, label(i))
			continue
		}
		s.ids = append(s.ids, ids[i])
		s.labels[ids[i]] = label(i)
		s.called[ids[i]] = calls[i]
		s.lat = append(s.lat, lats[i])
	}
	sort.Slice(s.lat, func(i, j int) bool { return s.lat[i] < s.lat[j] })
	return s
}

// closedRun is a closed workflow as visibility reports it.
type closedRun struct {
	status enumspb.WorkflowExecutionStatus
	closed time.Time
}

// waitClosed waits until no workflow of queue runs and every id is closed
// in visibility, and returns their close records. After timeout it returns
// what closed so far with an error naming how many still run.
func waitClosed(ctx context.Context, tc client.Client, queue string, ids []string, timeout time.Duration) (map[string]closedRun, error) {
	deadline := time.Now().Add(timeout)
	running := fmt.Sprintf(`TaskQueue=%q AND ExecutionStatus="Running"`, queue)
	for {
		resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default", Query: running})
		if err == nil && resp.GetCount() == 0 {
			closed, err := listClosed(ctx, tc, queue)
			if err != nil {
				return nil, err
			}
			missing := 0
			for _, id := range ids {
				if _, ok := closed[id]; !ok {
					missing++
				}
			}
			if missing == 0 {
				return closed, nil
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			closed, _ := listClosed(ctx, tc, queue)
			return closed, fmt.Errorf("%d of %d tasks on %s still running after %s", len(ids)-len(closed), len(ids), queue, timeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// listClosed lists the closed workflows of queue by workflow id (the last
// run of a chain of continue-as-new).
func listClosed(ctx context.Context, tc client.Client, queue string) (map[string]closedRun, error) {
	out := map[string]closedRun{}
	var token []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", PageSize: 1000,
			NextPageToken: token, Query: fmt.Sprintf(`TaskQueue=%q AND ExecutionStatus!="Running"`, queue)})
		if err != nil {
			return nil, fmt.Errorf("list closed workflows: %w", err)
		}
		for _, x := range resp.GetExecutions() {
			if x.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
				continue
			}
			out[x.GetExecution().GetWorkflowId()] = closedRun{status: x.GetStatus(), closed: x.GetCloseTime().AsTime()}
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return out, nil
		}
	}
}

// count runs a visibility count query.
func count(ctx context.Context, tc client.Client, query string) (int64, error) {
	resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default", Query: query})
	return resp.GetCount(), err
}

// lastClose returns the latest close time among ids and how many closed
// with a status other than Completed.
func lastClose(ids []string, closed map[string]closedRun) (time.Time, int) {
	var end time.Time
	bad := 0
	for _, id := range ids {
		c, ok := closed[id]
		if !ok {
			bad++
			continue
		}
		if c.status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			bad++
		}
		if c.closed.After(end) {
			end = c.closed
		}
	}
	return end, bad
}

// sample picks up to k ids spread evenly over ids.
func sample(ids []string, k int) []string {
	if k >= len(ids) {
		return ids
	}
	out := make([]string, 0, k)
	for i := 0; i < k; i++ {
		out = append(out, ids[i*len(ids)/k])
	}
	return out
}

// parallel runs fn for every id with conc calls in flight and returns the
// first error.
func parallel(ids []string, conc int, fn func(id string) error) error {
	var mu sync.Mutex
	var first error
	next := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				if err := fn(id); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	return first
}

// cpuMeter snapshots the CPU time of named processes (pid 0 is the
// benchmark itself).
type cpuMeter map[string]int

func (m cpuMeter) snap() map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, pid := range m {
		out[name] = benchproc.ReadCPU(pid)
	}
	return out
}

func cpuDelta(a, b map[string]time.Duration) map[string]time.Duration {
	out := map[string]time.Duration{}
	for k, v := range b {
		out[k] = v - a[k]
	}
	return out
}

// rssPeak samples a process's VmRSS every 200 ms until stopped and returns
// the largest value seen.
func rssPeak(pid int) (stop func() int64) {
	done := make(chan struct{})
	res := make(chan int64, 1)
	go func() {
		var peak int64
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if m, err := benchproc.ReadMem(pid); err == nil && m.RSS > peak {
				peak = m.RSS
			}
			select {
			case <-done:
				res <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 { close(done); return <-res }
}
