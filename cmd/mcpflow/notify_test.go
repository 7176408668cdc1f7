package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/mcpflow/mcpflow/activities"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

const e2eWebhookSecret = "e2e-webhook-secret-value"

// hookPost is one POST the receiver got.
type hookPost struct {
	at        time.Time
	key       string
	attempt   int
	signature string
	body      []byte
	event     map[string]any
}

// hookReceiver is a webhook on a fixed loopback address that can be taken
// down and brought back. Each task's answers are scripted by task id; a
// task without a script gets 503.
type hookReceiver struct {
	addr string

	mu      sync.Mutex
	posts   map[string][]hookPost // by task id
	scripts map[string][]int
	srv     *http.Server
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	r := &hookReceiver{addr: testenv.FreeAddr(t), posts: map[string][]hookPost{}, scripts: map[string][]int{}}
	r.up(t)
	t.Cleanup(r.down)
	return r
}

func (r *hookReceiver) url() string { return "http://" + r.addr + "/hook" }

func (r *hookReceiver) up(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(r.serve)}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

func (r *hookReceiver) down() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

func (r *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var ev map[string]any
	_ = json.Unmarshal(body, &ev)
	id, _ := ev["task_id"].(string)
	attempt, _ := strconv.Atoi(req.Header.Get(activities.HeaderDeliveryAttempt))
	r.mu.Lock()
	r.posts[id] = append(r.posts[id], hookPost{at: time.Now(), key: req.Header.Get(activities.HeaderIdempotencyKey),
		attempt: attempt, signature: req.Header.Get(activities.HeaderSignature), body: body, event: ev})
	n := len(r.posts[id])
	code := http.StatusServiceUnavailable
	if s := r.scripts[id]; len(s) > 0 {
		code = s[min(n, len(s))-1]
	}
	r.mu.Unlock()
	w.WriteHeader(code)
}

func (r *hookReceiver) script(id string, codes ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scripts[id] = codes
}

func (r *hookReceiver) got(id string) []hookPost {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookPost(nil), r.posts[id]...)
}

// startNotifyEnv runs mcpflow dev with the demo task server and a webhook.
func startNotifyEnv(t *testing.T, hook *hookReceiver) (*taskEnv, string) {
	t.Helper()
	cfg := writeConfig(t, fmt.Sprintf(`mcp_tasks: { enabled: true, poll_interval_seconds: 1 }
notifications: { webhook_url: %q, webhook_secret: %q }
`, hook.url(), e2eWebhookSecret), demoTaskExt(demoHTTP(t)))
	return startNotifyMain(t, cfg), cfg
}

func startNotifyMain(t *testing.T, cfg string) *taskEnv {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	m := startMain(t, ModeDev, cfg, logs)
	waitForWorker(t, logs)
	return &taskEnv{m: m}
}

// waitNotification waits until the task's notification_status is want.
func (e *taskEnv) waitNotification(t *testing.T, thread, id, want string) map[string]any {
	t.Helper()
	return e.waitDetail(t, thread, id, "notification_status", want)
}

// waitClosed waits until the task's workflow has closed and requires that
// it completed. The workflow ends only once its last delivery attempt's
// outcome is stored, so from then on no POST can follow: what the
// receiver got is all it will ever get.
func waitClosed(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err := temporal.Client().GetWorkflow(ctx, id, "").Get(ctx, nil)
	require.NoError(t, err, "the workflow of task %s completed", id)
	d, err := temporal.Client().DescribeWorkflow(ctx, id, "")
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.RawResponse.GetWorkflowExecutionInfo().GetStatus())
}

func requireOneKey(t *testing.T, id string, posts []hookPost) {
	t.Helper()
	for i, p := range posts {
		require.Equal(t, "mcp-task:"+id+":1", p.key)
		require.Equal(t, i+1, p.attempt, "X-Mcpflow-Delivery-Attempt counts the POSTs of the version")
		require.Equal(t, activities.Sign([]byte(e2eWebhookSecret), p.body), p.signature)
	}
}

