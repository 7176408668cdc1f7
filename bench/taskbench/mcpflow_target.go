package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
	enumspb "go.temporal.io/api/enums/v1"
)

// benchUser is the API user the benchmark submits as.
const benchUser = "bench"

// submitTool is the demo's submit wrapper as mcpflow exposes it.
const submitTool = "demo_submit_job"

// mcpflowProcs is one mcpflow deployment: `mcpflow serve` (API, runtime,
// TaskClient) and `mcpflow worker` (task workflows and activities) as two
// processes sharing one SQLite file, on their own task queue.
type mcpflowProcs struct {
	queue  string
	serve  *proc
	worker *proc
	base   string
	token  string
	hc     *http.Client
}

// startMcpflow writes a config for queue and starts worker and serve, and
// waits until the API is ready and the worker polls its queue.
func startMcpflow(ctx context.Context, e *benchEnv, queue string, conc int) (*mcpflowProcs, error) {
	dir := filepath.Join(e.dir, queue)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := benchproc.FreePorts(1)
	if err != nil {
		return nil, err
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	m := &mcpflowProcs{queue: queue, token: hex.EncodeToString(tok[:]),
		base: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		hc:   &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: conc + 4}}}
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 30,
  "task_toolsets": [{"name": "job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job"}]}}}
`, e.demoURL+"/mcp")
	extPath := filepath.Join(dir, "extensions_config.json")
	if err := os.WriteFile(extPath, []byte(ext), 0o600); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`server:
  addr: "127.0.0.1:%d"
database:
  backend: sqlite
  dsn: %q
temporal:
  address: %q
  namespace: default
  task_queue: %q
extensions_config: %q
workspace:
  root: %q
mcp_tasks:
  enabled: true
  poll_interval_seconds: 1
  # one user submits every task; the RSS phase keeps -rss-n working at once,
  # above the default cap of 100 per user
  max_running_tasks_per_user: 1000000
auth:
  users:
    - id: %s
      token: %q
`, ports[0], filepath.Join(dir, "mcpflow.db"), e.tAddr, queue, extPath, filepath.Join(dir, "ws"), benchUser, m.token)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	// The worker starts first and serve only once the worker polls: two
	// processes opening a fresh SQLite file at once race in the schema
	// migration (no migration lock on SQLite), and one fails with "table
	// threads already exists".
	// The worker's health and metrics listener takes any free port.
	m.worker, err = startProc("mcpflow worker", filepath.Join(dir, "worker.log"), nil, []string{"MCPFLOW_SERVER_WORKER_ADDR=127.0.0.1:0"},
		e.opts.mcpflowBin, "worker", "--config", cfgPath, "--log-level", "warn")
	if err != nil {
		return nil, fmt.Errorf("%w (run `make build`)", err)
	}
	if err := m.waitReady(ctx, m.worker, func() bool { return workerPolling(ctx, e, queue) }); err != nil {
		return nil, err
	}
	m.serve, err = startProc("mcpflow serve", filepath.Join(dir, "serve.log"), nil, nil, e.opts.mcpflowBin,
		"serve", "--config", cfgPath, "--log-level", "warn")
	if err != nil {
		m.stop()
		return nil, err
	}
	if err := m.waitReady(ctx, m.serve, func() bool { return m.get(ctx, "/readyz", nil) == nil }); err != nil {
		return nil, err
	}
	return m, nil
}

// waitReady waits up to 60 s for ready; it stops everything when p exits
// or time runs out.
func (m *mcpflowProcs) waitReady(ctx context.Context, p *proc, ready func() bool) error {
	deadline := time.Now().Add(60 * time.Second)
	for !ready() {
		if p.Exited() {
			m.stop()
			return fmt.Errorf("%s exited: %v\n%s", p.Name, p.Err, p.Tail(20))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			m.stop()
			return fmt.Errorf("%s on %s not ready within 60s: %s", p.Name, m.queue, p.Tail(10))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// workerPolling reports whether some worker polls both the workflow and
// the activity tasks of queue.
func workerPolling(ctx context.Context, e *benchEnv, queue string) bool {
	for _, t := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := e.tc.DescribeTaskQueue(ctx, queue, t)
		if err != nil || len(resp.GetPollers()) == 0 {
			return false
		}
	}
	return true
}

func (m *mcpflowProcs) stop() {
	if m == nil {
		return
	}
	m.serve.Stop(30 * time.Second)
	m.worker.Stop(30 * time.Second)
}

func (m *mcpflowProcs) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", m.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	resp, err := m.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// submit calls the submit wrapper through the API, as an agent does, and
// returns the task id.
func (m *mcpflowProcs) submit(ctx context.Context, thread string, args map[string]any) (string, error) {
	body, _ := json.Marshal(map[string]any{"arguments": args})
	req, err := http.NewRequestWithContext(ctx, "POST", m.base+"/api/threads/"+thread+"/tools/"+submitTool+"/call", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		IsError           bool `json:"is_error"`
		StructuredContent struct {
			TaskID string `json:"task_id"`
		} `json:"structured_content"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil || out.IsError || out.StructuredContent.TaskID == "" {
		return "", fmt.Errorf("submit: HTTP %d: %s", resp.StatusCode, truncate(string(b), 300))
	}
	return out.StructuredContent.TaskID, nil
}

// logProblems returns the WARN and ERROR lines of the two processes' logs,
// grouped by message, most frequent first.
func (m *mcpflowProcs) logProblems() []string {
	counts := map[string]int{}
	var total int
	for _, p := range []*proc{m.serve, m.worker} {
		f, err := os.Open(p.Log)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
				continue
			}
			total++
			key := p.Name + ": " + logKey(line)
			counts[key]++
		}
		_ = f.Close()
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return counts[keys[i]] > counts[keys[j]] || counts[keys[i]] == counts[keys[j]] && keys[i] < keys[j]
	})
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%d× %s", counts[k], k))
	}
	return out
}

// logKey keeps the level and msg of a slog text line (and the error text,
// cut), dropping ids and times so equal problems group together.
func logKey(line string) string {
	level, msg, errText := "", "", ""
	if _, rest, ok := strings.Cut(line, "level="); ok {
		level, _, _ = strings.Cut(rest, " ")
	}
	if _, rest, ok := strings.Cut(line, "msg="); ok {
		msg = quotedOrWord(rest)
	}
	for _, k := range []string{" error=", " err=", " Error="} {
		if _, rest, ok := strings.Cut(line, k); ok {
			errText = quotedOrWord(rest)
			break
		}
	}
	s := level + " " + msg
	if errText != "" {
		s += ": " + truncate(errText, 160)
	}
	return s
}

func quotedOrWord(s string) string {
	if strings.HasPrefix(s, `"`) {
		var q string
		if err := json.NewDecoder(strings.NewReader(s)).Decode(&q); err == nil {
			return q
		}
	}
	w, _, _ := strings.Cut(s, " ")
	return w
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
