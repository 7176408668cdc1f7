package mcpflow_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// backoff is 5 s × 2^n capped at 300 s, as mcp_tasks defaults give.
func backoff(n int) time.Duration {
	return mcpflow.PollTiming{PollInterval: 5 * time.Second, MaxPollBackoff: 300 * time.Second}.ErrorBackoff(n)
}

func TestNotificationRecordIsChangeDriven(t *testing.T) {
	t.Parallel()
	var n mcpflow.Notification
	v, ok := n.Record("fp1")
	require.True(t, ok)
	require.Equal(t, 1, v)
	require.Equal(t, mcpflow.NotificationPending, n.Status)

	v, ok = n.Record("fp1")
	require.False(t, ok, "an unchanged fingerprint records nothing")
	require.Equal(t, 1, v)

	v, ok = n.Record("fp2")
	require.True(t, ok)
	require.Equal(t, 2, v)
}

// Spec §7 scenario 40: a newer event while v1 is in flight waits; after v1
// is delivered, v2 goes next.
func TestNotificationNewerVersionWaitsForTheInFlightOne(t *testing.T) {
	t.Parallel()
	var n mcpflow.Notification
	n.Record("input_required")
	v, attempt := n.Dispatch()
	require.Equal(t, 1, v)
	require.Equal(t, 1, attempt)

	v2, _ := n.Record("completed")
	require.Equal(t, 2, v2)
	require.Equal(t, mcpflow.NotificationDispatched, n.Status, "the in-flight delivery is not disturbed")
	require.Equal(t, 1, n.DispatchVersion)

	n.Delivered()
	require.Equal(t, 1, n.NotifiedVersion)
	require.Equal(t, mcpflow.NotificationPending, n.Status, "the newer version is pending next")
	v, attempt = n.Dispatch()
	require.Equal(t, 2, v)
	require.Equal(t, 1, attempt)
	n.Delivered()
	require.Equal(t, mcpflow.NotificationDelivered, n.Status)
	require.Equal(t, 2, n.NotifiedVersion)
}

// Spec §7 scenarios 41, 43: a failure is counted and retried with the same
// version; a newer event at retry time is delivered instead with a fresh
// budget.
func TestNotificationRetryCountsAndNewerVersionResetsBudget(t *testing.T) {
	t.Parallel()
	var n mcpflow.Notification
	n.Record("v1")
	n.Dispatch()
	require.False(t, n.Failed("webhook answered HTTP 500", t0, backoff))
	require.Equal(t, mcpflow.NotificationRetry, n.Status)
	require.Equal(t, 1, n.AttemptCount)
	require.Equal(t, t0.Add(5*time.Second), *n.NextAttemptAt)
	require.Equal(t, "webhook answered HTTP 500", *n.Error)

	v, attempt := n.Dispatch()
	require.Equal(t, 1, v, "the same version is retried")
	require.Equal(t, 2, attempt)
	require.False(t, n.Failed("again", t0, backoff))
	require.Equal(t, 2, n.AttemptCount)
	require.Equal(t, t0.Add(10*time.Second), *n.NextAttemptAt)

	n.Record("v2") // while waiting to retry
	require.Equal(t, mcpflow.NotificationRetry, n.Status)
	v, attempt = n.Dispatch()
	require.Equal(t, 2, v, "the newest version goes")
	require.Equal(t, 1, attempt)
	require.Equal(t, 0, n.AttemptCount, "a new version resets the budget")
	require.Nil(t, n.Error)
}

// Spec §7 scenarios 13 and 15: backoff 5, 10, 20, 40 s; the fifth counted
// failure dead-letters with the spec's message.
func TestNotificationBudget(t *testing.T) {
	t.Parallel()
	var n mcpflow.Notification
	n.Record("v1")
	var waits []time.Duration
	for i := 1; i <= 4; i++ {
		n.Dispatch()
		require.False(t, n.Failed("webhook answered HTTP 500", t0, backoff))
		waits = append(waits, n.NextAttemptAt.Sub(t0))
	}
	require.Equal(t, []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second}, waits)
	n.Dispatch()
	require.True(t, n.Failed("webhook answered HTTP 500", t0, backoff))
	require.Equal(t, mcpflow.NotificationDeadLetter, n.Status)
	require.Equal(t, 5, n.AttemptCount)
	require.Equal(t, "Notification delivery stopped after 5 failed attempts: webhook answered HTTP 500", *n.Error)
	require.False(t, n.Undelivered())
}

