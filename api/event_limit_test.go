package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/store"
)

// listedEvents counts the inbox reads of each thread, so a test knows a
// long poll is running (it read) or was refused (it did not) without
// timing it.
type listedEvents struct {
	mcpflow.EventStore
	mu    sync.Mutex
	reads map[string]int
	read  chan struct{} // a non-blocking nudge on every read
}

func (l *listedEvents) ListEvents(ctx context.Context, thread mcpflow.ThreadRef, after int64, limit int) ([]*mcpflow.ThreadEvent, error) {
	l.mu.Lock()
	l.reads[thread.ThreadID]++
	l.mu.Unlock()
	select {
	case l.read <- struct{}{}:
	default:
	}
	return l.EventStore.ListEvents(ctx, thread, after, limit)
}

func (l *listedEvents) count(thread string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reads[thread]
}

// waitReads waits until thread was read at least n times.
func (l *listedEvents) waitReads(t *testing.T, thread string, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for l.count(thread) < n {
		select {
		case <-l.read:
		case <-deadline:
			t.Fatalf("%s was read %d times, want %d", thread, l.count(thread), n)
		}
	}
}

type pollAnswer struct {
	status int
	header http.Header
	body   map[string]any
	err    error
}

// getAsync sends a GET in the background; cancel ends it from the client.
func getAsync(ctx context.Context, url, token string) <-chan pollAnswer {
	out := make(chan pollAnswer, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			out <- pollAnswer{err: err}
			return
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- pollAnswer{err: err}
			return
		}
		defer resp.Body.Close()
		a := pollAnswer{status: resp.StatusCode, header: resp.Header}
		a.err = json.NewDecoder(resp.Body).Decode(&a.body)
		out <- a
	}()
	return out
}

// Open event long-polls count per user: with server.max_waits_per_user =
// 2, a third waiting poll of the same user is 429 with Retry-After, while
// reads without wait, the user's tool calls (their own cap) and another
// user's polls go on; a poll that answered frees its slot.
func TestEventLongPollsPerUserLimit(t *testing.T) {
	t.Parallel()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(t.TempDir(), "w.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{Users: []api.UserToken{{UserID: "alice", Token: aliceToken}, {UserID: "bob", Token: bobToken}}})
	require.NoError(t, err)
	events := &listedEvents{EventStore: db, reads: map[string]int{}, read: make(chan struct{}, 1)}
	srv := api.New(api.Options{Auth: auth, Threads: db, Events: events, MaxCallsPerUser: 1, MaxWaitsPerUser: 2,
		Tools:  &blockingTools{entered: make(chan string, 10), release: closed()},
		Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	for _, th := range []struct{ id, token string }{{"w1", aliceToken}, {"w2", aliceToken}, {"w3", aliceToken}, {"wb", bobToken}} {
		resp, out := post(t, ts.URL+"/api/threads", th.token, strings.NewReader(`{"thread_id": "`+th.id+`"}`))
		require.Equal(t, 201, resp.StatusCode, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Two waiting polls of alice's, on two threads: both are reading.
	first := getAsync(ctx, ts.URL+"/api/threads/w1/events?wait=60", aliceToken)
	events.waitReads(t, "w1", 1)
	secondCtx, cancelSecond := context.WithCancel(ctx)
	defer cancelSecond()
	second := getAsync(secondCtx, ts.URL+"/api/threads/w2/events?wait=60", aliceToken)
	events.waitReads(t, "w2", 1)

	// A third is refused before it reads anything.
	a := <-getAsync(ctx, ts.URL+"/api/threads/w3/events?wait=60", aliceToken)
	require.NoError(t, a.err)
	require.Equal(t, http.StatusTooManyRequests, a.status, a.body)
	require.Equal(t, "1", a.header.Get("Retry-After"))
	require.Equal(t, "too_many_requests", a.body["error"].(map[string]any)["code"])
	require.Contains(t, a.body["error"].(map[string]any)["message"], "at most 2")
	require.Zero(t, events.count("w3"))

	// Reads that do not wait are not long polls.
	for _, q := range []string{"", "?wait=0"} {
		a = <-getAsync(ctx, ts.URL+"/api/threads/w3/events"+q, aliceToken)
		require.NoError(t, a.err)
		require.Equal(t, 200, a.status, a.body)
	}
	require.Equal(t, 2, events.count("w3"))
	// Alice's tool calls keep their own slots.
	resp, out := post(t, ts.URL+"/api/threads/w1/tools/x/call", aliceToken, strings.NewReader(`{}`))
	require.Equal(t, 200, resp.StatusCode, out)
	// Bob is not affected.
	bob := getAsync(ctx, ts.URL+"/api/threads/wb/events?wait=60", bobToken)
	events.waitReads(t, "wb", 1)

	// An event answers the first poll, which frees its slot before the
	// answer goes out: the next poll is taken at once.
	_, err = db.AppendEvent(context.Background(), &mcpflow.ThreadEvent{UserID: "alice", ThreadID: "w1", TaskID: "task-a", EventVersion: 1,
		Status: mcpflow.StatusCompleted, Payload: json.RawMessage(`{"task_id":"task-a","task_name":"job","status":"completed"}`)})
	require.NoError(t, err)
	a = <-first
	require.NoError(t, a.err)
	require.Equal(t, 200, a.status, a.body)
	require.Len(t, a.body["events"], 1)
	third := getAsync(ctx, ts.URL+"/api/threads/w3/events?wait=60", aliceToken)
	events.waitReads(t, "w3", 3)

	// A client that leaves frees its slot too: once the server saw the
	// second poll end, another one is taken.
	cancelSecond()
	require.Error(t, (<-second).err)
	require.Eventually(t, func() bool {
		a := <-getAsync(ctx, ts.URL+"/api/threads/w2/events?wait=0.01", aliceToken)
		return a.err == nil && a.status == 200
	}, 30*time.Second, 10*time.Millisecond)

	cancel()
	<-third
	<-bob
}
