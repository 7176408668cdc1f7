package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/proto"
)

// secretCanary is the common prefix of every secret value these tests
// configure; each field gets its own suffix so a hit names its source.
const secretCanary = "canary-SECRET-7f3a"

// leakRecorder keeps every observable surface's bytes under a name.
type leakRecorder struct {
	mu      sync.Mutex
	sources []leakSource
}

type leakSource struct {
	name string
	data []byte
}

func (r *leakRecorder) add(name string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, leakSource{name, append([]byte(nil), data...)})
}

// leakHit is one occurrence of the canary: the surface and an excerpt with
// the canary's variable part redacted.
type leakHit struct {
	source, excerpt string
}

func (r *leakRecorder) hits() []leakHit {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []leakHit
	for _, s := range r.sources {
		data := s.data
		off := 0
		for {
			i := bytes.Index(data[off:], []byte(secretCanary))
			if i < 0 {
				break
			}
			i += off
			lo, hi := max(0, i-160), min(len(data), i+80)
			ex := strings.ReplaceAll(string(data[lo:hi]), secretCanary, "<CANARY>")
			out = append(out, leakHit{s.name, strings.ToValidUTF8(ex, "?")})
			off = i + len(secretCanary)
		}
	}
	return out
}

// requireNoLeak fails the test with every place a canary showed up.
func (r *leakRecorder) requireNoLeak(t *testing.T) {
	t.Helper()
	hits := r.hits()
	seen := map[string]bool{}
	for _, h := range hits {
		key := h.source + "|" + h.excerpt
		if seen[key] {
			continue
		}
		seen[key] = true
		t.Errorf("secret canary in %s: …%s…", h.source, h.excerpt)
	}
	r.mu.Lock()
	n := len(r.sources)
	r.mu.Unlock()
	t.Logf("scanned %d captured surfaces, %d canary hits", n, len(hits))
}

// rawDo sends a request and records the status, headers and body.
func (r *leakRecorder) rawDo(t *testing.T, method, url, token, body string, hdr map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var hb bytes.Buffer
	_ = resp.Header.Write(&hb)
	r.add(fmt.Sprintf("HTTP %s %s -> %d", method, strings.SplitN(url, "/", 4)[3], resp.StatusCode), append(hb.Bytes(), b...))
	return resp.StatusCode, b
}

// dumpHistories records the history (protobuf wire form, where payloads
// appear as their raw bytes) and the description (memo, search
// attributes) of every workflow in the namespace.
func (r *leakRecorder) dumpHistories(t *testing.T, queue string) int {
	t.Helper()
	ctx := context.Background()
	c := temporal.Client()
	var token []byte
	n := 0
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: fmt.Sprintf("TaskQueue = %q", queue), NextPageToken: token, PageSize: 1000})
		require.NoError(t, err)
		for _, ex := range resp.GetExecutions() {
			id, run := ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()
			b, _ := proto.Marshal(ex)
			r.add("Temporal execution info "+id, b)
			d, err := c.DescribeWorkflowExecution(ctx, id, run)
			if err == nil {
				b, _ := proto.Marshal(d)
				r.add("Temporal describe "+id, b)
			}
			it := c.GetWorkflowHistory(ctx, id, run, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			var buf bytes.Buffer
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					break
				}
				b, _ := proto.Marshal(ev)
				buf.Write(b)
			}
			r.add("Temporal history "+id+" ("+ex.GetType().GetName()+")", buf.Bytes())
			n++
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	return n
}

// echoUpstream is a reverse proxy to an MCP server that can be switched to
// refuse every request, as a misbehaving gateway in front of an MCP server
// does, with a body that quotes the request's credentials.
type echoUpstream struct {
	srv  *httptest.Server
	mode atomic.Int32 // 0 pass, 1 answer 500 quoting Authorization
}

