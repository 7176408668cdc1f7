package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpflow/mcpflow/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// history is what one workflow execution holds, over all its runs (a
// chain of continue-as-new is followed back from the latest run).
type history struct {
	events  int
	changed int // polls whose answer changed the task (mcpflow): completed Poll activities, or report signals
	// pendingPoll: the latest run ended (or waits) with a Poll activity
	// scheduled and not closed: mcpflow's report shape, whose poll never
	// completes. Its attempts are in no history (see withPendingRetries).
	pendingPoll bool
	runs        int
	// transitions is the sum of the runs' StateTransitionCount
	// (DescribeWorkflowExecution → WorkflowExecutionInfo); 0 unless read
	// with describe.
	transitions int64
	actions     cloudActions
	byType      map[string]int
	// pollWait: the latest run has a Poll activity scheduled and not
	// closed, so the task waits for a change with retry-driven polls.
	pollWait bool
}

// withPendingRetries adds the retries of a Poll activity the run closed
// with (report shape), which no history shows: its first attempt only
// waits, each status call but the terminal one ends in a retry, and the
// terminal one's retry is refused as the run has closed; so a task whose
// demo job saw calls status calls had calls retries.
func (h history) withPendingRetries(calls int) history {
	if h.pendingPoll {
		h.actions.Retries += calls
	}
	return h
}

// cloudActions estimates what Temporal Cloud bills for one execution, from
// its history, per https://docs.temporal.io/cloud/actions (read
// 2026-12-03). Each field is one category of that page; what a history
// does not show is not counted (see notCounted).
type cloudActions struct {
	// Starts: one per WorkflowExecutionStarted, so each run of a chain of
	// continue-as-new counts (the page bills continue-as-new as a start);
	// update-with-start bills its start here and its update in Updates.
	Starts int
	// Activities: one per ActivityTaskScheduled (the first attempt).
	Activities int
	// Retries: ActivityTaskStarted.attempt − 1 per activity, so every
	// attempt after the first counts, the failed ones a retry policy hides
	// from the history included (NextRetryDelay polls).
	Retries int
	// Timers: one per TimerStarted (workflow.Sleep, AwaitWithTimeout).
	Timers int
	// Signals: one per WorkflowExecutionSignaled.
	Signals int
	// Updates: one per WorkflowExecutionUpdateAccepted (rejected updates
	// are billed too but never written to a history).
	Updates int
	// Upserts: one per UpsertWorkflowSearchAttributes (several attributes
	// in one command are one action).
	Upserts int
	// LocalActivities: one per workflow task that recorded markers (all
	// MarkerRecorded events of one workflow task completion are one
	// action), plus the local activity attempts after the first one
	// (WorkflowTaskCompleted metering_metadata).
	LocalActivities int
	// Other: WorkflowExecutionOptionsUpdated (1 each) and
	// StartChildWorkflowExecutionInitiated (2 each); none expected here.
	Other int
}

// notCounted lists billed actions a history does not show.
const notCounted = "activity heartbeats that reach the server, queries, rejected updates and workflow-task heartbeats"

// Total is the estimated number of actions.
func (a cloudActions) Total() int {
	return a.Starts + a.Activities + a.Retries + a.Timers + a.Signals + a.Updates + a.Upserts + a.LocalActivities + a.Other
}

func (a *cloudActions) add(b cloudActions) {
	a.Starts += b.Starts
	a.Activities += b.Activities
	a.Retries += b.Retries
	a.Timers += b.Timers
	a.Signals += b.Signals
	a.Updates += b.Updates
	a.Upserts += b.Upserts
	a.LocalActivities += b.LocalActivities
	a.Other += b.Other
}

// String lists the non-zero categories, e.g. "1 start + 2 activities + 2 retries".
func (a cloudActions) String() string {
	var parts []string
	for _, p := range []struct {
		n          int
		one, other string
	}{
		{a.Starts, "start", "starts"}, {a.Updates, "update", "updates"}, {a.Activities, "activity", "activities"},
		{a.Retries, "retry", "retries"}, {a.Timers, "timer", "timers"}, {a.Signals, "signal", "signals"},
		{a.Upserts, "upsert", "upserts"}, {a.LocalActivities, "local-activity batch", "local-activity batches"},
		{a.Other, "other", "other"},
	} {
		switch {
		case p.n == 1:
			parts = append(parts, "1 "+p.one)
		case p.n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.other))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " + ")
}

// readHistory reads a workflow's history over all its runs.
func readHistory(ctx context.Context, tc client.Client, id string) (history, error) {
	return readExecution(ctx, tc, id, false)
}

// readExecution reads every run of workflow id, the latest first, and with
// describe also sums the runs' state transitions.
func readExecution(ctx context.Context, tc client.Client, id string, describe bool) (history, error) {
	h := history{byType: map[string]int{}}
	runID := ""
	for {
		if describe {
			d, err := tc.DescribeWorkflow(ctx, id, runID)
			if err != nil {
				return h, fmt.Errorf("describe %s: %w", id, err)
			}
			info := d.RawResponse.GetWorkflowExecutionInfo()
			h.transitions += info.GetStateTransitionCount()
			runID = info.GetExecution().GetRunId()
		}
		prev, err := h.readRun(ctx, tc, id, runID, h.runs == 0)
		if err != nil {
			return h, err
		}
		h.runs++
		if prev == "" || h.runs > 1000 {
			return h, nil
		}
		runID = prev
	}
}

// readRun adds one run's events and returns the run it continued from.
func (h *history) readRun(ctx context.Context, tc client.Client, id, runID string, latest bool) (string, error) {
	it := tc.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	activity := map[int64]string{}
	openPolls := map[int64]bool{} // scheduled Poll activities not closed yet
	markerTasks := map[int64]bool{}
	prev := ""
	defer func() {
		if latest {
			h.pendingPoll = len(openPolls) > 0
			h.pollWait = h.pendingPoll
		}
	}()
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return "", fmt.Errorf("history of %s: %w", id, err)
		}
		h.events++
		h.byType[ev.GetEventType().String()]++
		closePoll := func(scheduled int64) { delete(openPolls, scheduled) }
		a := &h.actions
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			a.Starts++
			prev = ev.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a.Activities++
			name := ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			activity[ev.GetEventId()] = name
			if name == "Poll" {
				openPolls[ev.GetEventId()] = true
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a.Retries += max(int(ev.GetActivityTaskStartedEventAttributes().GetAttempt())-1, 0)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			closePoll(ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId())
			if activity[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()] == "Poll" {
				h.changed++
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			closePoll(ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			closePoll(ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			closePoll(ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId())
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			a.Timers++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			a.Signals++
			if ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == workflows.SignalReport {
				h.changed++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			a.Updates++
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			a.Upserts++
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if wft := ev.GetMarkerRecordedEventAttributes().GetWorkflowTaskCompletedEventId(); !markerTasks[wft] {
				markerTasks[wft] = true
				a.LocalActivities++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			a.LocalActivities += int(ev.GetWorkflowTaskCompletedEventAttributes().GetMeteringMetadata().GetNonfirstLocalActivityExecutionAttempts())
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
			a.Other++
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			a.Other += 2
		}
	}
	return prev, nil
}
