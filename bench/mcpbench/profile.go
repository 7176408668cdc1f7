package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profileTarget loads t with callers goroutines while it takes a CPU
// profile of t's separate process over seconds (net/http/pprof's
// /debug/pprof/profile on t.pprof) and writes it to dir/<target>.pprof.
// It runs after the measured rounds, so that no measured cell runs under
// the profiler.
func profileTarget(ctx context.Context, t target, callers, seconds int, dir string) (string, error) {
	if err := drive(ctx, t.call, callers, 200, nil); err != nil {
		return "", fmt.Errorf("%s warm-up: %w", t.name, err)
	}
	stop := make(chan struct{})
	type result struct {
		calls int64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		n, err := driveUntil(ctx, t.call, callers, stop)
		done <- result{n, err}
	}()
	start := time.Now()
	prof, err := fetchProfile(ctx, t.pprof, seconds)
	wall := time.Since(start)
	close(stop)
	r := <-done
	if err != nil {
		return "", err
	}
	if r.err != nil {
		return "", fmt.Errorf("%s under the profiler: %w", t.name, r.err)
	}
	path := filepath.Join(dir, t.name+".pprof")
	if err := os.WriteFile(path, prof, 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: %d calls in %.1f s (%.0f calls/s) with %d callers under the profiler", path, r.calls,
		wall.Seconds(), float64(r.calls)/wall.Seconds(), callers), nil
}

func fetchProfile(ctx context.Context, addr string, seconds int) ([]byte, error) {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds+30)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("CPU profile from %s (does this mcpflow serve net/http/pprof on $%s?): %w", addr, EnvPprofAddr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("CPU profile from %s: status %d: %s", url, resp.StatusCode, b)
	}
	return b, nil
}
