package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/store"
)

// testSlots is a per-user cap like the API's, that tells the test when a
// slot is given back.
type testSlots struct {
	max      int
	mu       sync.Mutex
	n        map[string]int
	released chan string
}

func newTestSlots(max int) *testSlots {
	return &testSlots{max: max, n: map[string]int{}, released: make(chan string, 100)}
}

func (s *testSlots) acquirer(user string) func() (func(), bool) {
	return func() (func(), bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.n[user] >= s.max {
			return nil, false
		}
		s.n[user]++
		return func() {
			s.mu.Lock()
			s.n[user]--
			s.mu.Unlock()
			s.released <- user
		}, true
	}
}

func (s *testSlots) count(user string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[user]
}

// waitRelease waits until a slot of the user was given back.
func (s *testSlots) waitRelease(t *testing.T, user string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case u := <-s.released:
			if u == user {
				return
			}
		case <-timeout:
			t.Fatalf("no slot of %s was given back", user)
		}
	}
}

// limitEnv is an MCP endpoint on a real SQLite store over real HTTP, whose
// requests carry the user and thread of the X-Test-User and X-Test-Thread
// headers (default "u" and "th") and the test's slots.
type limitEnv struct {
	db      *store.DB
	s       *Server
	url     string
	waits   *testSlots
	streams *testSlots
}

func newLimitEnv(t *testing.T, opts Options, waits, streams int) *limitEnv {
	t.Helper()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(t.TempDir(), "l.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return newLimitEnvOn(t, db, opts, waits, streams)
}

// newLimitEnvOn is newLimitEnv on the store db.
func newLimitEnvOn(t *testing.T, db *store.DB, opts Options, waits, streams int) *limitEnv {
	t.Helper()
	ctx := context.Background()
	for _, th := range []struct{ id, user string }{{"th", "u"}, {"th2", "u"}, {"tv", "v"}} {
		_, _, err := db.CreateThread(ctx, &mcpflow.Thread{ID: th.id, UserID: th.user})
		require.NoError(t, err)
	}
	opts.Tools, opts.Sessions, opts.Events, opts.Tasks = noTools{}, db, db, db
	if opts.CancelTask == nil {
		opts.CancelTask = func(context.Context, *mcpflow.Task) error { return nil }
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = time.Hour
	}
	e := &limitEnv{db: db, s: New(opts), waits: newTestSlots(waits), streams: newTestSlots(streams)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, thread := r.Header.Get("X-Test-User"), r.Header.Get("X-Test-Thread")
		if user == "" {
			user = "u"
		}
		if thread == "" {
			thread = "th"
		}
		e.s.ServeMCP(w, r, &mcpflow.MCPRequest{UserID: user, ThreadID: thread,
			AcquireWait: e.waits.acquirer(user), AcquireStream: e.streams.acquirer(user)})
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(e.s.Stop)
	e.url = srv.URL
	return e
}

// who names the user and thread of a request.
type who struct{ user, thread string }

var alice = who{"u", "th"}

func (e *limitEnv) request(ctx context.Context, t *testing.T, method string, as who, session, body string, sse bool) *http.Response {
	t.Helper()
	resp, err := e.send(ctx, method, as, session, body, sse)
	require.NoError(t, err)
	return resp
}

// send is request for goroutines other than the test's.
func (e *limitEnv) send(ctx context.Context, method string, as who, session, body string, sse bool) (*http.Response, error) {
	r, err := http.NewRequestWithContext(ctx, method, e.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Test-User", as.user)
	r.Header.Set("X-Test-Thread", as.thread)
	if sse {
		r.Header.Set("Accept", "application/json, text/event-stream")
	}
	if session != "" {
		r.Header.Set(HeaderSessionID, session)
	}
	return http.DefaultClient.Do(r)
}

// rpcJSON sends a POST and decodes its JSON answer.
func (e *limitEnv) rpcJSON(t *testing.T, as who, session, body string) (*http.Response, map[string]any) {
	t.Helper()
	resp := e.request(context.Background(), t, "POST", as, session, body, false)
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return resp, out
}

func (e *limitEnv) initialize(t *testing.T, as who) string {
	t.Helper()
	resp, out := e.rpcJSON(t, as, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	require.Equal(t, 200, resp.StatusCode, out)
	return resp.Header.Get(HeaderSessionID)
}

// stream opens a GET stream and returns its SSE data lines (closed when the
// stream ends). It fails unless the answer is 200.
func (e *limitEnv) stream(ctx context.Context, t *testing.T, as who, session string) <-chan string {
	t.Helper()
	resp := e.request(ctx, t, "GET", as, session, "", true)
	require.Equal(t, 200, resp.StatusCode)
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "data: ") || strings.HasPrefix(l, "id: ") {
				lines <- l
			}
		}
	}()
	require.True(t, strings.HasPrefix(<-lines, "id: "), "the priming event")
	return lines
}

// requireTooMany checks a 429 answer: Retry-After and a JSON-RPC error
// with the request's id.
func requireTooMany(t *testing.T, resp *http.Response, id any, limit string) {
	t.Helper()
	defer resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	var out struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, "2.0", out.JSONRPC)
	require.Equal(t, id, out.ID)
	require.Equal(t, codeTooMany, out.Error.Code)
	require.Contains(t, out.Error.Message, limit)
}

