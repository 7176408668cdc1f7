package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// /metrics after real traffic: HTTP requests, tool calls, tasks, polls,
// notifications, the stdio pool and the Temporal SDK's own series, with
// route templates and server names as labels and no token or secret
// anywhere.
func TestMetricsAfterTraffic(t *testing.T) {
	hook := newHookReceiver(t)
	e, _ := startNotifyEnv(t, hook)
	id := e.submit(t, "m1", "demo_submit_job", `{"duration_seconds": 0.5}`)
	hook.script(id, 200)
	e.waitNotification(t, "m1", id, "delivered")
	code, _ := e.post(t, "/api/threads/m1/tools/demo_echo/call", `{"arguments": {"message": "hi"}}`)
	require.Equal(t, 200, code)
	code, _ = e.post(t, "/api/threads/m1/tools/demo_fail/call", `{"arguments": {"message": "no"}}`)
	require.Equal(t, 200, code)
	code, _ = e.post(t, "/api/threads/m1/tools/no_such_tool/call", `{"arguments": {}}`)
	require.Equal(t, 404, code)
	req, err := http.NewRequest("FOO1", e.m.URL()+"/healthz", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()

	m := scrape(t, e.m.URL())
	for _, want := range []string{
		`mcpflow_http_requests_total{method="POST",route="/api/threads/:thread_id/tools/:tool/call",status="200"}`,
		`mcpflow_http_requests_total{method="POST",route="/api/threads/:thread_id/tools/:tool/call",status="404"}`,
		`mcpflow_http_request_duration_seconds_bucket{method="POST",route="/api/threads/:thread_id/tools/:tool/call",status="200",le="0.5"}`,
		`mcpflow_tool_calls_total{outcome="ok",server="demo"}`,
		`mcpflow_tool_calls_total{outcome="tool_error",server="demo"}`,
		`mcpflow_tool_calls_total{outcome="not_found",server="(unknown)"}`,
		`mcpflow_tool_call_duration_seconds_count{outcome="ok",server="demo"}`,
		`mcpflow_tasks{status="completed"} 1`,
		`mcpflow_tasks{status="working"} 0`,
		`mcpflow_task_polls_total{outcome="changed",server="demo"}`,
		`mcpflow_notifications_total{outcome="delivered"} 1`,
		`mcpflow_stdio_sessions 0`,
		`mcpflow_http_requests_total{method="_OTHER",route="(unmatched)",status="405"}`,
	} {
		require.Contains(t, m, want)
	}
	require.NotContains(t, m, "FOO1", "a client cannot mint method labels")
	require.NotContains(t, m, "http_server_request_duration_seconds", "one set of HTTP metrics (otelgin's are off)")
	require.Regexp(t, regexp.MustCompile(`(?m)^temporal_\w+`), m, "the Temporal SDK's worker and client metrics are exported too")
	require.Regexp(t, regexp.MustCompile(`(?m)^go_goroutines `), m)
	for _, secret := range []string{testUserToken, testAdminToken, e2eWebhookSecret, "m1", id} {
		require.NotContains(t, m, secret, "no label carries ids, tokens or secrets")
	}
	for _, line := range strings.Split(m, "\n") {
		require.NotContains(t, line, `route="/api/threads/m1`, "routes are templates")
	}
}

// otlpReceiver is an OTLP/HTTP trace endpoint that keeps what it gets.
type otlpReceiver struct {
	mu    sync.Mutex
	paths []string
	spans []*tracepb.Span
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var ex coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &ex); err != nil {
		w.WriteHeader(400)
		return
	}
	r.mu.Lock()
	r.paths = append(r.paths, req.URL.Path)
	for _, rs := range ex.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, one trace follows a task from the
// submit request through the workflow and its activities.
func TestTracingFollowsATask(t *testing.T) {
	rec := &otlpReceiver{}
	collector := httptest.NewServer(rec)
	t.Cleanup(collector.Close)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", demoTaskExt(demoHTTP(t)))
	logs := &testenv.SyncBuffer{}
	m := &Main{Mode: ModeDev, ConfigPath: cfg, Logger: slog.New(slog.NewTextHandler(logs, nil)), Env: func(k string) (string, bool) {
		if k == EnvOTLPEndpoint {
			return collector.URL, true
		}
		return "", false
	}}
	require.NoError(t, m.Open(context.Background()))
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = m.Close(context.Background())
		}
	})
	waitForWorker(t, logs)
	e := &taskEnv{m: m}
	id := e.submit(t, "tr", "demo_submit_job", `{"duration_seconds": 0.5}`)
	e.waitStatus(t, "tr", id, "completed")
	code, _ := get(t, m.URL()+"/readyz", "")
	require.Equal(t, 200, code)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, m.Close(ctx)) // flushes the spans
	closed = true

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Contains(t, rec.paths, "/v1/traces")
	byName := map[string]*tracepb.Span{}
	for _, s := range rec.spans {
		if _, seen := byName[s.Name]; !seen {
			byName[s.Name] = s
		}
	}
	api := byName["POST /api/threads/:thread_id/tools/:tool/call"]
	require.NotNil(t, api, "a server span per request, named after the route: %v", keysOf(byName))
	trace := api.TraceId
	for _, name := range []string{"mcp.tool_call", "UpdateWithStartWorkflow:submit", "RunWorkflow:TaskWorkflow", "HandleUpdate:submit", "RunActivity:Submit", "RunActivity:Persist", "RunActivity:Poll"} {
		found := false
		for _, s := range rec.spans {
			if s.Name == name && bytes.Equal(s.TraceId, trace) {
				found = true
			}
		}
		require.True(t, found, "span %q in the submit's trace (spans: %v)", name, keysOf(byName))
	}
	submits := 0
	for _, s := range rec.spans {
		if s.Name == "RunActivity:Submit" {
			submits++
		}
		require.NotEqual(t, "GET /readyz", s.Name, "probes are not traced")
	}
	require.Equal(t, 1, submits, "one span per activity run (the interceptor is set once)")
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
