package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
)

// The soak (make soak): the scale-out story under failure. Two `mcpflow
// worker` and two `mcpflow serve` processes share one Temporal dev server
// and one PostgreSQL database; tasks are submitted through both APIs while
// a worker is killed with SIGKILL and restarted every few seconds; a
// webhook receiver fails one POST in ten. At the end every task must be
// terminal, the demo server must have seen exactly one submit per task, and
// every task's last event must have been accepted by the receiver (deduped
// by its Idempotency-Key).

type soakOptions struct {
	n, conc, threads int
	maxDuration      float64
	killEvery        time.Duration
	timeout          time.Duration
	pgURL            string
	failRate         float64
}

// soakHook is the webhook receiver: it counts POSTs and accepted POSTs per
// Idempotency-Key and answers 500 to a share of them.
type soakHook struct {
	failRate float64
	mu       sync.Mutex
	posts    map[string]int
	accepted map[string]int
	srv      *http.Server
	url      string
}

func startSoakHook(failRate float64) (*soakHook, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &soakHook{failRate: failRate, posts: map[string]int{}, accepted: map[string]int{}, url: "http://" + ln.Addr().String() + "/hook"}
	h.srv = &http.Server{Handler: h}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

func (h *soakHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	h.mu.Lock()
	h.posts[key]++
	fail := mrand.Float64() < h.failRate
	if !fail {
		h.accepted[key]++
	}
	h.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func runSoak(ctx context.Context, o options, so soakOptions) error {
	start := time.Now()
	dir, err := os.MkdirTemp("", "mcpflow-soak-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	progress("soak: starting the Temporal dev server and the demo MCP server in %s", dir)
	e, err := startEnv(ctx, o, dir)
	defer e.close()
	if err != nil {
		return err
	}
	dsn, drop, err := soakDatabase(ctx, so.pgURL)
	if err != nil {
		return err
	}
	defer drop()
	hook, err := startSoakHook(so.failRate)
	if err != nil {
		return err
	}
	defer hook.srv.Close()

	var tok, key [16]byte
	_, _ = rand.Read(tok[:])
	_, _ = rand.Read(key[:])
	token := hex.EncodeToString(tok[:])
	queue := "soak-" + hex.EncodeToString(tok[:4])
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 30,
  "task_toolsets": [{"name": "job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job"}]}}}
`, e.demoURL+"/mcp")
	extPath := filepath.Join(dir, "extensions_config.json")
	if err := os.WriteFile(extPath, []byte(ext), 0o600); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`database: { backend: postgres, dsn: %q }
temporal: { address: %q, namespace: default, task_queue: %q }
extensions_config: %q
workspace: { root: %q }
mcp_tasks: { enabled: true, poll_interval_seconds: 1, max_poll_backoff_seconds: 8, lease_seconds: 15, secrets_key: %q, idempotent_submit_servers: [demo] }
notifications: { webhook_url: %q, webhook_secret: soak-secret }
auth: { users: [ { id: %s, token: %q } ] }
`, dsn, e.tAddr, queue, extPath, filepath.Join(dir, "ws"), hex.EncodeToString(key[:]), hook.url, benchUser, token)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}

	workers := make([]*proc, 2)
	var wmu sync.Mutex
	startWorker := func(i int, gen int) error {
		p, err := startProc(fmt.Sprintf("worker-%d", i), filepath.Join(dir, fmt.Sprintf("worker-%d.%d.log", i, gen)), nil,
			[]string{"MCPFLOW_SERVER_WORKER_ADDR=127.0.0.1:0"}, e.opts.mcpflowBin, "worker", "--config", cfgPath, "--log-format", "json")
		if err != nil {
			return err
		}
		wmu.Lock()
		workers[i] = p
		wmu.Unlock()
		return nil
	}
	for i := range workers {
		if err := startWorker(i, 0); err != nil {
			return err
		}
	}
	defer func() {
		wmu.Lock()
		defer wmu.Unlock()
		for _, w := range workers {
			w.Stop(30 * time.Second)
		}
	}()
	deadline := time.Now().Add(90 * time.Second)
	for !workerPolling(ctx, e, queue) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the workers never polled: %s", workers[0].Tail(10))
		}
		time.Sleep(200 * time.Millisecond)
	}
	ports, err := benchproc.FreePorts(2)
	if err != nil {
		return err
	}
	apis := make([]*mcpflowProcs, 2)
	for i := range apis {
		p, err := startProc(fmt.Sprintf("serve-%d", i), filepath.Join(dir, fmt.Sprintf("serve-%d.log", i)), nil,
			[]string{fmt.Sprintf("MCPFLOW_SERVER_ADDR=127.0.0.1:%d", ports[i])}, e.opts.mcpflowBin, "serve", "--config", cfgPath, "--log-format", "json")
		if err != nil {
			return err
		}
		apis[i] = &mcpflowProcs{queue: queue, serve: p, token: token, base: fmt.Sprintf("http://127.0.0.1:%d", ports[i]),
			hc: &http.Client{Timeout: 3 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: so.conc}}}
		defer p.Stop(30 * time.Second)
		if err := apis[i].waitReady(ctx, p, func() bool { return apis[i].get(ctx, "/readyz", nil) == nil }); err != nil {
			return err
		}
	}

	// Chaos: one worker at a time dies of SIGKILL and comes back.
	chaosCtx, stopChaos := context.WithCancel(ctx)
	defer stopChaos()
	var kills int
	var chaosErr error // a worker that did not come back
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		gen := 1
		for {
			wait := so.killEvery/2 + time.Duration(mrand.Int64N(int64(so.killEvery)))
			select {
			case <-chaosCtx.Done():
				return
			case <-time.After(wait):
			}
			i := mrand.IntN(len(workers))
			wmu.Lock()
			w := workers[i]
			wmu.Unlock()
			_ = syscall.Kill(-w.PID(), syscall.SIGKILL)
			<-w.Done()
			kills++
			time.Sleep(time.Duration(mrand.Int64N(int64(2 * time.Second))))
			if err := startWorker(i, gen); err != nil {
				progress("soak: restart of worker-%d failed: %v", i, err)
				chaosErr = fmt.Errorf("restart of worker-%d: %w", i, err)
				return
			}
			gen++
		}
	}()

	progress("soak: submitting %d tasks through both APIs (%d in flight) while workers are killed", so.n, so.conc)
	sub := submitAll(ctx, so.n, so.conc, func(i int) string { return fmt.Sprintf("soak-%d", i) },
		func(ctx context.Context, i int, label string) (string, error) {
			args := map[string]any{"duration_seconds": 1 + mrand.Float64()*(so.maxDuration-1), "label": label, "poll_after_seconds": 1}
			return apis[i%2].submit(ctx, fmt.Sprintf("soak-t%d", i%so.threads), args)
		})
	submittedAt := time.Now()
	progress("soak: %d submitted (%d refused), waiting for every task and notification to settle", len(sub.ids), len(sub.errs))

	pg, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer pg.Close()
	var final soakCounts
	deadline = time.Now().Add(so.timeout)
	for {
		final, err = soakState(ctx, pg)
		if err == nil && final.terminal == len(sub.ids) && final.settled == len(sub.ids) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	stopChaos()
	<-chaosDone
	settledAt := time.Now()
	if chaosErr != nil {
		return chaosErr
	}

	jobs, resent, err := soakJobs(ctx, e)
	if err != nil {
		return err
	}
	r := soakReport{o: so, sub: sub, counts: final, kills: kills, jobs: jobs, resent: resent, hook: hook, ids: sub.ids,
		took: time.Since(start), submitTook: submittedAt.Sub(sub.start), settleTook: settledAt.Sub(submittedAt), pg: pg}
	return r.print(ctx)
}

// soakDatabase creates a fresh database on the PostgreSQL server of dsn and
// returns its DSN and a function that drops it.
func soakDatabase(ctx context.Context, dsn string) (string, func(), error) {
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		return "", nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "mcpflow_soak_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("create the soak database (is PostgreSQL running? set -pg): %w", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		admin.Close()
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() {
		_, _ = admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close()
	}, nil
}

type soakCounts struct {
	total, terminal, settled int
	byStatus                 map[string]int
	byNotification           map[string]int
}

func soakState(ctx context.Context, db *sql.DB) (soakCounts, error) {
	c := soakCounts{byStatus: map[string]int{}, byNotification: map[string]int{}}
	rows, err := db.QueryContext(ctx, `SELECT status, notification_status, count(*) FROM mcp_tasks GROUP BY status, notification_status`)
	if err != nil {
		return c, err
	}
	defer rows.Close()
	for rows.Next() {
		var st, ns string
		var n int
		if err := rows.Scan(&st, &ns, &n); err != nil {
			return c, err
		}
		c.total += n
		c.byStatus[st] += n
		c.byNotification[ns] += n
		if st == "completed" || st == "failed" || st == "cancelled" {
			c.terminal += n
			if ns == "delivered" || ns == "dead_letter" {
				c.settled += n
			}
		}
	}
	return c, rows.Err()
}

// soakJobs counts the demo's jobs per label (a job is a started remote
// task) and the submit calls that were answered with an existing job (sent
// again with the same idempotency key).
func soakJobs(ctx context.Context, e *benchEnv) (map[string]int, int, error) {
	res, err := e.stats.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "job_stats"}})
	if err != nil {
		return nil, 0, fmt.Errorf("job_stats: %w", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Jobs map[string]jobStat `json:"jobs"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, 0, err
	}
	counts, resent := map[string]int{}, 0
	for _, j := range out.Jobs {
		counts[j.Label]++
		resent += max(j.Submits-1, 0)
	}
	return counts, resent, nil
}

