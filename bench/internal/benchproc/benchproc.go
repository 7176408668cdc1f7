// Package benchproc runs and measures the child processes of the
// benchmarks (bench/mcpbench, bench/taskbench): each child logs to a file, runs
// in its own process group and dies with the benchmark; its CPU time and
// memory are read from /proc. Linux only, like the benchmarks.
package benchproc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one child process. Its stdout and stderr go to the file Log; it
// runs in its own process group (a terminal Ctrl-C reaches only the
// benchmark, which stops its children in order; stdio servers it spawns
// share the group) and the kernel kills it if the benchmark dies.
type Proc struct {
	Name string
	Log  string
	// Err is Wait's answer, once Done is closed.
	Err  error
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts bin with args and env as its whole environment (nil: the
// benchmark's). Every output line is also passed to watch when it is not
// nil.
func Start(name, logPath string, watch func(line string), env []string, bin string, args ...string) (*Proc, error) {
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
	p := &Proc{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.Err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop interrupts the process and waits; after grace it kills its whole
// process group.
func (p *Proc) Stop(grace time.Duration) {
	if p == nil || p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.done
	}
}

// Tail returns the last n lines of the process's log.
func (p *Proc) Tail(n int) string {
	b, _ := os.ReadFile(p.Log)
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

// ReadCPU returns the user+system CPU time process pid (0: this process)
// has used, its own and not its live children's, from /proc/<pid>/stat;
// 10 ms ticks.
func ReadCPU(pid int) time.Duration {
	path := "/proc/self/stat"
	if pid > 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	b, err := os.ReadFile(path)
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

// ReadCPUPrecise returns the CPU time process pid's live threads have
// run, in nanoseconds (the first field of /proc/<pid>/task/*/schedstat:
// the scheduler's sum_exec_runtime), where ReadCPU counts 10 ms ticks. A
// thread that exited no longer counts, so it is for differences over a
// short interval of a process whose threads live on (a Go program's do),
// such as a proxy's CPU per call. It falls back to ReadCPU when the kernel
// has no schedstat.
func ReadCPUPrecise(pid int) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return ReadCPU(pid)
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			if os.IsNotExist(err) {
				continue // the thread exited meanwhile
			}
			return ReadCPU(pid)
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return ReadCPU(pid)
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		sum += time.Duration(ns)
	}
	return sum
}

// MemStat is a process's resident memory from /proc/<pid>/status.
type MemStat struct {
	RSS, HWM int64 // bytes
}

// ReadMem reads process pid's resident memory.
func ReadMem(pid int) (MemStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return MemStat{}, err
	}
	var m MemStat
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.RSS = kb << 10
		case "VmHWM:":
			m.HWM = kb << 10
		}
	}
	return m, nil
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// NProc is the number of CPUs nproc reports ("?" when it cannot run).
func NProc() string {
	if out, err := exec.Command("nproc").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return "?"
}

// MemTotal is the host's memory, e.g. "23.5 GiB" ("?" when unknown).
func MemTotal() string {
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	return "?"
}

// LoadAvg is the host's 1, 5 and 15 minute load averages ("?" when
// unknown).
func LoadAvg() string {
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
