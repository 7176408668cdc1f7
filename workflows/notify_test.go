package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
	"github.com/mcpflow/mcpflow/workflows"
)

// Workflow scenarios of spec §7 9–16 and 40–46, re-expressed for delivery
// from the task workflow to a real HTTP receiver (the webhook) and the
// thread inbox. The test clock runs the backoff; the receiver records the
// test-clock time of every POST.

const hookSecret = "test-webhook-secret"

// post is one request the receiver got.
type post struct {
	at        time.Time
	key       string
	attempt   int
	signature string
	body      []byte
	event     map[string]any
}

// receiver is a webhook endpoint that answers with script(n, event) for
// its n-th request (from 1).
type receiver struct {
	mu     sync.Mutex
	posts  []post
	script func(n int, event map[string]any) int
}

func (r *receiver) all() []post {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]post(nil), r.posts...)
}

// setupHook is setup with a webhook configured on the task and its worker.
func setupHook(t *testing.T, d *fakeDriver, script func(n int, event map[string]any) int) (*bundle, *receiver) {
	t.Helper()
	b := setup(t, d)
	rec := &receiver{script: script}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ev map[string]any
		_ = json.Unmarshal(body, &ev)
		attempt, _ := strconv.Atoi(req.Header.Get(activities.HeaderDeliveryAttempt))
		rec.mu.Lock()
		rec.posts = append(rec.posts, post{at: b.env.Now(), key: req.Header.Get(activities.HeaderIdempotencyKey),
			attempt: attempt, signature: req.Header.Get(activities.HeaderSignature), body: body, event: ev})
		n := len(rec.posts)
		rec.mu.Unlock()
		w.WriteHeader(rec.script(n, ev))
	}))
	t.Cleanup(srv.Close)
	b.in.Config.Webhook = true
	b.acts.Webhook = &activities.Webhook{URL: srv.URL + "/hook", Secret: []byte(hookSecret)}
	return b, rec
}

func answer(codes ...int) func(int, map[string]any) int {
	return func(n int, _ map[string]any) int {
		if n > len(codes) {
			return codes[len(codes)-1]
		}
		return codes[n-1]
	}
}

func postGaps(ps []post) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(ps); i++ {
		out = append(out, ps[i].at.Sub(ps[i-1].at).Round(time.Second))
	}
	return out
}

func inbox(t *testing.T, b *bundle) []*mcpflow.ThreadEvent {
	t.Helper()
	evs, err := b.db.ListEvents(context.Background(), mcpflow.ThreadRef{UserID: b.in.UserID, ThreadID: b.in.ThreadID}, 0, 0)
	require.NoError(t, err)
	return evs
}

// Scenario 9: the event is delivered once, signed, with a stable key; the
// row says delivered only after the receiver accepted it.
func TestNotifyDeliversCompletedEventOnce(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1", statuses: []statusAnswer{working(), completed()}}
	b, rec := setupHook(t, d, answer(200))
	_, err := b.run(t)
	require.NoError(t, err)
	require.NoError(t, b.env.GetWorkflowError())

	ps := rec.all()
	require.Len(t, ps, 1)
	p := ps[0]
	require.Equal(t, "mcp-task:"+b.in.TaskID+":1", p.key)
	require.Equal(t, 1, p.attempt)
	require.Equal(t, activities.Sign([]byte(hookSecret), p.body), p.signature)
	require.Equal(t, "completed", p.event["status"])
	require.Equal(t, "done", p.event["result"])
	require.Equal(t, b.in.TaskID, p.event["task_id"])
	require.Equal(t, "job", p.event["task_name"])
	require.Equal(t, "th", p.event["thread_id"])
	require.Equal(t, "u", p.event["user_id"])
	require.EqualValues(t, 1, p.event["event_version"])
	require.Equal(t, false, p.event["tracking_degraded"])

	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDelivered, task.NotificationStatus)
	require.Zero(t, task.NotificationAttemptCount)
	require.Nil(t, task.NotificationError)
	require.Equal(t, 1, task.EventVersion)
	require.Equal(t, 1, task.NotifiedVersion)

	evs := inbox(t, b)
	require.Len(t, evs, 1, "the inbox always gets the event too")
	require.Equal(t, 1, evs[0].EventVersion)
}

// Scenarios 13 and 15: a receiver that always fails gets exactly five
// counted attempts, 5, 10, 20 and 40 s apart, with one key; then the
// event is dead-lettered with the spec's message.
func TestNotifyBudgetDeadLetters(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1", statuses: []statusAnswer{completed()}}
	b, rec := setupHook(t, d, answer(500))
	_, err := b.run(t)
	require.NoError(t, err)
	require.NoError(t, b.env.GetWorkflowError())

	ps := rec.all()
	require.Len(t, ps, 5)
	require.Equal(t, secs(5, 10, 20, 40), postGaps(ps))
	for i, p := range ps {
		require.Equal(t, "mcp-task:"+b.in.TaskID+":1", p.key, "the same key on every attempt")
		require.Equal(t, i+1, p.attempt)
	}
	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDeadLetter, task.NotificationStatus)
	require.Equal(t, 5, task.NotificationAttemptCount)
	require.Equal(t, "Notification delivery stopped after 5 failed attempts: webhook answered HTTP 500 Internal Server Error", *task.NotificationError)
}

