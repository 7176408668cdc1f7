package testenv

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kill stops the dev server at once with SIGKILL, as a crash would (no
// shutdown of any kind), and waits until it is gone. What it had written to
// its database file stays; StartTemporal with the same options starts it
// again on that file. Linux only (it finds the process in /proc).
func (t *Temporal) Kill() error {
	pid, err := t.pid()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill Temporal dev server pid %d: %w", pid, err)
	}
	// Stop reaps it: its interrupt reaches the dead process, and Wait
	// returns the SIGKILL status, which is what happened.
	done := make(chan struct{})
	go func() {
		_ = t.Server.Stop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("the Temporal dev server pid %d did not go away after SIGKILL", pid)
	}
}

// pid finds the dev server: the child of this process running
// `server start-dev` with the server's --port.
func (t *Temporal) pid() (int, error) {
	_, port, err := net.SplitHostPort(t.HostPort)
	if err != nil {
		return 0, err
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range stats {
		b, err := os.ReadFile(stat)
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		dir := filepath.Dir(stat)
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if j := slices.Index(args, "--port"); slices.Contains(args, "start-dev") && j >= 0 && j+1 < len(args) && args[j+1] == port {
			return strconv.Atoi(filepath.Base(dir))
		}
	}
	return 0, fmt.Errorf("no Temporal dev server on port %s among this process's children", port)
}
