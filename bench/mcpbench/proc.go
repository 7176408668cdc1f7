package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
)

// proc is one child process of the benchmark (mcpflow serve, the peer
// proxy); see benchproc.Proc.
type proc = benchproc.Proc

// procStopGrace is how long a child has to stop before its process group
// (the stdio servers it spawned) is killed.
const procStopGrace = 10 * time.Second

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ports, err := benchproc.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
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
	return fmt.Sprintf("nproc %s, %s RAM, load average %s", benchproc.NProc(), benchproc.MemTotal(), benchproc.LoadAvg())
}

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100

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
