package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
)

// EnvPprofAddr is the environment variable that makes an mcpflow process
// serve net/http/pprof on host:port (cmd/mcpflow). -profile sets it for
// the deployed mcpflow.
const EnvPprofAddr = "MCPFLOW_PPROF_ADDR"

// deployed is mcpflow as its users run it: the built binary in its own
// process, configured as deployments/ configure the API process.
//
// It runs `mcpflow serve`, not `mcpflow dev`. A deployment's API process
// is `serve --log-format json` (deployments/compose, deployments/kubernetes),
// and serve is where every ordinary tool call is handled: the worker and
// Temporal carry durable tasks only, and none of the benchmark's tools is a
// task tool. `dev` is serve plus a Temporal worker in one process; without
// a Temporal server its worker would retry the connection for as long as
// it runs, which is neither a deployment nor free. So:
//
//   - mcp_tasks.enabled is true, as in every shipped config.yaml, so the
//     runtime is assembled as deployed (task submitter, background-task
//     tools); temporal.address names a loopback port where nothing
//     listens. serve's Temporal client is lazy and plain tool calls never
//     use it, so nothing dials it; /readyz, which checks Temporal, is not
//     used, /healthz and a first tool call are.
//   - the access log is on: level info (one line per request), JSON, to a
//     file (stderr of the process), as a container's log;
//   - auth has one user token, sent as a bearer token by every target;
//   - the store is SQLite, a fresh file;
//   - metrics are on (they always are; nothing scrapes them), tracing off
//     (no OTEL_* variables reach the process).
type deployed struct {
	proc  *proc
	base  string // http://127.0.0.1:PORT
	pprof string // host:port of net/http/pprof when profiling, else ""
}

// startDeployed writes the configuration under dir and starts bin serve;
// it returns once the API answers and the demo's echo tool answers over
// every upstream. With pprof, MCPFLOW_PPROF_ADDR is set to a free port.
func startDeployed(ctx context.Context, bin, dir, extensions string, pprof, governed bool) (*deployed, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	auditOn := ""
	if governed {
		var err error
		if extensions, err = withGovernance(extensions); err != nil {
			return nil, err
		}
		auditOn = "audit:\n  enabled: true\n"
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	noTemporal, err := freePort()
	if err != nil {
		return nil, err
	}
	extPath := filepath.Join(dir, "extensions_config.json")
	if err := os.WriteFile(extPath, []byte(extensions), 0o600); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`# mcpbench: the API process of a deployment (see deployed in bench/mcpbench).
server:
  addr: "127.0.0.1:%d"
database:
  backend: sqlite
  dsn: %q
temporal:
  address: "127.0.0.1:%d"   # nothing listens here: plain tool calls never use Temporal
  namespace: default
  task_queue: mcpbench
extensions_config: %q
workspace:
  root: %q
mcp_tasks:
  enabled: true
auth:
  users:
    - id: bench
      token: %q
%s`, port, filepath.Join(dir, "mcpflow.db"), noTemporal, extPath, filepath.Join(dir, "workspace"), benchToken, auditOn)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	d := &deployed{base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	var extra []string
	if pprof {
		pp, err := freePort()
		if err != nil {
			return nil, err
		}
		d.pprof = fmt.Sprintf("127.0.0.1:%d", pp)
		extra = append(extra, EnvPprofAddr+"="+d.pprof)
	}
	bin, err = filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	d.proc, err = benchproc.Start("mcpflow serve", filepath.Join(dir, "mcpflow.log"), nil, childEnv(extra...),
		bin, "serve", "--config", cfgPath, "--log-format", "json", "--log-level", "info")
	if err != nil {
		return nil, fmt.Errorf("%w (run `make build`)", err)
	}
	if err := d.waitReady(ctx); err != nil {
		d.proc.Stop(procStopGrace)
		return nil, err
	}
	return d, nil
}

// waitReady waits up to 60 s until /healthz answers and a REST call of
// each upstream's echo tool succeeds (the first one discovers the servers
// and starts the stdio children).
func (d *deployed) waitReady(ctx context.Context) error {
	hc := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	var last error
	paths := []string{"/healthz"}
	for _, srv := range []string{srvHTTP, srvHTTP25, srvStdio, srvStdio25} {
		paths = append(paths, "/api/threads/bench-thread/tools/"+srv+"_echo/call")
	}
	for _, path := range paths {
		for {
			if d.proc.Exited() {
				return fmt.Errorf("mcpflow serve exited: %v\n%s", d.proc.Err, d.proc.Tail(20))
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("mcpflow serve not ready after 60 s: %s: %v\n%s", path, last, d.proc.Tail(20))
			}
			if last = d.probe(ctx, hc, path); last == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func (d *deployed) probe(ctx context.Context, hc *http.Client, path string) error {
	method, body := "POST", []byte(`{"arguments":{"message":"hello"}}`)
	if path == "/healthz" {
		method, body = "GET", nil
	}
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || (body != nil && !bytes.Contains(b, []byte(`"is_error":false`))) {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return nil
}

func (d *deployed) stop() {
	if d != nil {
		d.proc.Stop(procStopGrace)
	}
}

// withGovernance adds 20 policy rules to extensions, every one of which
// applies to every call and is evaluated for it: 10 over the caller
// (user.id) and 10 over the arguments (args.path). None refuses the
// benchmark's calls: what is measured is what deciding costs.
func withGovernance(extensions string) (string, error) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(extensions), &doc); err != nil {
		return "", err
	}
	var rules []any
	for i := range 10 {
		rules = append(rules, map[string]any{"name": fmt.Sprintf("blocked-user-%d", i), "effect": "deny",
			"when": fmt.Sprintf("user.id == 'blocked-%d'", i)})
	}
	for i := range 10 {
		rules = append(rules, map[string]any{"name": fmt.Sprintf("no-system-path-%d", i), "effect": "deny",
			"when": fmt.Sprintf("has(args.path) && args.path.startsWith('/etc/%d')", i)})
	}
	doc["policies"] = map[string]any{"default": "allow", "rules": rules}
	b, err := json.Marshal(doc)
	return string(b), err
}
