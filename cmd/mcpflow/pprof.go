package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// envPprofAddr names the variable that makes mcpflow serve Go's profiler
// (net/http/pprof under /debug/pprof/) on a loopback host:port, for
// profiling a running process (bench/mcpbench -profile sets it). It is off by
// default and refuses non-loopback addresses: profiles expose internals.
const envPprofAddr = "MCPFLOW_PPROF_ADDR"

// startPprof serves net/http/pprof when MCPFLOW_PPROF_ADDR is set. The
// returned stop closes the listener (nil when nothing was started).
func startPprof(env func(string) (string, bool), log *slog.Logger) (stop func(), err error) {
	addr, ok := env(envPprofAddr)
	if !ok || addr == "" {
		return nil, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: want host:port: %w", envPprofAddr, addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%s=%q: the profiler listens on loopback addresses only", envPprofAddr, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envPprofAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("profiler stopped", "err", err)
		}
	}()
	log.Info("profiler listening", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() { _ = srv.Close() }, nil
}
