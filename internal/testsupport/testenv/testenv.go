// Package testenv is mcpflow's test environment: the repository root, a
// fresh SQLite file per test, PostgreSQL from TEST_DATABASE_URL, the Temporal
// dev server from the locally built CLI (bin/temporal, never a download), and
// binaries of this module built once per test process.
//
// Only tests import it.
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver of PostgresSchema
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"log/slog"
)

// RepoRoot returns the directory holding go.mod.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("testenv: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// TemporalCLIPath returns the Temporal CLI to run: $TEMPORAL_CLI, else
// bin/temporal in the repository. It never downloads anything.
func TemporalCLIPath() (string, error) {
	p := os.Getenv("TEMPORAL_CLI")
	if p == "" {
		p = filepath.Join(RepoRoot(), "bin", "temporal")
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("Temporal CLI not found at %s: run `make tools` (it builds bin/temporal with go install; nothing is downloaded)", p)
	}
	return p, nil
}

// SearchAttributes are the custom search attributes mcpflow needs, as the
// dev server expects them.
func SearchAttributes(names ...string) temporal.SearchAttributes {
	var ups []temporal.SearchAttributeUpdate
	for _, n := range names {
		ups = append(ups, temporal.NewSearchAttributeKeyKeyword(n).ValueSet(""))
	}
	return temporal.NewSearchAttributes(ups...)
}

// Temporal is a running dev server.
type Temporal struct {
	Server    *testsuite.DevServer
	HostPort  string
	Namespace string
	DBFile    string
	logs      *SyncBuffer
}

// Client returns the dev server's client.
func (t *Temporal) Client() client.Client { return t.Server.Client() }

// Logs returns what the dev server printed so far.
func (t *Temporal) Logs() string { return t.logs.String() }

// TemporalOptions tune StartTemporal.
type TemporalOptions struct {
	DBFile           string   // persist to this SQLite file (empty: in memory)
	HostPort         string   // bind here (empty: a free port)
	SearchAttributes []string // Keyword attributes to register
}

// StartTemporal starts a Temporal dev server from the local CLI. Stop it
// with Stop; tests use StartTemporalT.
//
// The dev server picks its internal services' ports itself (a free port,
// released, then bound again while the server is built); under a loaded
// test run another process's outgoing connection can take one of them in
// between, and the server exits with "address already in use". Such a
// start is tried again, up to three times; any other failure is returned
// at once.
func StartTemporal(ctx context.Context, o TemporalOptions) (*Temporal, error) {
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var srv *Temporal
		if srv, err = startTemporalOnce(ctx, o); err == nil || !strings.Contains(err.Error(), portTaken) {
			return srv, err
		}
		time.Sleep(time.Second)
	}
	return nil, err
}

const portTaken = "address already in use"

func startTemporalOnce(ctx context.Context, o TemporalOptions) (*Temporal, error) {
	cli, err := TemporalCLIPath()
	if err != nil {
		return nil, err
	}
	logs := &SyncBuffer{}
	copts := &client.Options{Namespace: "default", HostPort: o.HostPort,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	opts := testsuite.DevServerOptions{
		ExistingPath:     cli,
		ClientOptions:    copts,
		DBFilename:       o.DBFile,
		LogLevel:         "error",
		SearchAttributes: SearchAttributes(o.SearchAttributes...),
		Stdout:           logs,
		Stderr:           logs,
		ExtraArgs: []string{
			"--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
			"--dynamic-config-value", "system.enableActivityEagerExecution=true",
		},
	}
	if o.DBFile == "" {
		opts.ExtraArgs = opts.ExtraArgs[4:]
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// StartDevServer dials until ctx ends even when the server has already
	// exited; a lost port race ends the wait at once.
	go func() {
		for ctx.Err() == nil && !strings.Contains(logs.String(), portTaken) {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
	}()
	srv, err := testsuite.StartDevServer(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start Temporal dev server: %w (output without stack traces: %s)", err, withoutStacks(logs.String()))
	}
	return &Temporal{Server: srv, HostPort: srv.FrontendHostPort(), Namespace: "default", DBFile: o.DBFile, logs: logs}, nil
}

// withoutStacks drops the stack traces from the dev server's output (a
// frame is a function line followed by its tab-indented file line), so a
// failure's cause is not cut off in a test report.
func withoutStacks(out string) string {
	lines := strings.Split(out, "\n")
	var b strings.Builder
	for i, line := range lines {
		frame := strings.HasPrefix(line, "\t") || i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t")
		if line != "" && !frame {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Stop stops the dev server and waits for it to exit.
func (t *Temporal) Stop() error { return t.Server.Stop() }

// StartTemporalT starts a dev server for one test and stops it at cleanup.
func StartTemporalT(t testing.TB, o TemporalOptions) *Temporal {
	t.Helper()
	tmp, err := StartTemporal(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tmp.Stop() })
	return tmp
}

// SQLiteFile returns the path of a fresh SQLite database file for t.
func SQLiteFile(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "mcpflow.db")
}

// PostgresURL returns TEST_DATABASE_URL; when it is unset it skips t
// (fails it under MCPFLOW_TEST_REQUIRE_ALL=1: MissingDependency).
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TEST_DATABASE_URL")
	if u == "" {
		MissingDependency(t, "TEST_DATABASE_URL is unset: the PostgreSQL tests need a PostgreSQL server's URL in it (.ci/run sets postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return u
}

// PostgresSchema returns a DSN of TEST_DATABASE_URL (PostgresURL: skipped
// when it is unset) whose search_path is a schema made for t, named
// prefix + 16 hex digits, and dropped after it: a database of t's own
// (other packages' tests use the shared one at the same time).
func PostgresSchema(t testing.TB, prefix string) string {
	t.Helper()
	base := PostgresURL(t)
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := prefix + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("open TEST_DATABASE_URL: %v", err)
	}
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		admin.Close()
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		_ = admin.Close()
	})
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		sep := "?"
		if strings.Contains(base, "?") {
			sep = "&"
		}
		return base + sep + "search_path=" + schema
	}
	return base + " search_path=" + schema
}

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{}
	buildDir   string
)

// Binary builds the main package at pkg (relative to the repository root,
// for example "./internal/testsupport/demomcp/cmd/demo-mcp") once per test process and returns its path.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	return build(t, pkg, "")
}

// VersionedBinary is Binary with main.buildVersion stamped as make build
// does (go build -ldflags "-X main.buildVersion=version"): a distinct
// build of ./cmd/mcpflow per version, for worker-versioning tests.
func VersionedBinary(t testing.TB, pkg, version string) string {
	t.Helper()
	return build(t, pkg, version)
}

func build(t testing.TB, pkg, version string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	key := pkg + "@" + version
	if p, ok := buildCache[key]; ok {
		return p
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "mcpflow-testbin-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, filepath.Base(pkg))
	args := []string{"build", "-o", out}
	if version != "" {
		out += "-" + version
		args = []string{"build", "-ldflags", "-X main.buildVersion=" + version, "-o", out}
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = RepoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	buildCache[key] = out
	return out
}

// CleanupBinaries removes what Binary built; call it from TestMain.
func CleanupBinaries() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}

// FreeAddr returns a free 127.0.0.1:port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// SyncBuffer is a bytes.Buffer safe for one writer goroutine and concurrent
// readers: loggers and child-process output in tests write to it while the
// test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
