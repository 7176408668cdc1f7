package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one child process of the benchmark (mcpflow serve, the peer
// proxy). Its stdout and stderr go to a log file; it runs in its own
// process group, which also holds the stdio servers it spawns, and the
// kernel kills it if the benchmark dies.
type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProc starts bin with args and env as its whole environment (nil:
// the benchmark's). Every output line is also passed to watch when it is
// not nil.
func startProc(name, logPath string, watch func(line string), env []string, bin string, args ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out interface{ Write([]byte) (int, error) } = f
	if watch != nil {
		out = &lineWriter{w: f, fn: watch}
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &proc{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop interrupts the process and waits; after 10 s it kills its whole
// process group (the stdio servers it spawned with it).
func (p *proc) stop() {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lineWriter passes complete lines to fn and everything to w.
type lineWriter struct {
	mu  sync.Mutex
	w   interface{ Write([]byte) (int, error) }
	fn  func(string)
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.fn(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	return l.w.Write(p)
}

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100

// readCPU returns the user+system CPU time process pid has used (its
// own, not its live children's), from /proc/<pid>/stat; 10 ms ticks.
func readCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * time.Second / clockTicks
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// childEnv is the benchmark's environment without MCPFLOW_* and OTEL_*
// variables, so that a developer's shell cannot change the configuration
// under measurement, plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MCPFLOW_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// machine describes the host for the report: CPUs, memory and the load
// average now.
func machine() string {
	cpus := "?"
	if out, err := exec.Command("nproc").Output(); err == nil {
		cpus = strings.TrimSpace(string(out))
	}
	mem := "?"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	return fmt.Sprintf("nproc %s, %s RAM, load average %s", cpus, mem, loadAvg())
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// cpuUse is the busy CPU time of the whole machine and of this
// benchmark's process tree (itself, the servers and proxies it started
// and their stdio children), from /proc; 10 ms ticks.
type cpuUse struct{ machine, ours time.Duration }

func readCPUUse() cpuUse {
	var u cpuUse
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		// cpu user nice system idle iowait irq softirq steal ...
		for i, v := range f {
			if i == 0 || i == 4 || i == 5 || i > 8 {
				continue
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			u.machine += time.Duration(n) * time.Second / clockTicks
		}
	}
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	cpu := map[int]time.Duration{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
		var t int64
		for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			n, _ := strconv.ParseInt(f[i], 10, 64)
			t += n
		}
		cpu[pid] = time.Duration(t) * time.Second / clockTicks
	}
	self := os.Getpid()
	for pid, t := range cpu {
		for p := pid; p > 1; p = parent[p] {
			if p == self {
				u.ours += t
				break
			}
		}
	}
	return u
}

// othersShare is the share of the machine's CPUs that processes outside
// this benchmark kept busy between a and b (0.5 on 2 CPUs: one CPU).
func othersShare(a, b cpuUse, wall time.Duration) float64 {
	n := runtime.NumCPU()
	other := (b.machine - a.machine) - (b.ours - a.ours)
	return max(0, float64(other)/float64(wall)/float64(n))
}