func ended(t *testing.T, lines <-chan string, what string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("%s did not end", what)
		}
	}
}

func (e *limitEnv) task(t *testing.T, as who, status mcpflow.Status) *mcpflow.Task {
	t.Helper()
	task := &mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: as.user, ThreadID: as.thread, ServerName: "s", DriverName: mcpflow.DriverOrdinary,
		RemoteTaskID: mcpflow.NewTaskID(), TaskName: "job", Status: status}
	require.NoError(t, e.db.CreateTask(context.Background(), task))
	return task
}

// finish ends a task as its workflow would: the row, then the inbox event.
func (e *limitEnv) finish(t *testing.T, task *mcpflow.Task, status mcpflow.Status) {
	t.Helper()
	ctx := context.Background()
	task.Status = status
	require.NoError(t, e.db.UpdateTask(ctx, task))
	_, err := e.db.AppendEvent(ctx, &mcpflow.ThreadEvent{UserID: task.UserID, ThreadID: task.ThreadID, TaskID: task.ID, EventVersion: 1, Status: status,
		Payload: json.RawMessage(`{"task_id":"` + task.ID + `","status":"` + string(status) + `"}`)})
	require.NoError(t, err)
}

// A new GET stream of a session replaces the one open here (which ends at
// once) and takes over its slot; a stream of another session beyond the
// user's cap is 429 with Retry-After; a stream that ends frees its slot.
func TestStreamReplacesTheOpenOneAndIsCappedPerUser(t *testing.T) {
	t.Parallel()
	e := newLimitEnv(t, Options{}, 10, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s1, s2 := e.initialize(t, alice), e.initialize(t, alice)

	first := e.stream(ctx, t, alice, s1)
	requireTooMany(t, e.request(ctx, t, "GET", alice, s2, "", true), nil, "server.max_mcp_streams_per_user")
	bob := e.initialize(t, who{"v", "tv"})
	e.stream(ctx, t, who{"v", "tv"}, bob) // another user has slots of their own

	// The client reconnects: the new stream is served, the old one ends.
	secondCtx, endSecond := context.WithCancel(ctx)
	defer endSecond()
	second := e.stream(secondCtx, t, alice, s1)
	ended(t, first, "the replaced stream")
	require.Equal(t, 1, e.streams.count("u"), "the new stream took the old one's slot")

	// It carries the thread's notifications.
	task := e.task(t, alice, mcpflow.StatusWorking)
	e.finish(t, task, mcpflow.StatusCompleted)
	found := false
	for l := range second {
		if strings.Contains(l, task.ID) {
			require.Contains(t, l, `"status":"completed"`)
			found = true
			break
		}
	}
	require.True(t, found, "the new stream ended without the task's notification")

	// The client leaves: its slot is free for another session's stream.
	endSecond()
	e.streams.waitRelease(t, "u")
	e.stream(ctx, t, alice, s2)
}

// tasks/result holds one of the user's wait slots while it waits: beyond
// the cap it is 429 with Retry-After (a JSON-RPC error with the request's
// id), while answers that need no wait, other requests and other users go
// on; the slot is free again when the answer goes out.
func TestTaskResultWaitsAreCappedPerUser(t *testing.T) {
	t.Parallel()
	e := newLimitEnv(t, Options{}, 1, 10)
	sid := e.initialize(t, alice)
	working, other := e.task(t, alice, mcpflow.StatusWorking), e.task(t, alice, mcpflow.StatusWorking)
	done := e.task(t, alice, mcpflow.StatusCompleted)
	result := func(id int, task string) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tasks/result", "params": map[string]any{"taskId": task}})
		return string(b)
	}

	// The first wait: its SSE answer starts, so it is waiting.
	waiting := e.request(context.Background(), t, "POST", alice, sid, result(2, working.ID), true)
	defer waiting.Body.Close()
	require.Equal(t, "text/event-stream", waiting.Header.Get("Content-Type"))
	require.Equal(t, 1, e.waits.count("u"))

	requireTooMany(t, e.request(context.Background(), t, "POST", alice, sid, result(3, other.ID), false), 3.0, "server.max_waits_per_user")
	resp, out := e.rpcJSON(t, alice, sid, result(4, done.ID))
	require.Equal(t, 200, resp.StatusCode, "a finished task's result needs no wait")
	require.NotNil(t, out["result"], out)
	resp, out = e.rpcJSON(t, alice, sid, `{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"`+other.ID+`"}}`)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "working", out["result"].(map[string]any)["status"])
	bob := who{"v", "tv"}
	bobs := e.task(t, bob, mcpflow.StatusWorking)
	bobWaits := e.request(context.Background(), t, "POST", bob, e.initialize(t, bob), result(6, bobs.ID), true)
	defer bobWaits.Body.Close()
	require.Equal(t, "text/event-stream", bobWaits.Header.Get("Content-Type"))

	// The task ends: the answer comes, and the slot is free.
	e.finish(t, working, mcpflow.StatusCompleted)
	b, err := io.ReadAll(waiting.Body)
	require.NoError(t, err)
	require.Contains(t, string(b), `"id":2,"result"`)
	require.Zero(t, e.waits.count("u"), "the slot is given back before the answer is written")
	next := e.request(context.Background(), t, "POST", alice, sid, result(7, other.ID), true)
	defer next.Body.Close()
	require.Equal(t, "text/event-stream", next.Header.Get("Content-Type"))
}