func startEchoUpstream(t *testing.T, target string) *echoUpstream {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	e := &echoUpstream{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.mode.Load() == 1 && r.Method == http.MethodPost {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "gateway refused request with Authorization: %s", r.Header.Get("Authorization"))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *echoUpstream) url() string { return e.srv.URL + "/mcp" }

// startSecretStack runs mcpflow dev with the given extensions config, the
// static user and admin tokens given, mcp_tasks on with a secrets_key, a
// failing webhook with a secret, and the audit log on. It returns mcpflow and
// its log buffer.
func startSecretStack(t *testing.T, ext, userToken, adminToken string) (*Main, *testenv.SyncBuffer, string) {
	t.Helper()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
	}))
	t.Cleanup(hook.Close)
	dir := t.TempDir()
	queue := fmt.Sprintf("e2e-secrets-%d", time.Now().UnixNano())
	cfg := fmt.Sprintf(`server: { addr: %q, worker_addr: %q, shutdown_timeout_seconds: 2 }
database: { backend: sqlite, dsn: mcpflow.db }
temporal: { address: %q, namespace: default, task_queue: %s }
auth:
  admin_tokens: [%q]
  users: [ { id: alice, token: %q } ]
mcp_tasks: { enabled: true, poll_interval_seconds: 1, secrets_key: "%s-secretskey" }
notifications: { webhook_url: %q, webhook_secret: "%s-webhook" }
audit: { enabled: true, flush_interval_ms: 50 }
workspace: { root: ws }
`, testenv.FreeAddr(t), testenv.FreeAddr(t), temporal.HostPort, queue, adminToken, userToken,
		secretCanary, hook.URL+"/hook", secretCanary)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extensions_config.json"), []byte(ext), 0o600))
	logs := &testenv.SyncBuffer{}
	m := startMain(t, ModeDev, filepath.Join(dir, "config.yaml"), logs)
	waitForWorker(t, logs)
	return m, logs, queue
}

// canaryTokenEndpoint is an OAuth token endpoint that hands out a canary
// access token.
func canaryTokenEndpoint(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token": "%s-oauthtoken", "token_type": "Bearer", "expires_in": 3600}`, secretCanary)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/token"
}

// taskIDOf is the task id of a submit wrapper's REST answer ("" if none).
func taskIDOf(b []byte) string {
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	sc, _ := out["structured_content"].(map[string]any)
	id, _ := sc["task_id"].(string)
	return id
}

