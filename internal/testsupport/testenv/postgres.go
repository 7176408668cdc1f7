package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Postgres is a PostgreSQL server that one test owns: a fresh cluster in a
// temporary directory, listening on its own 127.0.0.1 port. A test that
// stops and starts its database uses one instead of the shared server of
// TEST_DATABASE_URL, which the tests of other packages use at the same time.
type Postgres struct {
	// DSN is the URL of its postgres database (user postgres, trust auth).
	DSN string

	bin  string              // the directory holding initdb and postgres
	dir  string              // holds the data directory
	port string              // TCP port on 127.0.0.1
	cred *syscall.Credential // the user the server runs as, when the test runs as root
	logs *SyncBuffer         // output of every start
	proc *pgProcess          // the running postmaster; nil while stopped
}

type pgProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// postgresBinDir returns the newest /usr/lib/postgresql/N/bin holding initdb
// and postgres, or else the directory of initdb on PATH when postgres is
// beside it.
func postgresBinDir() (string, bool) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return n
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, true
		}
	}
	return "", false
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// StartPostgres creates a PostgreSQL cluster of its own for t (initdb into a
// temporary directory), starts it on a free 127.0.0.1 port and waits until
// it accepts connections. It skips t with a message (MissingDependency)
// when no PostgreSQL server binaries are installed, or when the test runs
// as root and there is no postgres user to run the server as (initdb
// refuses root). Cleanup
// stops the server and removes the directory.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	bin, ok := postgresBinDir()
	if !ok {
		MissingDependency(t, "no PostgreSQL server binaries (initdb and postgres in /usr/lib/postgresql/*/bin or on PATH) to run a PostgreSQL of the test's own")
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			MissingDependency(t, "running as root, and initdb refuses root, but there is no postgres user to run it as: %v", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not t.TempDir: its parent is private to the test's user, and the
	// server may run as another one.
	dir, err := os.MkdirTemp("", "mcpflow-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatalf("hand %s to the postgres user: %v", dir, err)
		}
	}
	_, port, err := net.SplitHostPort(FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	p := &Postgres{
		DSN: fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", port),
		bin: bin, dir: dir, port: port, cred: cred, logs: &SyncBuffer{},
	}
	initdb := p.command("initdb", "-D", p.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--locale=C", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if p.proc != nil {
			p.stop(15 * time.Second)
		}
	})
	p.Start(t)
	return p
}

func (p *Postgres) dataDir() string { return filepath.Join(p.dir, "data") }

// command runs a PostgreSQL program as the server's user, in p.dir (the
// programs need a working directory they can read).
func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return cmd
}

// Logs returns what the server printed in all its runs so far (warnings
// and worse).
func (p *Postgres) Logs() string { return p.logs.String() }

// Start starts the stopped server on its data directory and port and waits
// until it accepts connections.
func (p *Postgres) Start(t testing.TB) {
	t.Helper()
	if p.proc != nil {
		t.Fatal("testenv: PostgreSQL is running already")
	}
	// TCP on 127.0.0.1 only: no Unix socket (-k "").
	cmd := p.command("postgres", "-D", p.dataDir(), "-p", p.port, "-k", "",
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB", "-c", "log_min_messages=warning")
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	proc := &pgProcess{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(proc.exited)
	}()
	p.proc = proc
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-proc.exited:
			p.proc = nil
			t.Fatalf("postgres exited at start-up: %s", p.Logs())
		default:
		}
		if p.accepts() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres did not accept connections within 60 s: %s", p.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// accepts reports whether the server answers pg_isready.
func (p *Postgres) accepts() bool {
	return p.command("pg_isready", "-q", "-h", "127.0.0.1", "-p", p.port, "-U", "postgres", "-t", "1").Run() == nil
}

// Stop shuts the server down the way `pg_ctl stop` does by default (fast:
// open sessions are terminated, their transactions rolled back, a
// checkpoint written) and waits until it has exited.
func (p *Postgres) Stop(t testing.TB) {
	t.Helper()
	if p.proc == nil {
		t.Fatal("testenv: PostgreSQL is not running")
	}
	if !p.stop(60 * time.Second) {
		t.Fatalf("postgres did not stop within 60 s; killed it: %s", p.Logs())
	}
}

// stop sends SIGINT (fast shutdown) and waits up to grace, then kills. It
// reports whether the server stopped by itself.
func (p *Postgres) stop(grace time.Duration) bool {
	proc := p.proc
	p.proc = nil
	_ = proc.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-proc.exited:
		return true
	case <-time.After(grace):
		_ = proc.cmd.Process.Kill()
		<-proc.exited
		return false
	}
}

// String describes the server for test messages.
func (p *Postgres) String() string {
	return fmt.Sprintf("PostgreSQL of the test (%s) on 127.0.0.1:%s", p.bin, p.port)
}