// tasks/cancel answers the task as it is once the remote cancel landed, or
// the remote task ended first, or the wait ran out: cancelled only when it
// really is (mcpflow's documented deviation from the spec's "MUST be
// cancelled"). A user with no wait slot left gets the answer at once; the
// cancel is sent all the same.
func TestTaskCancelAnswers(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	cancels := map[string]func(*mcpflow.Task){}
	sent := map[string]int{}
	on := func(task *mcpflow.Task, f func(*mcpflow.Task)) {
		mu.Lock()
		defer mu.Unlock()
		cancels[task.ID] = f
	}
	cancelTask := func(_ context.Context, task *mcpflow.Task) error {
		mu.Lock()
		sent[task.ID]++
		f := cancels[task.ID]
		mu.Unlock()
		if f != nil {
			f(task)
		}
		return nil
	}
	cancelOf := func(e *limitEnv, sid string, task *mcpflow.Task) map[string]any {
		resp, out := e.rpcJSON(t, alice, sid, `{"jsonrpc":"2.0","id":9,"method":"tasks/cancel","params":{"taskId":"`+task.ID+`"}}`)
		require.Equal(t, 200, resp.StatusCode, out)
		return out
	}
	// The workflow records the request; the remote cancel does not land.
	requested := func(e *limitEnv, lastErr *string) func(*mcpflow.Task) {
		return func(task *mcpflow.Task) {
			now := time.Now()
			task.CancelRequestedAt, task.LastCancelError = &now, lastErr
			require.NoError(t, e.db.UpdateTask(context.Background(), task))
		}
	}

	e := newLimitEnv(t, Options{CancelWait: 50 * time.Millisecond, CancelTask: cancelTask}, 1, 1)
	sid := e.initialize(t, alice)
	lands := e.task(t, alice, mcpflow.StatusWorking)
	on(lands, func(task *mcpflow.Task) { e.finish(t, task, mcpflow.StatusCancelled) })
	out := cancelOf(e, sid, lands)
	require.Equal(t, "cancelled", out["result"].(map[string]any)["status"], out)

	first := e.task(t, alice, mcpflow.StatusWorking)
	on(first, func(task *mcpflow.Task) { e.finish(t, task, mcpflow.StatusCompleted) })
	out = cancelOf(e, sid, first)
	require.Equal(t, "completed", out["result"].(map[string]any)["status"], "the remote task finished first: its real outcome")

	retried := e.task(t, alice, mcpflow.StatusWorking)
	on(retried, requested(e, ptr("upstream answered 503")))
	out = cancelOf(e, sid, retried)
	res := out["result"].(map[string]any)
	require.Equal(t, "working", res["status"], "the wait ran out")
	require.Equal(t, "cancellation requested; the last attempt to cancel the remote task failed and is retried: upstream answered 503", res["statusMessage"])

	out = cancelOf(e, sid, lands)
	require.EqualValues(t, -32602, out["error"].(map[string]any)["code"], "a task that already ended")

	// With the user's only wait slot taken, the cancel is sent and
	// answered without a wait (which would take an hour here).
	e = newLimitEnv(t, Options{CancelWait: time.Hour, CancelTask: cancelTask}, 1, 1)
	sid = e.initialize(t, alice)
	slow := e.task(t, alice, mcpflow.StatusWorking)
	waiting := e.request(context.Background(), t, "POST", alice, sid, `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"`+slow.ID+`"}}`, true)
	defer waiting.Body.Close()
	require.Equal(t, 1, e.waits.count("u"))
	noSlot := e.task(t, alice, mcpflow.StatusWorking)
	on(noSlot, requested(e, nil))
	answered := make(chan map[string]any, 1)
	go func() {
		resp, err := e.send(context.Background(), "POST", alice, sid, `{"jsonrpc":"2.0","id":9,"method":"tasks/cancel","params":{"taskId":"`+noSlot.ID+`"}}`, false)
		if err != nil {
			answered <- map[string]any{"transport error": err.Error()}
			return
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		answered <- out
	}()
	select {
	case out = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("tasks/cancel waited without a wait slot")
	}
	res = out["result"].(map[string]any)
	require.Equal(t, "working", res["status"], out)
	require.Equal(t, "cancellation requested", res["statusMessage"])
	mu.Lock()
	require.Equal(t, 1, sent[noSlot.ID], "the cancel was sent")
	mu.Unlock()
}

// Sessions are capped per user across the database: initialize beyond the
// cap ends the user's least recently used session (404 -32001 from then
// on, and its stream here ends), not the oldest one, and never another
// user's.
func TestSessionsPerUserCap(t *testing.T) {
	t.Parallel()
	var clockMu sync.Mutex
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }
	e := newLimitEnv(t, Options{MaxSessionsPerUser: 2, Now: clock}, 10, 10)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	status := func(as who, sid string) int {
		resp, out := e.rpcJSON(t, as, sid, list)
		if resp.StatusCode == 404 {
			require.EqualValues(t, codeSessionNotFound, out["error"].(map[string]any)["code"])
		}
		return resp.StatusCode
	}

	oldest := e.initialize(t, alice)
	advance(time.Minute)
	idle := e.initialize(t, who{"u", "th2"}) // the cap is the user's, across threads
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	idleStream := e.stream(ctx, t, who{"u", "th2"}, idle)
	advance(2 * time.Hour)
	require.Equal(t, 200, status(alice, oldest), "a use, recorded (uses are recorded at most once a minute)")
	bob := who{"v", "tv"}
	bobs := []string{e.initialize(t, bob), e.initialize(t, bob)}

	newest := e.initialize(t, alice)
	require.Equal(t, 404, status(who{"u", "th2"}, idle), "the least recently used session ended")
	ended(t, idleStream, "the ended session's stream")
	require.Equal(t, 200, status(alice, oldest))
	require.Equal(t, 200, status(alice, newest))
	for _, sid := range bobs {
		require.Equal(t, 200, status(bob, sid), "another user's sessions stay")
	}
	_, err := e.db.GetMCPSession(context.Background(), idle)
	require.Equal(t, mcpflow.ENotFound, mcpflow.ErrorCode(err), "gone from the database, for every replica")
}

