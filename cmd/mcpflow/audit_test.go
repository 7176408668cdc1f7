package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	logspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/store"
)

const auditPolicies = `{"default": "allow", "rules": [
  {"name": "no-env-for-alice", "effect": "deny", "tools": ["demo_env"], "when": "user.id == 'alice'"},
  {"name": "small-sums", "effect": "deny", "tools": ["demo_add"], "when": "args.a > 100"}],
 "audit_arguments": {"demo_add": ["b"]}}`

// TestAuditEveryCall: calls through REST and both MCP revisions (allowed,
// refused by a rule, hidden, unknown, failed, a durable task), a task's
// cancel and a policy change give exactly one record each after a graceful
// stop, with the surface, client, decision, rule and outcome, and never an
// argument value. The admin reads them with GET /api/audit (filters,
// pages) and `mcpflow audit`.
func TestAuditEveryCall(t *testing.T) {
	url := demoHTTP(t)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\naudit: { enabled: true, flush_interval_ms: 50 }\n",
		policyExt(url, auditPolicies))
	m := waitReady(t, startMain(t, ModeDev, cfg, nil))
	e := &taskEnv{m: m}

	type want struct{ kind, surface, tool, decision, rule, outcome string }
	var wants []want
	rest := func(tool, args string, code int, w want) {
		t.Helper()
		got, out := e.post(t, "/api/threads/audit/tools/"+tool+"/call", `{"arguments": `+args+`}`)
		require.Equal(t, code, got, out)
		w.kind, w.surface, w.tool = mcpflow.AuditCall, "rest", tool
		wants = append(wants, w)
	}
	rest("demo_echo", `{"message": "s3cret-argument"}`, 200, want{decision: "allow", outcome: "ok"})
	rest("demo_fail", `{"message": "boom"}`, 200, want{decision: "allow", outcome: "tool_error"})
	rest("demo_env", `{}`, 404, want{decision: "deny", rule: "no-env-for-alice", outcome: "refused"})
	rest("demo_add", `{"a": 31337, "b": 1}`, 403, want{decision: "deny", rule: "small-sums", outcome: "refused"})
	rest("demo_nope", `{}`, 404, want{outcome: "refused"})
	task := e.submit(t, "audit", "demo_submit_job", `{"duration_seconds": 300}`)
	wants = append(wants, want{mcpflow.AuditCall, "rest", "demo_submit_job", "allow", "", "ok"})

	c, _ := mcpGoClient(t, m.URL()+"/mcp/threads/audit", map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range []string{"demo_echo", "demo_env"} {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, map[string]any{"message": "hi"}
		_, _ = c.CallTool(ctx, req)
	}
	wants = append(wants, want{mcpflow.AuditCall, "mcp 2025-11-25", "demo_echo", "allow", "", "ok"},
		want{mcpflow.AuditCall, "mcp 2025-11-25", "demo_env", "deny", "no-env-for-alice", "refused"})
	r26 := &rpc2026{url: m.URL() + "/mcp/threads/audit", token: testUserToken}
	r26.call(t, "tools/call", "demo_echo", map[string]any{"name": "demo_echo", "arguments": map[string]any{"message": "hi"}})
	wants = append(wants, want{mcpflow.AuditCall, "mcp 2026-07-28", "demo_echo", "allow", "", "ok"})

	code, out := e.post(t, "/api/threads/audit/mcp-tasks/"+task+"/cancel", `{}`)
	require.Equal(t, 202, code, out)
	wants = append(wants, want{kind: mcpflow.AuditTaskCancel, tool: "job", outcome: "ok"})
	// A cancel over MCP is audited as one over REST.
	task2 := e.submit(t, "audit", "demo_submit_job", `{"duration_seconds": 300}`)
	wants = append(wants, want{mcpflow.AuditCall, "rest", "demo_submit_job", "allow", "", "ok"})
	r26ext := &rpc2026{url: m.URL() + "/mcp/threads/audit", token: testUserToken, ext: true}
	r26ext.call(t, "tasks/cancel", task2, map[string]any{"taskId": task2})
	wants = append(wants, want{kind: mcpflow.AuditTaskCancel, surface: "mcp 2026-07-28", tool: "job", outcome: "ok"})
	code, _, body := send(t, "PUT", m.URL()+"/api/mcp/policies", testAdminToken, `{"policies": `+auditPolicies+`}`)
	require.Equal(t, 200, code, body)
	wants = append(wants, want{kind: mcpflow.AuditPolicies})

	// The admin's view, while it runs: filters and pages.
	require.Eventually(t, func() bool {
		_, b := get(t, m.URL()+"/api/audit?limit=1000", testAdminToken)
		recs, _ := b["records"].([]any)
		return len(recs) == len(wants)
	}, 30*time.Second, 50*time.Millisecond)
	code, b := get(t, m.URL()+"/api/audit?decision=deny&user=alice", testAdminToken)
	require.Equal(t, 200, code, b)
	require.Len(t, b["records"], 3)
	code, b = get(t, m.URL()+"/api/audit?limit=4", testAdminToken)
	require.Equal(t, 200, code)
	require.Len(t, b["records"], 4)
	_, b2 := get(t, m.URL()+"/api/audit?limit=4&before="+b["next"].(string), testAdminToken)
	require.Len(t, b2["records"], 4)
	require.Less(t, b2["records"].([]any)[0].(map[string]any)["id"].(float64), b["records"].([]any)[3].(map[string]any)["id"].(float64))
	code, _ = get(t, m.URL()+"/api/audit", testUserToken)
	require.Equal(t, 403, code, "a user reads the audit log")
	code, b = get(t, m.URL()+"/api/audit?since=yesterday", testAdminToken)
	require.Equal(t, 400, code, b)
	var stdout, stderr bytes.Buffer
	rc := runCLI(context.Background(), []string{"--url", m.URL(), "--token", testAdminToken, "audit", "--tool", "demo_add"},
		noEnv, &stdout, &stderr)
	require.Equal(t, 0, rc, stderr.String())
	require.Contains(t, stdout.String(), "demo_add  deny by small-sums  refused")
	require.Contains(t, stdout.String(), `arguments {"b":1}`)
	require.Equal(t, 1, strings.Count(stdout.String(), "\n"), stdout.String())

	// Exactly one record each after a graceful stop.
	dsn := m.Config.Database.DSN
	ctxClose, cancelClose := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelClose()
	require.NoError(t, m.Close(ctxClose))
	db, err := store.Open(context.Background(), "sqlite", dsn)
	require.NoError(t, err)
	defer db.Close()
	recs, err := db.ListAudit(context.Background(), mcpflow.AuditFilter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, recs, len(wants))
	for i, w := range wants {
		r := recs[len(recs)-1-i] // oldest first
		got := want{r.Kind, r.Surface, r.Tool, r.Decision, r.Rule, r.Outcome}
		if w.kind != mcpflow.AuditCall {
			got.surface, got.decision, got.rule = w.surface, w.decision, w.rule
			if w.kind == mcpflow.AuditPolicies {
				got.tool, got.outcome = "", ""
				require.Contains(t, r.Detail, `after ["no-env-for-alice" "small-sums"]`)
				require.True(t, r.Admin)
			}
		}
		require.Equal(t, w, got, "record %d: %+v", i, r)
		require.NotContains(t, fmt.Sprintf("%+v", r), "s3cret-argument")
		require.NotContains(t, fmt.Sprintf("%+v", r), "31337")
		if w.kind == mcpflow.AuditTaskCancel {
			if w.surface == "" {
				require.Equal(t, task, r.TaskID)
				require.Equal(t, "rest", r.Surface)
			} else {
				require.Equal(t, task2, r.TaskID)
				require.Equal(t, w.surface, r.Surface)
				require.Equal(t, "raw-2026/1", r.Client)
			}
			require.NotEmpty(t, r.RequestID)
		}
		if w.kind == mcpflow.AuditCall {
			require.Equal(t, "alice", r.UserID)
			require.Equal(t, "audit", r.ThreadID)
			require.NotEmpty(t, r.RequestID, "record %d", i)
		}
		if w.surface == "mcp 2025-11-25" {
			require.Equal(t, "mcpflow-e2e/1", r.Client)
		}
		if w.surface == "mcp 2026-07-28" {
			require.Equal(t, "raw-2026/1", r.Client)
		}
		if w.tool == "demo_submit_job" {
			require.Contains(t, []string{task, task2}, r.TaskID)
		}
		if w.tool == "demo_add" {
			require.JSONEq(t, `{"b": 1}`, r.Arguments, "the one named argument field")
		} else {
			require.Empty(t, r.Arguments, "record %d", i)
		}
	}
}