type soakReport struct {
	o                soakOptions
	sub              *submitted
	counts           soakCounts
	kills            int
	jobs             map[string]int
	resent           int // submit calls answered with an existing job
	hook             *soakHook
	ids              []string
	took, submitTook time.Duration
	settleTook       time.Duration
	pg               *sql.DB
}

func (r soakReport) print(ctx context.Context) error {
	// Each task's last event version, to find its key at the receiver.
	versions := map[string]int{}
	rows, err := r.pg.QueryContext(ctx, `SELECT id, event_version FROM mcp_tasks`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var v int
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return err
		}
		versions[id] = v
	}
	rows.Close()

	var oneSubmit, noSubmit, manySubmits int
	for _, label := range r.sub.labels {
		switch r.jobs[label] {
		case 1:
			oneSubmit++
		case 0:
			noSubmit++
		default:
			manySubmits++
		}
	}
	untracked := 0 // refused submits whose remote job exists anyway
	for _, label := range r.sub.refused {
		untracked += r.jobs[label]
	}
	r.hook.mu.Lock()
	var delivered, undelivered, posts, accepted, redelivered int
	for _, id := range r.ids {
		key := fmt.Sprintf("mcp-task:%s:%d", id, versions[id])
		if r.hook.accepted[key] >= 1 {
			delivered++
		} else {
			undelivered++
		}
	}
	for k, n := range r.hook.posts {
		posts += n
		accepted += r.hook.accepted[k]
		if r.hook.accepted[k] > 1 {
			redelivered += r.hook.accepted[k] - 1
		}
	}
	r.hook.mu.Unlock()

	ok := r.kills > 0 && len(r.sub.errs) == 0 && len(r.ids) == r.o.n && r.counts.terminal == r.o.n && r.counts.byStatus["completed"] == r.o.n &&
		oneSubmit == r.o.n && delivered == r.o.n && r.counts.byNotification["delivered"] == r.o.n
	fmt.Printf("## make soak — %s UTC · nproc %d · %s\n\n", time.Now().UTC().Format("2006-01-02 15:04"), runtime.NumCPU(), runtime.Version())
	fmt.Printf("2 × `mcpflow serve` + 2 × `mcpflow worker` · one Temporal dev server · PostgreSQL · demo jobs of 1–%.0f s · one worker SIGKILLed every ~%s and restarted · webhook fails %.0f%% of POSTs\n\n",
		r.o.maxDuration, r.o.killEvery, r.o.failRate*100)
	fmt.Printf("| check | result |\n|---|---|\n")
	row := func(k, v string) { fmt.Printf("| %s | %s |\n", k, v) }
	row("tasks submitted through the two APIs", fmt.Sprintf("%d of %d (%d refused)", len(r.ids), r.o.n, len(r.sub.errs)))
	row("submit answer p50 / p99", fmt.Sprintf("%s / %s", ms(pct(r.sub.lat, 0.5)), ms(pct(r.sub.lat, 0.99))))
	row("workers killed with SIGKILL (and restarted)", fmt.Sprint(r.kills))
	row("tasks terminal", fmt.Sprintf("%d (%s)", r.counts.terminal, fmtCounts(r.counts.byStatus)))
	row("demo jobs started per task (a job is one remote task)", fmt.Sprintf("exactly one: %d · none: %d · more than one: %d", oneSubmit, noSubmit, manySubmits))
	row("demo jobs of refused submits (started, untracked)", fmt.Sprint(untracked))
	row("submits sent again after a worker died, answered with the job they had started (same idempotency key)", fmt.Sprint(r.resent))
	row("notification status", fmtCounts(r.counts.byNotification))
	row("last event accepted by the receiver (by key)", fmt.Sprintf("%d of %d", delivered, len(r.ids)))
	row("webhook POSTs / accepted / accepted again under a known key", fmt.Sprintf("%d / %d / %d", posts, accepted, redelivered))
	row("time: submitting / settling / whole run", fmt.Sprintf("%s / %s / %s", r.submitTook.Round(time.Second), r.settleTook.Round(time.Second), r.took.Round(time.Second)))
	row("verdict", verdict(ok))
	for _, e := range r.sub.errs {
		fmt.Fprintln(os.Stderr, "soak: submit error:", e)
	}
	if !ok {
		return fmt.Errorf("soak failed: see the table")
	}
	return nil
}

func fmtCounts(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