// initialize keeps at most MaxClientDataBytes of clientInfo and
// capabilities together, as compact JSON: padding does not count, and
// a larger pair is refused with -32602.
func TestInitializeClientDataBound(t *testing.T) {
	t.Parallel()
	e := newLimitEnv(t, Options{}, 1, 1)
	padded := `{"protocolVersion":"2025-11-25","clientInfo":{"name":"x",` + strings.Repeat(" ", 3*MaxClientDataBytes) + `"version":"1"},"capabilities":{"elicitation":{}}}`
	resp, out := e.rpcJSON(t, alice, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+padded+`}`)
	require.Equal(t, 200, resp.StatusCode, out)
	sess, err := e.db.GetMCPSession(context.Background(), resp.Header.Get(HeaderSessionID))
	require.NoError(t, err)
	require.Equal(t, `{"name":"x","version":"1"}`, string(sess.ClientInfo), "stored compact")
	require.Equal(t, `{"elicitation":{}}`, string(sess.ClientCapabilities))

	half := strings.Repeat("a", MaxClientDataBytes/2)
	big := `{"protocolVersion":"2025-11-25","clientInfo":{"name":"` + half + `"},"capabilities":{"x":"` + half + `"}}`
	resp, out = e.rpcJSON(t, alice, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+big+`}`)
	require.Equal(t, 200, resp.StatusCode)
	require.Empty(t, resp.Header.Get(HeaderSessionID))
	e2 := out["error"].(map[string]any)
	require.EqualValues(t, -32602, e2["code"])
	require.Contains(t, e2["message"], "at most 16384 bytes together")
}