// waitTaskStatus polls a task's detail until its status is one of want.
func (r *leakRecorder) waitTaskStatus(t *testing.T, base, token, thread, id string, want ...string) string {
	t.Helper()
	var last string
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		_, b := r.rawDo(t, "GET", base+"/api/threads/"+thread+"/mcp-tasks/"+id, token, "", nil)
		var d map[string]any
		_ = json.Unmarshal(b, &d)
		last, _ = d["status"].(string)
		for _, s := range want {
			if last == s {
				return last
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("task %s stayed %q, never %v", id, last, want)
	return ""
}

// An MCP server behind a gateway that refuses requests with a plain-text
// body quoting the request's Authorization header (what many proxies, WAFs
// and debug servers do). mcpflow copies the raw error body (up to 1 MiB)
// into the error's cause. Ordinary calls answer without the cause, but the
// cause (with the static header, the user_auth credential or the OAuth
// access token mcpflow sent) reaches the durable submit's answer, the task
// detail (last_poll_error, last_cancel_error) and events, the error logs
// and the Temporal history.
func TestExploreSecretsUpstreamErrorBodyEchoesCredentials(t *testing.T) {
	rec := &leakRecorder{}
	demo := testenv.StartDemo(t, "http", "--state", filepath.Join(t.TempDir(), "jobs.json"))
	gw := startEchoUpstream(t, demo.URL)
	ext := fmt.Sprintf(`{"mcpServers": {
  "static": {"type": "http", "url": %[1]q, "tool_call_timeout": 10, "headers": {"Authorization": "Bearer %[2]s-hdr"}, %[3]s},
  "peruser": {"type": "http", "url": %[1]q, "tool_call_timeout": 10, "user_auth": {"users": {"alice": "Bearer %[2]s-userauth"}}},
  "oauth": {"type": "http", "url": %[1]q, "tool_call_timeout": 10,
    "oauth": {"token_url": %[4]q, "client_id": "mcpflow", "client_secret": "%[2]s-clientsecret"}}
}}`, gw.url(), secretCanary, jobToolset, canaryTokenEndpoint(t))
	userToken, adminToken := secretCanary+"-usertoken", secretCanary+"-admintoken"
	m, logs, queue := startSecretStack(t, ext, userToken, adminToken)
	base := m.URL()
	call := func(thread, tool, args string) (int, []byte) {
		return rec.rawDo(t, "POST", base+"/api/threads/"+thread+"/tools/"+tool+"/call", userToken, `{"arguments": `+args+`}`, nil)
	}

	// While the gateway lets requests through, every server works.
	code, b := call("e1", "static_echo", `{"message": "hi"}`)
	require.Equal(t, 200, code, string(b))
	require.Contains(t, string(b), `"is_error":false`)
	code, b = call("e1", "oauth_echo", `{"message": "hi"}`)
	require.Equal(t, 200, code, string(b))
	require.Contains(t, string(b), `"is_error":false`)
	_, b = call("e1", "static_submit_job", `{"duration_seconds": 300}`)
	running := taskIDOf(b)
	require.NotEmpty(t, running, string(b))
	rec.waitTaskStatus(t, base, userToken, "e1", running, "working")

	// The gateway starts refusing.
	gw.mode.Store(1)
	_, b = call("e1", "static_echo", `{"message": "hi"}`)
	t.Logf("ordinary call answer while refused: %s", strings.ReplaceAll(string(b), secretCanary, "<CANARY>"))
	call("e1", "peruser_echo", `{"message": "hi"}`)
	call("e1", "oauth_echo", `{"message": "hi"}`)
	_, b = call("e1", "static_submit_job", `{"duration_seconds": 1}`)
	// The MCP endpoint.
	sid := initSession(t, base, "/mcp/threads/e2", userToken, nil)
	doRPC(t, base, "POST", rpc{path: "/mcp/threads/e2", token: userToken, session: sid,
		body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`})
	a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/e2", token: userToken, session: sid,
		body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"peruser_echo","arguments":{"message":"hi"}}}`})
	rec.add(fmt.Sprintf("MCP tools/call peruser_echo -> %d", a.status), []byte(a.raw))
	t.Logf("MCP tools/call answer while refused: %s", strings.ReplaceAll(a.raw, secretCanary, "<CANARY>"))
	// The running task's polls fail; it is then cancelled.
	time.Sleep(4 * time.Second)
	rec.rawDo(t, "GET", base+"/api/threads/e1/mcp-tasks/"+running, userToken, "", nil)
	rec.rawDo(t, "POST", base+"/api/threads/e1/mcp-tasks/"+running+"/cancel", userToken, "", nil)
	time.Sleep(3 * time.Second)
	gw.mode.Store(0)
	rec.waitTaskStatus(t, base, userToken, "e1", running, "cancelled")
	rec.rawDo(t, "GET", base+"/api/threads/e1/events", userToken, "", nil)
	time.Sleep(300 * time.Millisecond)
	rec.rawDo(t, "GET", base+"/api/audit?limit=1000", adminToken, "", nil)
	rec.rawDo(t, "GET", base+"/metrics", "", "", nil)

	rec.dumpHistories(t, queue)
	rec.add("mcpflow logs", []byte(logs.String()))
	rec.requireNoLeak(t)
}

// A sweep over the surfaces no other test checks for secrets, with a canary
// in every secret field: stdio env (a server that prints its environment on
// stdout and crashes, a task server), static headers of an unreachable and a
// 401 server, a URL password on a server that is unreachable, answers 401
// or runs durable tasks, OAuth client secret, extra params and access token
// (granted, then refused by the server; and a refusing token endpoint that
// quotes the secret in error_description), user_auth, request secrets of
// headers_from_context, server-level secret extras, the users' and admins'
// API tokens (and a wrong one), secrets_key and webhook_secret; then
// /healthz, /readyz, /api/features, /metrics, /openapi.json, tool listing
// and calls, durable tasks completed, failed and cancelled, the MCP
// endpoint, the admin config API (reads, writes refused for bad secret
// values, a good write, a toggle), the audit log, the logs (the documented
// debug lines of stdio stderr left out) and every workflow's history,
// memo and search attributes. GET /api/mcp/config is left out of the URL
// password check (documented).
func TestExploreSecretsSweep(t *testing.T) {
	rec := &leakRecorder{}
	demo := testenv.StartDemo(t, "http", "--state", filepath.Join(t.TempDir(), "jobs.json"))
	bin := testenv.Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp")
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		fmt.Fprintf(w, `{"error": "invalid_client", "error_description": "bad secret %s"}`, r.Form.Get("client_secret"))
	}))
	t.Cleanup(refuse.Close)
	deny := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.WriteHeader(401)
	}))
	t.Cleanup(deny.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	downHost := ln.Addr().String()
	require.NoError(t, ln.Close())
	du, _ := url.Parse(deny.URL)
	dm, _ := url.Parse(demo.URL)

	ext := fmt.Sprintf(`{"mcpServers": {
  "demo": {"type": "http", "url": %[1]q, "tool_call_timeout": 10,
    "headers": {"Authorization": "Bearer %[2]s-hdr", "X-Api-Key": "%[2]s-apikeyhdr"},
    "apiKey": "%[2]s-extra", "nested": {"password": "%[2]s-nestedpw"}, %[3]s},
  "down": {"type": "http", "url": "http://u:%[2]s-urlpw1@%[4]s/mcp", "headers": {"Authorization": "Bearer %[2]s-downhdr"}, "session_init_timeout": 3},
  "denied": {"type": "http", "url": "http://u:%[2]s-urlpw2@%[5]s/mcp", "headers": {"Authorization": "Bearer %[2]s-deniedhdr"}, "session_init_timeout": 3},
  "pwtask": {"type": "http", "url": "http://u:%[2]s-urlpw3@%[6]s/mcp", "tool_call_timeout": 10, %[3]s},
  "oauthok": {"type": "http", "url": "%[7]s/mcp", "session_init_timeout": 3,
    "oauth": {"token_url": %[8]q, "client_id": "mcpflow", "client_secret": "%[2]s-clientsecret", "extra_token_params": {"resource_secret": "%[2]s-extraparam"}}},
  "oauthbad": {"type": "http", "url": %[1]q, "session_init_timeout": 3,
    "oauth": {"token_url": %[9]q, "client_id": "mcpflow", "client_secret": "%[2]s-clientsecret2"}},
  "ua": {"type": "http", "url": %[1]q, "tool_call_timeout": 10,
    "user_auth": {"users": {"alice": "Bearer %[2]s-userauth"}},
    "headers_from_context": {"headers": {"X-Tenant-Token": "tenant_token"}}, %[3]s},
  "crash": {"type": "stdio", "command": "/bin/sh", "args": ["-c", "env; exit 3"], "env": {"CRASH_TOKEN": "%[2]s-crashenv"}},
  "local": {"type": "stdio", "command": %[10]q, "args": ["--transport", "stdio"], "env": {"LOCAL_TOKEN": "%[2]s-localenv"}, %[3]s}
}}`, demo.URL, secretCanary, jobToolset, downHost, du.Host, dm.Host, deny.URL, canaryTokenEndpoint(t), refuse.URL+"/token", bin)
	userToken, adminToken := secretCanary+"-usertoken", secretCanary+"-admintoken"
	m, logs, queue := startSecretStack(t, ext, userToken, adminToken)
	base := m.URL()
	call := func(thread, tool, args string) (int, []byte) {
		return rec.rawDo(t, "POST", base+"/api/threads/"+thread+"/tools/"+tool+"/call", userToken,
			`{"arguments": `+args+`, "secrets": {"tenant_token": "`+secretCanary+`-ctx"}}`, nil)
	}

	for _, p := range []string{"/healthz", "/readyz", "/api/features", "/metrics", "/openapi.json"} {
		code, _ := rec.rawDo(t, "GET", base+p, "", "", nil)
		require.Equal(t, 200, code, p)
	}
	rec.rawDo(t, "GET", base+"/api/threads/s1/tools", userToken, "", nil)
	time.Sleep(2 * time.Second)
	code, b := rec.rawDo(t, "GET", base+"/api/threads/s1/tools", userToken, "", nil)
	require.Equal(t, 200, code, string(b))
	for _, tool := range []string{"demo_echo", "down_echo", "denied_echo", "pwtask_echo", "oauthok_echo", "oauthbad_echo", "crash_echo", "local_echo", "ua_echo", "nope_tool"} {
		call("s1", tool, `{"message": "hi"}`)
	}
	code, b = call("s1", "demo_echo", `{"message": "hi"}`)
	require.Contains(t, string(b), `"is_error":false`, "the demo server works (%d)", code)

	// Durable tasks on the header server, the URL-password server, the
	// stdio server with env and the server with request secrets.
	type task struct{ id, want string }
	var tasks []task
	for _, c := range []struct{ tool, args, want string }{
		{"demo_submit_job", `{"duration_seconds": 0.5}`, "completed"},
		{"demo_submit_job", `{"duration_seconds": 0.5, "outcome": "failed", "error": "disk full"}`, "failed"},
		{"pwtask_submit_job", `{"duration_seconds": 0.5}`, "completed"},
		{"ua_submit_job", `{"duration_seconds": 0.5}`, "completed"},
		{"local_submit_job", `{"duration_seconds": 0.5, "outcome": "failed", "error": "stdio disk full"}`, "failed"},
		{"demo_submit_job", `{"duration_seconds": 300}`, "cancelled"},
		{"local_submit_job", `{"duration_seconds": 300}`, "cancelled"},
	} {
		_, b := call("s2", c.tool, c.args)
		id := taskIDOf(b)
		require.NotEmpty(t, id, "%s: %s", c.tool, b)
		tasks = append(tasks, task{id, c.want})
	}
	for _, tk := range tasks {
		if tk.want == "cancelled" {
			rec.waitTaskStatus(t, base, userToken, "s2", tk.id, "working")
			rec.rawDo(t, "POST", base+"/api/threads/s2/mcp-tasks/"+tk.id+"/cancel", userToken, "", nil)
		}
	}
	for _, tk := range tasks {
		rec.waitTaskStatus(t, base, userToken, "s2", tk.id, tk.want)
	}
	rec.rawDo(t, "GET", base+"/api/threads/s2/mcp-tasks", userToken, "", nil)
	rec.rawDo(t, "GET", base+"/api/threads/s2/events", userToken, "", nil)

	// MCP endpoint: listing and failing calls.
	sid := initSession(t, base, "/mcp/threads/s3", userToken, nil)
	doRPC(t, base, "POST", rpc{path: "/mcp/threads/s3", token: userToken, session: sid, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`})
	for i, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"down_echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"oauthbad_echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"crash_echo","arguments":{"message":"hi"}}}`,
	} {
		a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/s3", token: userToken, session: sid, body: body})
		rec.add(fmt.Sprintf("MCP request %d -> %d", i, a.status), []byte(a.raw))
	}

	// Wrong tokens.
	rec.rawDo(t, "GET", base+"/api/threads/s1/tools", secretCanary+"-wrongtoken", "", nil)
	rec.rawDo(t, "GET", base+"/api/mcp/config", userToken, "", nil)

	// Admin config API: refused writes whose secret fields hold canaries,
	// a good write, its duplicate, a toggle and reads.
	code, b = rec.rawDo(t, "GET", base+"/api/mcp/config", adminToken, "", nil)
	require.Equal(t, 200, code, string(b))
	rec.rawDo(t, "POST", base+"/api/mcp/cache/reset", adminToken, "", nil)
	for _, body := range []string{
		`{"mcp_servers": {"x": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ` + secretCanary + `-put1\n"}}}}`,
		`{"mcp_servers": {"x": {"type": "stdio", "command": "npx", "env": {"A": 5, "B": "` + secretCanary + `-put2"}}}}`,
		`{"mcp_servers": {"x": {"type": "http", "url": "http://127.0.0.1:1/mcp", "oauth": {"token_url": "http://127.0.0.1:1/t", "client_id": "c", "client_secret": "` + secretCanary + `-put3", "grant_type": "bogus"}}}}`,
		`{"mcp_servers": {"x": {"type": "http", "url": "http://127.0.0.1:1/mcp", "user_auth": {"users": {"bob": 7, "al": "` + secretCanary + `-put8"}, "header": ""}}}}`,
		`{"mcp_servers": {"x": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "` + secretCanary + `-put9", "authorization": "` + secretCanary + `-put10"}}}}`,
		`{"mcp_servers": {"x": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers_from_context": {"headers": {"X-T": ""}, "token": "` + secretCanary + `-put16"}, "headers": {"Authorization": "` + secretCanary + `-put17"}}}}`,
		`{"mcp_servers": {"x": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "` + secretCanary + `-put19"}, "oauth": {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "token_url": "http://example.com/t", "client_id": "c", "client_secret": "` + secretCanary + `-put20"}}}}`,
		`{"mcp_servers": {"x": {"type": "stdio", "command": "bash", "args": ["-c", "x"], "env": {"K": "` + secretCanary + `-put21"}}}}`,
	} {
		code, b := rec.rawDo(t, "POST", base+"/api/mcp/config/servers", adminToken, body, nil)
		require.Equal(t, 400, code, string(b))
	}
	good := `{"mcp_servers": {"added": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ` + secretCanary + `-added"}, "oauth": {"token_url": "http://127.0.0.1:1/t", "client_id": "c", "client_secret": "` + secretCanary + `-addedcs", "refresh_token": "` + secretCanary + `-addedrt"}, "privateKey": "` + secretCanary + `-addedpk", "tools": {"echo": {"apiToken": "` + secretCanary + `-addedtool"}}, "list": [{"secret": "` + secretCanary + `-addedlist"}]}}}`
	code, b = rec.rawDo(t, "POST", base+"/api/mcp/config/servers", adminToken, good, nil)
	require.Equal(t, 201, code, string(b))
	code, _ = rec.rawDo(t, "POST", base+"/api/mcp/config/servers", adminToken, good, nil)
	require.Equal(t, 409, code)
	rec.rawDo(t, "PATCH", base+"/api/mcp/config", adminToken, `{"server_name": "added", "enabled": false}`, nil)
	rec.rawDo(t, "GET", base+"/api/threads/s1/tools", userToken, "", nil)
	time.Sleep(300 * time.Millisecond)
	code, b = rec.rawDo(t, "GET", base+"/api/audit?limit=1000", adminToken, "", nil)
	require.Equal(t, 200, code, string(b))
	require.Contains(t, string(b), "added", "the audit log holds the config change")
	rec.rawDo(t, "GET", base+"/metrics", "", "", nil)
	require.Positive(t, rec.dumpHistories(t, queue))

	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(l, `msg="MCP server stderr"`) {
			lines = append(lines, l)
		}
	}
	rec.add("mcpflow logs (without the documented debug stderr lines)", []byte(strings.Join(lines, "\n")))
	// GET /api/mcp/config shows URL passwords (documented): leave those
	// answers out of the URL password check only.
	var hits []leakHit
	for _, h := range rec.hits() {
		if strings.Contains(h.source, "api/mcp/config") && strings.Contains(h.excerpt, "<CANARY>-urlpw") {
			continue
		}
		hits = append(hits, h)
	}
	for _, h := range hits {
		t.Errorf("secret canary in %s: …%s…", h.source, h.excerpt)
	}
}