// Spec §7 scenario 12: busy retries after a flat interval and is not counted.
func TestNotificationBusyIsNotCounted(t *testing.T) {
	t.Parallel()
	var n mcpflow.Notification
	n.Record("v1")
	for i := 1; i <= 7; i++ {
		_, attempt := n.Dispatch()
		require.Equal(t, i, attempt, "busy attempts are numbered too")
		n.Busy("receiver busy (409)", t0.Add(5*time.Second))
	}
	require.Equal(t, 0, n.AttemptCount)
	require.Equal(t, mcpflow.NotificationRetry, n.Status)
	n.Dispatch()
	n.Delivered()
	require.Equal(t, mcpflow.NotificationDelivered, n.Status)
	require.Nil(t, n.Error)
}

// Spec §7 scenarios 14, 44, 46: a permanent rejection dead-letters at once,
// counted; if a newer event exists the row goes back to pending instead.
func TestNotificationDeadLetter(t *testing.T) {
	t.Parallel()
	var n mcpflow.Notification
	n.Record("v1")
	n.Dispatch()
	n.DeadLetter("webhook answered HTTP 410 Gone", true)
	require.Equal(t, mcpflow.NotificationDeadLetter, n.Status)
	require.Equal(t, 1, n.AttemptCount)
	require.Equal(t, "webhook answered HTTP 410 Gone", *n.Error)
	require.False(t, n.Undelivered(), "a dead letter is not retried")

	var m mcpflow.Notification
	m.Record("input_required")
	m.Dispatch()
	m.Record("completed")
	m.DeadLetter("webhook answered HTTP 404 Not Found", true)
	require.Equal(t, mcpflow.NotificationPending, m.Status, "the newer event is still delivered")
	require.Equal(t, 0, m.AttemptCount)
	require.Nil(t, m.Error)
	v, attempt := m.Dispatch()
	require.Equal(t, 2, v)
	require.Equal(t, 1, attempt)

	// A new event after a dead letter is delivered.
	n.Record("v2")
	require.Equal(t, mcpflow.NotificationPending, n.Status)
	require.Equal(t, 0, n.AttemptCount)
}

func TestNotificationApply(t *testing.T) {
	t.Parallel()
	var task mcpflow.Task
	var n mcpflow.Notification
	n.Apply(&task)
	require.Equal(t, mcpflow.NotificationNone, task.NotificationStatus)
	require.Nil(t, task.EventFingerprint)
	n.Record("abc")
	n.Dispatch()
	n.Failed("boom", t0, backoff)
	n.Apply(&task)
	require.Equal(t, mcpflow.NotificationRetry, task.NotificationStatus)
	require.Equal(t, "boom", *task.NotificationError)
	require.Equal(t, 1, task.NotificationAttemptCount)
	require.Equal(t, 1, task.EventVersion)
	require.Equal(t, "abc", *task.EventFingerprint)
}

// An inbox-only writer's state (each version dispatched once, then
// delivered or dead-lettered) is what its row says, so a writer can go on
// from the row: the next version is numbered as it would have been.
func TestInboxNotificationFromRow(t *testing.T) {
	t.Parallel()
	var n mcpflow.Notification
	var task mcpflow.Task
	n.Apply(&task)
	require.Equal(t, n, mcpflow.InboxNotification(&task), "no event yet")

	for i, step := range []func(*mcpflow.Notification){
		func(n *mcpflow.Notification) { n.Dispatch(); n.Delivered() },
		func(n *mcpflow.Notification) { n.Dispatch(); n.Delivered() },
		func(n *mcpflow.Notification) {
			n.Dispatch()
			n.DeadLetter("thread 't' was deleted; the event was not delivered", true)
		},
	} {
		_, changed := n.Record(string(rune('a' + i)))
		require.True(t, changed)
		step(&n)
		n.Apply(&task)
		got := mcpflow.InboxNotification(&task)
		require.Equal(t, n, got, "after version %d", i+1)

		next, want := got, n
		v1, _ := next.Record("next")
		v2, _ := want.Record("next")
		require.Equal(t, v2, v1)
		require.Equal(t, i+2, v1)
	}
}
