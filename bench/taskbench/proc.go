package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
)

// proc is one child process of the benchmark; see benchproc.Proc.
type proc = benchproc.Proc

// startProc starts bin with args and the benchmark's environment plus env.
func startProc(name, logPath string, watch func(line string), env []string, bin string, args ...string) (*proc, error) {
	var full []string
	if env != nil {
		full = append(os.Environ(), env...)
	}
	return benchproc.Start(name, logPath, watch, full, bin, args...)
}

// machine describes the host for the table header.
func machine() string {
	load := ""
	if l := benchproc.LoadAvg(); l != "?" {
		load = ", load average at start " + l
	}
	busy := ""
	if a, ok := hostCPU(); ok {
		time.Sleep(time.Second)
		if b, ok := hostCPU(); ok && b[0] > a[0] {
			busy = fmt.Sprintf(", host CPU %.0f%% busy in the second before the start", 100*float64((b[0]-a[0])-(b[1]-a[1]))/float64(b[0]-a[0]))
		}
	}
	return fmt.Sprintf("nproc %s, %s RAM%s%s", benchproc.NProc(), benchproc.MemTotal(), load, busy)
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
