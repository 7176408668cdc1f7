package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
	} {
		require.Contains(t, m, want)
	}
	require.Regexp(t, regexp.MustCompile(`(?m)^temporal_\w+`), m, "the Temporal SDK's worker and client metrics are exported too")
	require.Regexp(t, regexp.MustCompile(`(?m)^go_goroutines `), m)
	for _, secret := range []string{testUserToken, testAdminToken, e2eWebhookSecret, "m1", id} {
		require.NotContains(t, m, secret, "no label carries ids, tokens or secrets")
	}
	for _, line := range strings.Split(m, "\n") {
		require.NotContains(t, line, `route="/api/threads/m1`, "routes are templates")
	}
}
