package main

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

// proc is one child process of the benchmark. Its stdout and stderr go to
// a log file; it runs in its own process group (so a terminal Ctrl-C reaches
// only the benchmark, which stops the children in order) and is killed by
// the kernel if the benchmark dies.
type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProc starts bin with args; every output line is also passed to
// watch when it is not nil.
func startProc(name, logPath string, watch func(line string), bin string, args ...string) (*proc, error) {
	return startProcEnv(name, logPath, watch, nil, bin, args...)
}

// startProcEnv is startProc with env added to the environment.
func startProcEnv(name, logPath string, watch func(line string), env []string, bin string, args ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
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

// stop interrupts the process and waits; after grace it kills its whole
// process group.
func (p *proc) stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(grace):
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

// memStat is a process's resident memory from /proc/<pid>/status.
type memStat struct {
	RSS, HWM int64 // bytes
}

func readMem(pid int) (memStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStat{}, err
	}
	var m memStat
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

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100

// readCPU returns the user+system CPU time a process has used.
func readCPU(pid int) time.Duration {
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

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
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

// machine describes the host for the table header.
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
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = fmt.Sprintf(", load average at start %s %s %s", f[0], f[1], f[2])
		}
	}
	busy := ""
	if a, ok := hostCPU(); ok {
		time.Sleep(time.Second)
		if b, ok := hostCPU(); ok && b[0] > a[0] {
			busy = fmt.Sprintf(", host CPU %.0f%% busy in the second before the start", 100*float64((b[0]-a[0])-(b[1]-a[1]))/float64(b[0]-a[0]))
		}
	}
	return fmt.Sprintf("nproc %s, %s RAM%s%s", cpus, mem, load, busy)
}

// hostCPU returns the host's total and idle (idle + iowait) CPU ticks
// from /proc/stat.
func hostCPU() ([2]int64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return [2]int64{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return [2]int64{}, false
	}
	var t [2]int64
	for i, x := range f[1:9] { // user nice system idle iowait irq softirq steal (guest time is in user)
		v, _ := strconv.ParseInt(x, 10, 64)
		t[0] += v
		if i == 3 || i == 4 {
			t[1] += v
		}
	}
	return t, true
}