// Scenario 12: 409 is retried after the poll interval and not counted.
func TestNotifyBusyIsRetriedWithoutCounting(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1", statuses: []statusAnswer{completed()}}
	b, rec := setupHook(t, d, answer(409, 409, 200))
	var seen []*mcpflow.Task
	b.acts.Webhook.Client = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		// What the API would show while the receiver is busy.
		if task, err := b.db.GetTask(context.Background(), b.in.TaskID); err == nil {
			seen = append(seen, task)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	_, err := b.run(t)
	require.NoError(t, err)
	ps := rec.all()
	require.Len(t, ps, 3)
	require.Equal(t, secs(5, 5), postGaps(ps))
	require.Equal(t, []int{1, 2, 3}, []int{ps[0].attempt, ps[1].attempt, ps[2].attempt})
	require.Len(t, seen, 3)
	require.Equal(t, mcpflow.NotificationDispatched, seen[1].NotificationStatus)
	require.Zero(t, seen[2].NotificationAttemptCount, "busy answers are not counted")
	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDelivered, task.NotificationStatus)
	require.Zero(t, task.NotificationAttemptCount)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Scenarios 14 and 44: 410 (and 404) dead-letter at once, counted, and are
// never retried.
func TestNotifyGoneDeadLettersAtOnce(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusGone, http.StatusNotFound} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			d := &fakeDriver{submitID: "r1", statuses: []statusAnswer{completed()}}
			b, rec := setupHook(t, d, answer(code))
			_, err := b.run(t)
			require.NoError(t, err)
			require.Len(t, rec.all(), 1)
			task := b.task(t)
			require.Equal(t, mcpflow.NotificationDeadLetter, task.NotificationStatus)
			require.Equal(t, 1, task.NotificationAttemptCount)
			require.Equal(t, "webhook answered HTTP "+strconv.Itoa(code)+" "+http.StatusText(code), *task.NotificationError)
		})
	}
}

// Scenarios 10 and 43: failures are counted and retried with the same
// version and key; success resets the count.
func TestNotifyFailsTwiceThenDelivers(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1", statuses: []statusAnswer{completed()}}
	b, rec := setupHook(t, d, answer(500, 503, 204))
	_, err := b.run(t)
	require.NoError(t, err)
	ps := rec.all()
	require.Len(t, ps, 3)
	require.Equal(t, secs(5, 10), postGaps(ps))
	for _, p := range ps {
		require.Equal(t, ps[0].key, p.key)
		require.Equal(t, ps[0].body, p.body, "the same frozen event on every attempt")
	}
	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDelivered, task.NotificationStatus)
	require.Zero(t, task.NotificationAttemptCount)
}

// Scenario 40: a newer event while one is in flight waits; the in-flight
// version is delivered, then the newer one.
func TestNotifyNewerEventWaitsForTheInFlightOne(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1",
		submitSnap: &mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"question": "Which size?"}},
		statuses:   []statusAnswer{completed()}}
	b, rec := setupHook(t, d, answer(200))
	// Each delivery takes two minutes of test time: the poll after the
	// input_required interval (60 s) completes the task meanwhile.
	b.env.OnActivity(b.acts.Deliver, mock.Anything, mock.Anything).After(2 * time.Minute).Return(b.acts.Deliver)
	_, err := b.run(t)
	require.NoError(t, err)
	require.NoError(t, b.env.GetWorkflowError())

	ps := rec.all()
	require.Len(t, ps, 2)
	require.Equal(t, "input_required", ps[0].event["status"])
	require.Equal(t, map[string]any{"question": "Which size?"}, ps[0].event["input_required"])
	require.Equal(t, "completed", ps[1].event["status"])
	require.Equal(t, "mcp-task:"+b.in.TaskID+":2", ps[1].key)
	require.Equal(t, 1, ps[1].attempt)
	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDelivered, task.NotificationStatus)
	require.Equal(t, 2, task.NotifiedVersion)
	evs := inbox(t, b)
	require.Len(t, evs, 2)
	require.Equal(t, []int{1, 2}, []int{evs[0].EventVersion, evs[1].EventVersion})
}

