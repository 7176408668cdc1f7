package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	mcpc "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// baselineWorkflowName is the bare Temporal baseline's workflow type.
const baselineWorkflowName = "BaselineTask"

// baselineInput is one baseline task: submit a demo job with Args, then
// poll its status Polls times, sleeping Interval before each poll.
type baselineInput struct {
	Args     map[string]any `json:"args"`
	Polls    int            `json:"polls"`
	Interval time.Duration  `json:"interval"`
}

// baselineSubmit is the submit activity's answer.
type baselineSubmit struct {
	JobID string    `json:"job_id"`
	At    time.Time `json:"at"` // when the remote submit answered (worker clock = host clock)
}

// BaselineTask is the minimal durable task: one activity calling the demo's
// submit_job once, then a workflow-timer polling loop (sleep, status
// activity) of a fixed length. It keeps no state beyond the loop counter,
// writes no rows and upserts nothing: the floor under mcpflow's
// TaskWorkflow.
func BaselineTask(ctx workflow.Context, in baselineInput) (baselineSubmit, error) {
	subCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	var sub baselineSubmit
	if err := workflow.ExecuteActivity(subCtx, "SubmitJob", in.Args).Get(ctx, &sub); err != nil {
		return sub, err
	}
	pollCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
	for i := 0; i < in.Polls; i++ {
		if err := workflow.Sleep(ctx, in.Interval); err != nil {
			return sub, err
		}
		if err := workflow.ExecuteActivity(pollCtx, "GetJobStatus", sub.JobID).Get(ctx, nil); err != nil {
			return sub, err
		}
	}
	return sub, nil
}

// baselineActivities call the demo server through one shared MCP session,
// as mcpflow's runtime does for a streamable HTTP server.
type baselineActivities struct {
	mcp *mcpc.Client
}

// SubmitJob calls submit_job once.
func (a *baselineActivities) SubmitJob(ctx context.Context, args map[string]any) (baselineSubmit, error) {
	res, err := a.mcp.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "submit_job", Arguments: args}})
	if err != nil {
		return baselineSubmit{}, err
	}
	var out struct {
		TaskID string `json:"task_id"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if res.IsError || json.Unmarshal(b, &out) != nil || out.TaskID == "" {
		return baselineSubmit{}, temporal.NewNonRetryableApplicationError("submit_job failed", "SubmitFailed", nil)
	}
	return baselineSubmit{JobID: out.TaskID, At: time.Now()}, nil
}

// GetJobStatus calls get_job_status once and returns the status.
func (a *baselineActivities) GetJobStatus(ctx context.Context, id string) (string, error) {
	st, err := a.jobStatus(ctx, id)
	return st.Status, err
}

// jobState is a get_job_status answer.
type jobState struct {
	Status    string   `json:"status"`
	PollAfter *float64 `json:"poll_after_seconds"`
}

// jobStatus calls get_job_status once (both bare targets' polls).
func (a *baselineActivities) jobStatus(ctx context.Context, id string) (jobState, error) {
	var out jobState
	res, err := a.mcp.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "get_job_status",
		Arguments: map[string]any{"task_id": id}}})
	if err != nil {
		return out, err
	}
	if res.IsError {
		return out, errors.New("get_job_status answered isError")
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	return out, nil
}

// baselineWorkerMain is the hidden `taskbench baseline-worker` command: the
// worker of the bare Temporal targets (the timer-loop baseline and the
// minimal workflow) as its own process, like `mcpflow worker`.
func baselineWorkerMain(args []string) int {
	fs := flag.NewFlagSet("taskbench baseline-worker", flag.ContinueOnError)
	addr := fs.String("temporal", "", "Temporal frontend host:port")
	queue := fs.String("queue", "", "task queue")
	demo := fs.String("demo", "", "demo MCP endpoint URL")
	maxAct := fs.Int("max-activities", 256, "MaxConcurrentActivityExecutionSize (mcpflow's default: max_concurrent_polls 8 × 32)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	mc, err := dialDemo(ctx, *demo, "taskbench-baseline")
	if err != nil {
		log.Error("baseline worker", "error", err)
		return 1
	}
	defer mc.Close()
	tc, err := client.Dial(client.Options{HostPort: *addr, Namespace: "default", Logger: sdklog.NewStructuredLogger(log)})
	if err != nil {
		log.Error("baseline worker: dial Temporal", "error", err)
		return 1
	}
	defer tc.Close()
	w := sdkworker.New(tc, *queue, sdkworker.Options{MaxConcurrentActivityExecutionSize: *maxAct})
	w.RegisterWorkflowWithOptions(BaselineTask, workflow.RegisterOptions{Name: baselineWorkflowName})
	w.RegisterWorkflowWithOptions(MinimalTask, workflow.RegisterOptions{Name: minimalWorkflowName})
	w.RegisterActivity(&baselineActivities{mcp: mc})
	if err := w.Start(); err != nil {
		log.Error("baseline worker: start", "error", err)
		return 1
	}
	<-ctx.Done()
	w.Stop()
	return 0
}

// startBaselineWorker runs this binary's baseline-worker command on queue
// (for the baseline and the minimal target alike).
func startBaselineWorker(ctx context.Context, e *benchEnv, queue string) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p, err := startProc("baseline worker", filepath.Join(e.dir, queue+"-worker.log"), nil, nil, self, "baseline-worker",
		"-temporal", e.tAddr, "-queue", queue, "-demo", e.demoURL+"/mcp")
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for !workerPolling(ctx, e, queue) {
		if p.Exited() {
			return nil, fmt.Errorf("baseline worker exited: %v\n%s", p.Err, p.Tail(20))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.Stop(5 * time.Second)
			return nil, fmt.Errorf("baseline worker not polling within 60s: %s", p.Tail(10))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p, nil
}

// baselineResult fetches a closed baseline or minimal workflow's result.
func baselineResult(ctx context.Context, tc client.Client, id string) (baselineSubmit, error) {
	var r baselineSubmit
	err := tc.GetWorkflow(ctx, id, "").Get(ctx, &r)
	return r, err
}