// TestAuditExportsOTelLogs: with an OTLP endpoint, each audit record also
// goes to the collector as an OpenTelemetry log record.
func TestAuditExportsOTelLogs(t *testing.T) {
	var mu sync.Mutex
	var got []*logspb.ExportLogsServiceRequest
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req logspb.ExportLogsServiceRequest
		if r.URL.Path == "/v1/logs" && proto.Unmarshal(b, &req) == nil {
			mu.Lock()
			got = append(got, &req)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	defer collector.Close()
	cfg := writeConfig(t, "audit: { enabled: true, flush_interval_ms: 20 }\n",
		fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q}}}`, demoHTTP(t)))
	m := &Main{Mode: ModeServe, ConfigPath: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Env: func(k string) (string, bool) {
		if k == EnvOTLPLogsEndpoint {
			return collector.URL + "/v1/logs", true
		}
		return "", false
	}}
	require.NoError(t, m.Open(context.Background()))
	e := &taskEnv{m: m}
	code, out := e.post(t, "/api/threads/otel/tools/demo_echo/call", `{"arguments": {"message": "hi"}}`)
	require.Equal(t, 200, code, out)
	require.Eventually(t, func() bool {
		_, b := get(t, m.URL()+"/api/audit", testAdminToken)
		recs, _ := b["records"].([]any)
		return len(recs) == 1
	}, 10*time.Second, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, m.Close(ctx)) // flushes the log exporter
	mu.Lock()
	defer mu.Unlock()
	var attrs map[string]string
	for _, req := range got {
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					attrs = map[string]string{"event": lr.EventName}
					for _, kv := range lr.Attributes {
						attrs[kv.Key] = kv.Value.GetStringValue()
					}
				}
			}
		}
	}
	require.NotNil(t, attrs, "the collector received no log record")
	require.Equal(t, "mcpflow.audit.call", attrs["event"])
	require.Equal(t, "demo_echo", attrs["mcpflow.audit.tool"])
	require.Equal(t, "alice", attrs["enduser.id"])
	require.Equal(t, "ok", attrs["mcpflow.audit.outcome"])
	require.Equal(t, "rest", attrs["mcpflow.audit.surface"])
}

// TestAuditKill9: `mcpflow serve` killed with SIGKILL while calls keep
// coming loses at most the records of its last two flush intervals (what
// was queued, and the batch being written): every call answered earlier
// than that is in the log.
func TestAuditKill9(t *testing.T) {
	const flush = 200 * time.Millisecond
	cfg := writeConfig(t, "audit: { enabled: true, flush_interval_ms: 200 }\n",
		fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q}}}`, demoHTTP(t)))
	raw, err := os.ReadFile(cfg)
	require.NoError(t, err)
	addr := regexp.MustCompile(`server: \{ addr: "([^"]+)"`).FindStringSubmatch(string(raw))[1]
	p := startProc(t, testenv.Binary(t, "./cmd/mcpflow"), ModeServe, cfg)

	var mu sync.Mutex
	var answered []time.Time
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("POST", "http://"+addr+"/api/threads/k9/tools/demo_echo/call", strings.NewReader(`{"arguments": {"message": "hi"}}`))
				req.Header.Set("Authorization", "Bearer "+testUserToken)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return // killed
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					mu.Lock()
					answered = append(answered, time.Now())
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(2 * time.Second)
	killedAt := time.Now()
	p.kill9(t)
	close(stop)
	wg.Wait()

	db, err := store.Open(context.Background(), "sqlite", filepath.Join(filepath.Dir(cfg), "mcpflow.db"))
	require.NoError(t, err)
	defer db.Close()
	var stored int
	for before := int64(0); ; {
		recs, err := db.ListAudit(context.Background(), mcpflow.AuditFilter{Limit: 1000, Before: before})
		require.NoError(t, err)
		stored += len(recs)
		if len(recs) < 1000 {
			break
		}
		before = recs[len(recs)-1].ID
	}
	late := 0
	for _, at := range answered {
		if killedAt.Sub(at) < 2*flush+100*time.Millisecond {
			late++
		}
	}
	t.Logf("%d calls answered, %d recorded, %d answered in the last two flush intervals", len(answered), stored, late)
	require.Greater(t, len(answered), 20)
	require.LessOrEqual(t, stored, len(answered)+4, "more records than calls (4 may have been recorded without their answer arriving)")
	require.LessOrEqual(t, len(answered)-stored, late, "lost more than the last two flush intervals")
}