// Scenario 41: an event waiting for its retry is replaced by a newer one,
// which starts with a fresh budget.
func TestNotifyRetryCarriesTheNewestEventWithAFreshBudget(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1",
		submitSnap: &mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"question": "?"}},
		statuses:   []statusAnswer{completed()}}
	// v1 fails until the task has completed (the poll comes 60 s in).
	b, rec := setupHook(t, d, func(n int, ev map[string]any) int {
		if ev["status"] == "input_required" {
			return 500
		}
		return 200
	})
	_, err := b.run(t)
	require.NoError(t, err)
	ps := rec.all()
	require.GreaterOrEqual(t, len(ps), 2)
	last := ps[len(ps)-1]
	require.Equal(t, "completed", last.event["status"])
	require.Equal(t, 1, last.attempt, "a newer version starts again at attempt 1")
	for _, p := range ps[:len(ps)-1] {
		require.Equal(t, "input_required", p.event["status"])
	}
	require.Less(t, len(ps)-1, 5, "v1 was replaced before its budget ran out")
	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDelivered, task.NotificationStatus)
	require.Zero(t, task.NotificationAttemptCount)
	require.Equal(t, 2, task.NotifiedVersion)
}

// Scenario 46: dead-lettering an old version while a newer one exists
// returns to pending, and the newer event is still delivered.
func TestNotifyDeadLetterOfAnOldVersionStillDeliversTheNewer(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1",
		submitSnap: &mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"question": "?"}},
		statuses:   []statusAnswer{completed()}}
	b, rec := setupHook(t, d, func(n int, ev map[string]any) int {
		if ev["event_version"] == 1.0 {
			return http.StatusGone
		}
		return 200
	})
	b.env.OnActivity(b.acts.Deliver, mock.Anything, mock.Anything).After(2 * time.Minute).Return(b.acts.Deliver)
	_, err := b.run(t)
	require.NoError(t, err)
	ps := rec.all()
	require.Len(t, ps, 2)
	require.EqualValues(t, 2, ps[1].event["event_version"])
	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDelivered, task.NotificationStatus)
	require.Zero(t, task.NotificationAttemptCount)
	require.Nil(t, task.NotificationError)
}

// Scenarios 42 and 16: a delivery whose activity fails (here: a worker
// that died mid-POST, seen as a timeout) counts like a failed POST and is
// retried; the budget applies to it too.
func TestNotifyActivityFailureIsCounted(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1", statuses: []statusAnswer{completed()}}
	b, rec := setupHook(t, d, answer(200))
	calls := 0
	b.env.OnActivity(b.acts.Deliver, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.DeliverInput) (*activities.DeliverOutput, error) {
			calls++
			if calls <= 2 {
				return nil, errors.New("worker lost")
			}
			return b.acts.Deliver(ctx, in)
		})
	_, err := b.run(t)
	require.NoError(t, err)
	ps := rec.all()
	require.Len(t, ps, 1)
	require.Equal(t, 3, ps[0].attempt, "the third attempt of the version reached the receiver")
	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDelivered, task.NotificationStatus)
	require.Equal(t, 3, calls)
}

// Polling goes on while a notification is retried: a degraded-tracking
// event is retried while the task keeps being polled to completion.
func TestNotifyPollingContinuesWhileRetrying(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1", statuses: []statusAnswer{
		fails("network down"), fails("network down"), fails("network down"),
		working(), working(), completed()}}
	b, rec := setupHook(t, d, func(n int, ev map[string]any) int {
		if ev["tracking_degraded"] == true {
			return 500
		}
		return 200
	})
	_, err := b.run(t)
	require.NoError(t, err)
	statuses, _ := d.counts()
	require.Equal(t, 6, statuses)
	ps := rec.all()
	require.Equal(t, true, ps[0].event["tracking_degraded"])
	require.Equal(t, "network down", ps[0].event["last_poll_error"])
	last := ps[len(ps)-1]
	require.Equal(t, "completed", last.event["status"])
	require.Equal(t, mcpflow.NotificationDelivered, b.task(t).NotificationStatus)
}

// A thread deleted before its task ends gets nothing: the inbox refuses
// the event and the version is dead-lettered without a POST.
func TestNotifyDeletedThreadDeadLetters(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1", statuses: []statusAnswer{working(), completed()}}
	b, rec := setupHook(t, d, answer(200))
	d.onStatus = func(n int) {
		if n == 1 {
			require.NoError(t, b.db.DeleteThread(context.Background(), "u", "th", time.Now()))
		}
	}
	_, err := b.run(t)
	require.NoError(t, err)
	require.Empty(t, rec.all())
	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDeadLetter, task.NotificationStatus)
	require.Equal(t, "thread 'th' was deleted; the event was not delivered", *task.NotificationError)
	require.Empty(t, inbox(t, b))
}

