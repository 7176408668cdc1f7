package activities_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
	"github.com/mcpflow/mcpflow/store"
)

func TestSign(t *testing.T) {
	t.Parallel()
	body := []byte(`{"a":1}`)
	m := hmac.New(sha256.New, []byte("k"))
	m.Write(body)
	require.Equal(t, "sha256="+hex.EncodeToString(m.Sum(nil)), activities.Sign([]byte("k"), body))
}

func TestWebhookPostOutcomes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code int
		want mcpflow.DeliveryOutcome
		msg  string
	}{
		{200, mcpflow.DeliveryDelivered, ""},
		{204, mcpflow.DeliveryDelivered, ""},
		{409, mcpflow.DeliveryBusy, "webhook answered HTTP 409 Conflict (busy; retried without counting)"},
		{404, mcpflow.DeliveryGone, "webhook answered HTTP 404 Not Found"},
		{410, mcpflow.DeliveryGone, "webhook answered HTTP 410 Gone"},
		{500, mcpflow.DeliveryFailed, "webhook answered HTTP 500 Internal Server Error"},
		{400, mcpflow.DeliveryFailed, "webhook answered HTTP 400 Bad Request"},
		{302, mcpflow.DeliveryFailed, "webhook answered HTTP 302 Found"},
	} {
		var got http.Header
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = r.Header.Clone()
			if tc.code == 302 {
				w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
			}
			w.WriteHeader(tc.code)
		}))
		wh := &activities.Webhook{URL: srv.URL, Secret: []byte("s")}
		outcome, msg := wh.Post(context.Background(), []byte(`{"x":1}`), "mcp-task:t:3", 2)
		srv.Close()
		require.Equal(t, tc.want, outcome, tc.code)
		require.Equal(t, tc.msg, msg, tc.code)
		require.Equal(t, "mcp-task:t:3", got.Get("Idempotency-Key"))
		require.Equal(t, "2", got.Get("X-Mcpflow-Delivery-Attempt"))
		require.Equal(t, activities.Sign([]byte("s"), []byte(`{"x":1}`)), got.Get("X-Mcpflow-Signature"))
		require.Equal(t, "application/json", got.Get("Content-Type"))
	}
}

// A failed POST is described without the URL, which may carry a token.
func TestWebhookErrorsDoNotEchoTheURL(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	wh := &activities.Webhook{URL: "http://" + addr + "/hook?token=sekrit-123", Secret: []byte("s")}
	outcome, msg := wh.Post(context.Background(), []byte(`{}`), "k", 1)
	require.Equal(t, mcpflow.DeliveryFailed, outcome)
	require.True(t, strings.HasPrefix(msg, "webhook request failed: "), msg)
	require.NotContains(t, msg, "sekrit-123")
	require.NotContains(t, msg, addr)

	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // so the server notices the client leaving
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()
	wh = &activities.Webhook{URL: hang.URL + "/?token=sekrit-123", Secret: []byte("s"), Timeout: 100 * time.Millisecond}
	outcome, msg = wh.Post(context.Background(), []byte(`{}`), "k", 1)
	require.Equal(t, mcpflow.DeliveryFailed, outcome)
	require.Equal(t, "webhook did not answer within 100ms", msg)
}

func TestDeliverReadsTheFrozenEventAndRefusesGoneThreads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, store.BackendSQLite, filepath.Join(t.TempDir(), "a.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	for _, th := range []mcpflow.Thread{{ID: "th", UserID: "u"}, {ID: "gone", UserID: "u"}, {ID: "other", UserID: "v"}} {
		th.CreatedAt = time.Now()
		_, _, err := db.CreateThread(ctx, &th)
		require.NoError(t, err)
	}
	_, err = db.AppendEvent(ctx, &mcpflow.ThreadEvent{UserID: "u", ThreadID: "th", TaskID: "t1", EventVersion: 1, Status: mcpflow.StatusCompleted,
		Payload: json.RawMessage(`{"task_id":"t1","status":"completed","result":{"n":12345678901234567890}}`)})
	require.NoError(t, err)
	require.NoError(t, db.DeleteThread(ctx, "u", "gone", time.Now()))

	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body = make([]byte, r.ContentLength)
		_, _ = r.Body.Read(body)
	}))
	defer srv.Close()
	a := &activities.Activities{Threads: db, Events: db, Webhook: &activities.Webhook{URL: srv.URL, Secret: []byte("s")}}

	out, err := a.Deliver(ctx, activities.DeliverInput{TaskID: "t1", ThreadID: "th", UserID: "u", Version: 1, Attempt: 1})
	require.NoError(t, err)
	require.Equal(t, mcpflow.DeliveryDelivered, out.Outcome)
	require.Equal(t, `{"event_version":1,"result":{"n":12345678901234567890},"status":"completed","task_id":"t1","thread_id":"th","user_id":"u"}`, string(body))

	for _, tc := range []struct{ thread, user, msg string }{
		{"gone", "u", "thread 'gone' was deleted"},
		{"other", "u", "thread 'other' does not exist for this task's user"},
		{"missing", "u", "thread 'missing' does not exist for this task's user"},
	} {
		body = nil
		out, err := a.Deliver(ctx, activities.DeliverInput{TaskID: "t1", ThreadID: tc.thread, UserID: tc.user, Version: 1, Attempt: 1})
		require.NoError(t, err)
		require.Equal(t, mcpflow.DeliveryGone, out.Outcome, tc.thread)
		require.Equal(t, tc.msg, out.Error)
		require.Nil(t, body, "nothing is POSTed for a gone thread")
	}
}
