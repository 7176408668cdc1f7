package main

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// minimalWorkflowName is the minimal Temporal target's workflow type.
const minimalWorkflowName = "MinimalTask"

// errTypeJobRunning is the poll activity's benign retry: the job is not
// terminal yet, poll again after NextRetryDelay.
const errTypeJobRunning = "JobRunning"

// minimalInput is one minimal task: submit a demo job with Args, then
// poll it until it is terminal, Interval before the first poll (the
// submit answer carries no hint) and the job's poll hint between polls.
type minimalInput struct {
	Args     map[string]any `json:"args"`
	Interval time.Duration  `json:"interval"`
}

// minimalPoll is the poll activity's input.
type minimalPoll struct {
	JobID    string        `json:"job_id"`
	Interval time.Duration `json:"interval"`
}

// MinimalTask is the cheapest way to run a remote job on Temporal: the
// submit_job activity, then ONE poll activity whose retries are the polls
// (each unfinished answer fails the attempt with NextRetryDelay = the
// job's poll hint). Retries are not written to the history, so the
// history has the same 17 events whatever the number of polls. It keeps no
// row, no search attribute and no event: the honest floor under mcpflow's
// TaskWorkflow.
func MinimalTask(ctx workflow.Context, in minimalInput) (baselineSubmit, error) {
	subCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	var sub baselineSubmit
	if err := workflow.ExecuteActivity(subCtx, "SubmitJob", in.Args).Get(ctx, &sub); err != nil {
		return sub, err
	}
	// The policy's own interval applies only to attempts that failed
	// without a hint (a transport error); every poll sets its delay.
	pollCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: in.Interval, BackoffCoefficient: 1, MaximumInterval: in.Interval}})
	err := workflow.ExecuteActivity(pollCtx, "PollUntilTerminal", minimalPoll{JobID: sub.JobID, Interval: in.Interval}).Get(ctx, nil)
	return sub, err
}

// PollUntilTerminal calls get_job_status once per attempt. A terminal
// status completes the activity; any other fails the attempt with a benign
// error whose NextRetryDelay is the job's poll_after_seconds (Interval
// without one). The first attempt waits Interval before its call, as
// mcpflow waits its poll interval after the submit, so both targets poll a
// job at the same times; the wait is in the activity, not a workflow
// timer, so it adds no history.
func (a *baselineActivities) PollUntilTerminal(ctx context.Context, in minimalPoll) (string, error) {
	if activity.GetInfo(ctx).Attempt == 1 {
		select {
		case <-time.After(in.Interval):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	out, err := a.jobStatus(ctx, in.JobID)
	if err != nil {
		return "", err
	}
	switch out.Status {
	case "completed", "failed", "cancelled":
		return out.Status, nil
	}
	delay := in.Interval
	if out.PollAfter != nil && *out.PollAfter > 0 {
		delay = time.Duration(*out.PollAfter * float64(time.Second))
	}
	return "", temporal.NewApplicationErrorWithOptions("job "+out.Status, errTypeJobRunning, temporal.ApplicationErrorOptions{
		NextRetryDelay: delay,
		Category:       temporal.ApplicationErrorCategoryBenign,
	})
}