func TestWebhookDeliveryEndToEnd(t *testing.T) {
	hook := newHookReceiver(t)
	e, _ := startNotifyEnv(t, hook)

	t.Run("fails twice then accepts", func(t *testing.T) {
		t.Parallel()
		id := e.submit(t, "n1", "demo_submit_job", `{"duration_seconds": 1}`)
		hook.script(id, 500, 500, 200)
		d := e.waitNotification(t, "n1", id, "delivered")
		require.EqualValues(t, 0, d["notification_attempt_count"])
		waitClosed(t, id)
		posts := hook.got(id)
		require.Equal(t, 3, len(posts), "delivered once: no POST after the 2xx")
		requireOneKey(t, id, posts)
		ev := posts[2].event
		require.Equal(t, "completed", ev["status"])
		require.Equal(t, map[string]any{"answer": 42.0}, ev["result"])
		require.Equal(t, "n1", ev["thread_id"])
		require.Equal(t, "alice", ev["user_id"])
		require.EqualValues(t, 1, ev["event_version"])
		h := historyBytes(t, id)
		require.NotContains(t, string(h), e2eWebhookSecret, "the webhook secret never enters Temporal history")
		require.Contains(t, string(h), "deliver event v1", "the deliveries are visible in the history")
	})
	t.Run("always 500 dead-letters after five counted attempts", func(t *testing.T) {
		t.Parallel()
		id := e.submit(t, "n2", "demo_submit_job", `{"duration_seconds": 0.5}`)
		hook.script(id, 500)
		d := e.waitNotification(t, "n2", id, "dead_letter")
		require.EqualValues(t, 5, d["notification_attempt_count"])
		require.Equal(t, "Notification delivery stopped after 5 failed attempts: webhook answered HTTP 500 Internal Server Error", d["notification_error"])
		waitClosed(t, id)
		posts := hook.got(id)
		require.Equal(t, 5, len(posts), "no attempt after the dead letter")
		requireOneKey(t, id, posts)
		// poll_interval 1 s: the retries wait 1, 2, 4 and 8 s (at least).
		for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
			waited := posts[i+1].at.Sub(posts[i].at)
			require.GreaterOrEqual(t, waited, want-100*time.Millisecond, "backoff before attempt %d", i+2)
		}
	})
	t.Run("410 dead-letters after one attempt", func(t *testing.T) {
		t.Parallel()
		id := e.submit(t, "n3", "demo_submit_job", `{"duration_seconds": 1}`)
		hook.script(id, 410)
		d := e.waitNotification(t, "n3", id, "dead_letter")
		require.EqualValues(t, 1, d["notification_attempt_count"])
		require.Equal(t, "webhook answered HTTP 410 Gone", d["notification_error"])
		waitClosed(t, id)
		require.Equal(t, 1, len(hook.got(id)), "no attempt after the 410")
	})
	t.Run("409 twice then 200 is delivered with no failure counted", func(t *testing.T) {
		t.Parallel()
		id := e.submit(t, "n4", "demo_submit_job", `{"duration_seconds": 1}`)
		hook.script(id, 409, 409, 200)
		d := e.waitNotification(t, "n4", id, "delivered")
		require.EqualValues(t, 0, d["notification_attempt_count"])
		require.Nil(t, d["notification_error"])
		waitClosed(t, id)
		posts := hook.got(id)
		require.Equal(t, 3, len(posts), "delivered once: no POST after the 2xx")
		requireOneKey(t, id, posts)
	})
	t.Run("a deleted thread gets nothing", func(t *testing.T) {
		t.Parallel()
		id := e.submit(t, "n5", "demo_submit_job", `{"duration_seconds": 2}`)
		hook.script(id, 200)
		req, err := http.NewRequest("DELETE", e.m.URL()+"/api/threads/n5", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testUserToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, 204, resp.StatusCode)
		task, err := e.m.DB.GetTask(context.Background(), id)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			task, err = e.m.DB.GetTask(context.Background(), id)
			return err == nil && task.NotificationStatus == "dead_letter"
		}, 60*time.Second, 100*time.Millisecond)
		require.Equal(t, "thread 'n5' was deleted; the event was not delivered", *task.NotificationError)
		require.Empty(t, hook.got(id))
	})
}

func TestWebhookReceiverDownWhileMcpflowRestarts(t *testing.T) {
	hook := newHookReceiver(t)
	hook.down()
	e, cfg := startNotifyEnv(t, hook)
	id := e.submit(t, "r1", "demo_submit_job", `{"duration_seconds": 0.5}`)
	hook.script(id, 200)
	d := e.waitNotification(t, "r1", id, "retry")
	require.Contains(t, d["notification_error"], "webhook request failed: ")
	require.NotContains(t, d["notification_error"], hook.addr, "the webhook's address stays out of the error")

	// mcpflow goes away, then both come back.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, e.m.Close(ctx))
	hook.up(t)
	e2 := startNotifyMain(t, cfg)
	d = e2.waitNotification(t, "r1", id, "delivered")
	require.EqualValues(t, 0, d["notification_attempt_count"])
	posts := hook.got(id)
	require.Len(t, posts, 1, "the only POST that reached the receiver delivered it")
	require.Equal(t, "mcp-task:"+id+":1", posts[0].key)
	require.Greater(t, posts[0].attempt, 1, "earlier attempts failed while the receiver was down")
}

// The inbox in the full stack: the task's events arrive in order, the
// after cursor works and a long poll returns when the next one arrives.
func TestThreadInboxEndToEnd(t *testing.T) {
	e := startTaskEnv(t)
	first := e.submit(t, "ib", "demo_submit_job", `{"duration_seconds": 0.5, "outcome": "failed", "error": "disk full"}`)
	e.waitStatus(t, "ib", first, "failed")
	code, body := get(t, e.m.URL()+"/api/threads/ib/events", testUserToken)
	require.Equal(t, 200, code)
	evs := body["events"].([]any)
	require.Len(t, evs, 1)
	ev := evs[0].(map[string]any)
	require.Equal(t, first, ev["task_id"])
	require.Equal(t, "failed", ev["status"])
	require.Equal(t, "disk full", ev["error"])
	next := body["next"].(float64)

	type answer struct {
		code int
		body map[string]any
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/threads/ib/events?after=%d&wait=30", e.m.URL(), int64(next)), nil)
		req.Header.Set("Authorization", "Bearer "+testUserToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var b map[string]any
		err = json.NewDecoder(resp.Body).Decode(&b)
		got <- answer{resp.StatusCode, b, err}
	}()
	second := e.submit(t, "ib", "demo_submit_job", `{"duration_seconds": 1}`)
	select {
	case a := <-got:
		require.NoError(t, a.err)
		require.Equal(t, 200, a.code)
		evs := a.body["events"].([]any)
		require.Len(t, evs, 1)
		require.Equal(t, second, evs[0].(map[string]any)["task_id"])
		require.Equal(t, "completed", evs[0].(map[string]any)["status"])
		require.Greater(t, a.body["next"].(float64), next)
	case <-time.After(40 * time.Second):
		t.Fatal("the long poll did not return the next event")
	}
	d := e.waitStatus(t, "ib", second, "completed")
	require.Equal(t, "delivered", d["notification_status"], "without a webhook the inbox append is the delivery")
}