// Without a webhook the inbox append is the delivery.
func TestInboxOnlyDelivery(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1",
		submitSnap: &mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"question": "?"}},
		statuses:   []statusAnswer{completed()}}
	b := setup(t, d)
	_, err := b.run(t)
	require.NoError(t, err)
	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDelivered, task.NotificationStatus)
	require.Equal(t, 2, task.EventVersion)
	require.Equal(t, 2, task.NotifiedVersion)
	evs := inbox(t, b)
	require.Len(t, evs, 2)
	require.Equal(t, mcpflow.StatusInputRequired, evs[0].Status)
	require.Equal(t, mcpflow.StatusCompleted, evs[1].Status)
}

// An unchanged state records no new event: polls that return the same
// input_required question do not add versions.
func TestNotifyUnchangedStateAddsNoVersion(t *testing.T) {
	t.Parallel()
	q := mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"question": "?"}}
	d := &fakeDriver{submitID: "r1", submitSnap: &q, statuses: []statusAnswer{{snap: q}, {snap: q}, {snap: q}, completed()}}
	b, rec := setupHook(t, d, answer(200))
	_, err := b.run(t)
	require.NoError(t, err)
	require.Len(t, rec.all(), 2)
	require.Len(t, inbox(t, b), 2)
	require.Equal(t, 2, b.task(t).EventVersion)
}

// The notify signal (sent by the API when a thread is deleted) retries a
// waiting delivery at once: here the thread is gone by then, so the event
// dead-letters long before its backoff would have ended.
func TestNotifySignalRetriesAWaitingDeliveryNow(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1", statuses: []statusAnswer{completed()}}
	b, rec := setupHook(t, d, answer(500))
	b.in.Config.Timing.PollInterval = time.Minute // the first retry would wait a minute
	b.env.RegisterDelayedCallback(func() {
		require.NoError(t, b.db.DeleteThread(context.Background(), "u", "th", time.Now()))
		b.env.SignalWorkflow(workflows.SignalNotify, nil)
	}, 70*time.Second) // the poll comes at 60 s, the first POST right after
	_, err := b.run(t)
	require.NoError(t, err)
	ps := rec.all()
	require.Len(t, ps, 1, "the woken attempt found the thread gone and sent nothing")
	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDeadLetter, task.NotificationStatus)
	require.Equal(t, "thread 'th' was deleted", *task.NotificationError)
	require.Equal(t, 2, task.NotificationAttemptCount)
	require.Less(t, b.env.Now().Sub(ps[0].at), time.Minute, "dead-lettered before the minute-long backoff ended")
}

// A delivery activity that fails stores a fixed text as the notification
// error (shown by the task API), not the failure's details.
func TestNotifyActivityFailureHidesItsDetails(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "r1", statuses: []statusAnswer{completed()}}
	b, _ := setupHook(t, d, answer(200))
	b.env.OnActivity(b.acts.Deliver, mock.Anything, mock.Anything).Return(nil,
		errors.New("read thread: failed to connect to `host=10.0.0.3 user=mcpflow database=prod`"))
	_, err := b.run(t)
	require.NoError(t, err)
	task := b.task(t)
	require.Equal(t, mcpflow.NotificationDeadLetter, task.NotificationStatus)
	require.NotNil(t, task.NotificationError)
	require.Contains(t, *task.NotificationError, workflows.DeliveryRunFailedMessage)
	require.NotContains(t, *task.NotificationError, "10.0.0.3")
}

// A cancel that arrives after the task finished, while its notification is
// still being delivered, changes nothing: no cancel request on the row, no
// remote cancel.
func TestCancelWhileDrainingIsIgnored(t *testing.T) {
	t.Parallel()
	for name, cancel := range map[string]func(*bundle){
		"cancel signal":   func(b *bundle) { b.env.SignalWorkflow(workflows.SignalCancel, "too late") },
		"Temporal cancel": func(b *bundle) { b.env.CancelWorkflow() },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := &fakeDriver{submitID: "r1", statuses: []statusAnswer{completed()}}
			b, rec := setupHook(t, d, answer(200))
			b.env.OnActivity(b.acts.Deliver, mock.Anything, mock.Anything).After(2 * time.Minute).Return(b.acts.Deliver)
			b.env.RegisterDelayedCallback(func() { cancel(b) }, time.Minute)
			_, err := b.run(t)
			require.NoError(t, err)
			require.True(t, b.env.IsWorkflowCompleted())
			require.NoError(t, b.env.GetWorkflowError(), "the finished run ends as completed, not as cancelled")
			require.Len(t, rec.all(), 1)
			task := b.task(t)
			require.Equal(t, mcpflow.StatusCompleted, task.Status)
			require.Nil(t, task.CancelRequestedAt)
			_, cancels := d.counts()
			require.Zero(t, cancels)
			require.Equal(t, mcpflow.NotificationDelivered, task.NotificationStatus)
		})
	}
}
