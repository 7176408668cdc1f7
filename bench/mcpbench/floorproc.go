package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
)

// floorHandler is the floor of any proxy built from net/http: a bare
// handler that reads the body and calls the echo tool with one of the
// direct clients (by path: /http, /stdio), answering the content as JSON.
// It does nothing else (no auth, log, metrics or routing).
func floorHandler(clients map[string]*client.Client, args map[string]any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c := clients[strings.TrimPrefix(r.URL.Path, "/")]
		if c == nil {
			http.NotFound(w, r)
			return
		}
		res, err := c.CallTool(r.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: args}})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"content": res.Content, "is_error": res.IsError})
	})
}

// floorReady is the line the floor process prints once it serves.
const floorReady = "mcpbench floor: serving"

// serveFloor is the floor as its own process (-serve-floor): the same
// handler in front of its own direct clients (HTTP to upstream, a stdio
// child of demoBin, each on 2025-11-25 and on 2026-07-28), on addr, until SIGTERM or SIGINT. floor-proc − floor
// is what running a hop as a separate process costs on this machine, so
// floor-proc is the honest floor for mcpflow-proc.
func serveFloor(addr, upstream, demoBin string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	clients := map[string]*client.Client{}
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	// /http and /stdio speak 2025-11-25 as the peer does, /http-default and
	// /stdio-default 2026-07-28 (the demo server's newest): the floor of
	// mcpflow as users run it.
	for _, v := range []struct{ suffix, rev string }{{"", rev2025}, {"-default", rev2026}} {
		tr, err := transport.NewStreamableHTTP(upstream, transport.WithHTTPBasicClient(hc))
		if err != nil {
			return err
		}
		var opts []client.ClientOption
		if v.rev == rev2025 {
			opts = append(opts, client.WithProtocolVersion(rev2025))
		}
		httpc := client.NewClient(tr, opts...)
		if err := initializeAs(ctx, httpc, v.rev); err != nil {
			return fmt.Errorf("floor http client (MCP %s): %w", v.rev, err)
		}
		clients["http"+v.suffix] = httpc
		stdioc, err := client.NewStdioMCPClientWithOptions(demoBin, nil, []string{"--transport", "stdio"})
		if err != nil {
			return err
		}
		clients["stdio"+v.suffix] = stdioc
		if err := initializeAs(ctx, stdioc, v.rev); err != nil {
			return fmt.Errorf("floor stdio client (MCP %s): %w", v.rev, err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: floorHandler(clients, benchArgs)}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println(floorReady, ln.Addr())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// floorProc is the floor process, started from this benchmark's own
// executable.
type floorProc struct {
	proc *proc
	base string
}

func startFloorProc(dir, upstream, demoBin string) (*floorProc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ready := make(chan struct{})
	var once sync.Once
	p, err := benchproc.Start("floor process", filepath.Join(dir, "floor.log"), func(line string) {
		if strings.HasPrefix(line, floorReady) {
			once.Do(func() { close(ready) })
		}
	}, childEnv(), exe, "-serve-floor", addr, "-floor-upstream", upstream, "-demo", demoBin)
	if err != nil {
		return nil, err
	}
	select {
	case <-ready:
	case <-p.Done():
		return nil, fmt.Errorf("floor process exited: %v\n%s", p.Err, p.Tail(20))
	case <-time.After(30 * time.Second):
		p.Stop(procStopGrace)
		return nil, fmt.Errorf("floor process not ready after 30 s\n%s", p.Tail(20))
	}
	return &floorProc{proc: p, base: "http://" + addr}, nil
}

func (f *floorProc) stop() { f.proc.Stop(procStopGrace) }
