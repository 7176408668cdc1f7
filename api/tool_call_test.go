package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/store"
)

// recordingTools answers every call with its text argument and keeps the
// calls it was given.
type recordingTools struct {
	echoTools
	mu    sync.Mutex
	calls []mcpflow.ToolCall
}

func (r *recordingTools) CallTool(ctx context.Context, c mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return r.echoTools.CallTool(ctx, c)
}

func (r *recordingTools) last() mcpflow.ToolCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[len(r.calls)-1]
}

type callBundle struct {
	h     *api.Server
	tools *recordingTools
	logs  *testenv.SyncBuffer
	meter *sdkmetric.ManualReader
}

func setupCalls(t *testing.T) *callBundle {
	t.Helper()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(t.TempDir(), "api.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{Users: []api.UserToken{{UserID: "alice", Token: aliceToken}}})
	require.NoError(t, err)
	logs := &testenv.SyncBuffer{}
	reader := sdkmetric.NewManualReader()
	tools := &recordingTools{}
	srv := api.New(api.Options{Auth: auth, Threads: db, Tools: tools,
		Meter:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"),
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	return &callBundle{h: srv, tools: tools, logs: logs, meter: reader}
}

func (b *callBundle) call(t *testing.T, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("POST", "/api/threads/t1/tools/echo/call", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+aliceToken)
	w := httptest.NewRecorder()
	b.h.Handler().ServeHTTP(w, r)
	return w
}

// TestToolCallBody pins how a REST tool call reads its body (in one pass,
// numbers as written) and writes its answer: the bytes c.JSON wrote, with
// their Content-Length, sent before the access line is written.
func TestToolCallBody(t *testing.T) {
	t.Parallel()
	b := setupCalls(t)

	w := b.call(t, `{"arguments": {"message": "m", "big": 9007199254740993, "nested": {"list": [-9007199254740993, 0.10000000000000000555, 1E+2]}},
		"secrets": {"k": "v"}, "run_id": "run-1", "tool_call_id": "call-1"}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	got := b.tools.last()
	args, err := got.CallArguments()
	require.NoError(t, err)
	require.Equal(t, map[string]any{"message": "m", "big": json.Number("9007199254740993"),
		"nested": map[string]any{"list": []any{json.Number("-9007199254740993"), json.Number("0.10000000000000000555"), json.Number("1E+2")}}}, args)
	got.RawArguments = nil
	require.Equal(t, mcpflow.ToolCall{
		UserID: "alice", ThreadID: "t1", Tool: "echo",
		Secrets: map[string]string{"k": "v"}, RunID: new("run-1"), ToolCallID: new("call-1"),
	}, got)
	want, err := json.Marshal(mcpflow.ToolResult{Content: []json.RawMessage{json.RawMessage(`{"text":"m","type":"text"}`)}})
	require.NoError(t, err)
	require.Equal(t, string(want), w.Body.String())
	require.Equal(t, strconv.Itoa(len(want)), w.Header().Get("Content-Length"))
	require.Equal(t, "application/json; charset=utf-8", w.Header().Get("Content-Type"))
	require.True(t, w.Flushed, "the answer is sent before the handler returns")

	for _, empty := range []string{"", " ", "{}", `{"arguments":null}`, `{"arguments":{"a":1}} trailing`} {
		w = b.call(t, empty)
		require.Equal(t, 200, w.Code, "body %q: %s", empty, w.Body.String())
	}
	require.Equal(t, `{"a":1}`, string(b.tools.last().RawArguments), "only the first JSON value is read, as it is")

	const bodyMsg = `request body must be {"arguments": {...}, "secrets"?: {...}, "run_id"?: s, "tool_call_id"?: s}`
	const argsMsg = "arguments must be a JSON object"
	for body, msg := range map[string]string{
		`{"arguments":[1,2]}`:                argsMsg,
		`{"arguments":"x"}`:                  argsMsg,
		`{"arguments":3}`:                    argsMsg,
		`{"arguments":true}`:                 argsMsg,
		`[]`:                                 bodyMsg,
		`{"arguments":{}`:                    bodyMsg,
		`{"args":{}}`:                        bodyMsg,
		`{"arguments":{},"secrets":{"k":1}}`: bodyMsg,
		`{"arguments":[1],"run_id":5}`:       bodyMsg, // the body is wrong before its arguments are read
		`{"arguments":{},"run_id":""}`:       "run_id must be 1 to 64 characters",
	} {
		w = b.call(t, body)
		require.Equal(t, 400, w.Code, body)
		var e struct {
			Error struct{ Code, Message string }
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e))
		require.Equal(t, "invalid_argument", e.Error.Code, body)
		require.Equal(t, msg, e.Error.Message, body)
	}

	// One access line per request, answered calls included.
	lines := strings.Split(strings.TrimSpace(b.logs.String()), "\n")
	require.Len(t, lines, 1+5+10)
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &line))
	require.Equal(t, "http request", line["msg"])
	require.Equal(t, "/api/threads/:thread_id/tools/:tool/call", line["route"])
	require.Equal(t, 200.0, line["status"])
	require.Equal(t, "alice", line["user_id"])
	require.NotContains(t, b.logs.String(), `"v"`, "no secret in the log")
}

// TestHTTPMetricsLabels pins the labels of the request metrics, which are
// cached per label set: every combination counts under its own labels.
func TestHTTPMetricsLabels(t *testing.T) {
	t.Parallel()
	b := setupCalls(t)
	serve := func(method, path, token string) {
		r := httptest.NewRequest(method, path, strings.NewReader(`{"arguments":{"message":"m"}}`))
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		b.h.Handler().ServeHTTP(httptest.NewRecorder(), r)
	}
	for range 3 {
		serve("POST", "/api/threads/t1/tools/echo/call", aliceToken)
	}
	for range 2 {
		serve("POST", "/api/threads/t1/tools/echo/call", "")
	}
	serve("GET", "/healthz", "")
	serve("GET", "/nowhere", "")
	serve("BREW", "/healthz", "")

	var rm metricdata.ResourceMetrics
	require.NoError(t, b.meter.Collect(context.Background(), &rm))
	counts := map[string]int64{}
	durations := map[string]uint64{}
	key := func(s attribute.Set) string {
		var parts []string
		for _, k := range []attribute.Key{"route", "method", "status"} {
			v, _ := s.Value(k)
			parts = append(parts, v.AsString())
		}
		return strings.Join(parts, " ")
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				require.Equal(t, "mcpflow.http.requests", m.Name)
				for _, p := range d.DataPoints {
					require.Equal(t, 3, p.Attributes.Len())
					counts[key(p.Attributes)] += p.Value
				}
			case metricdata.Histogram[float64]:
				require.Equal(t, "mcpflow.http.request.duration", m.Name)
				for _, p := range d.DataPoints {
					durations[key(p.Attributes)] += p.Count
				}
			}
		}
	}
	want := map[string]int64{
		"/api/threads/:thread_id/tools/:tool/call POST 200": 3,
		"/api/threads/:thread_id/tools/:tool/call POST 401": 2,
		"/healthz GET 200":       1,
		"(unmatched) GET 404":    1,
		"(unmatched) _OTHER 405": 1,
	}
	require.Equal(t, want, counts)
	for k, n := range want {
		require.Equal(t, uint64(n), durations[k], k)
	}
}

// TestToolCallIdempotencyKey: the Idempotency-Key header reaches the tool
// call as it was sent; one that is empty, too long, not printable ASCII or
// sent twice is 400 and calls nothing.
func TestToolCallIdempotencyKey(t *testing.T) {
	b := setupCalls(t)
	send := func(keys ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/api/threads/t1/tools/echo/call", strings.NewReader(`{"arguments": {"text": "hi"}}`))
		r.Header.Set("Authorization", "Bearer "+aliceToken)
		for _, k := range keys {
			r.Header.Add("Idempotency-Key", k)
		}
		w := httptest.NewRecorder()
		b.h.Handler().ServeHTTP(w, r)
		return w
	}
	w := send("8e03978e-40d5-43e8-bc93-6894a57f9324")
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Equal(t, "8e03978e-40d5-43e8-bc93-6894a57f9324", b.tools.last().IdempotencyKey)
	w = send()
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Empty(t, b.tools.last().IdempotencyKey)

	calls := len(b.tools.calls)
	for _, c := range []struct {
		keys []string
		msg  string
	}{
		{[]string{""}, "the Idempotency-Key header must be 1 to 255 characters long (got 0)"},
		{[]string{strings.Repeat("k", 256)}, "the Idempotency-Key header must be 1 to 255 characters long (got 256)"},
		{[]string{"two words"}, "the Idempotency-Key header must be printable ASCII without spaces (character 4 is not)"},
		{[]string{"clé"}, "the Idempotency-Key header must be printable ASCII without spaces (character 3 is not)"},
		{[]string{"a", "b"}, "the Idempotency-Key header must be sent once (got 2)"},
	} {
		w := send(c.keys...)
		require.Equal(t, 400, w.Code, w.Body.String())
		var out map[string]map[string]string
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
		require.Equal(t, map[string]string{"code": "invalid_argument", "message": c.msg}, out["error"])
	}
	require.Len(t, b.tools.calls, calls, "a refused key calls nothing")
}
