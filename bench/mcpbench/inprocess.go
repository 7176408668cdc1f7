package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpclient"
	"github.com/mcpflow/mcpflow/mcpserver"
	"github.com/mcpflow/mcpflow/store"
)

// floorTargets are the floors. Every run has the bare hop as its own
// process, whose ratios the summary prints beside mcpflow's:
//
//   - floor-proc-TR: a bare net/http handler in front of a direct 2025
//     client (this executable with -serve-floor), the cheapest hop one can
//     build from the same parts as mcpflow's process; floor-proc-TR-default
//     the same on the upstream's newest revision (2026-07-28), the floor
//     for mcpflow as users run it.
//
// -floors adds the in-process ones, which the summary does not read:
//
//   - mcpflow-TR, mcpflow-mcp-TR, mcpflow-mcp26-TR: mcpflow's API (REST,
//     the MCP endpoint with the 2025 and the 2026 client) inside this
//     process, on the upstream as users run it, without an access log; it
//     shares one scheduler with its client and so reads better than a
//     deployment;
//   - mcpflow-mcp-raw-TR: the same MCP endpoint and session called with one
//     plain POST per call as REST is (no client library): mcp-raw / REST is
//     the server side of the MCP path alone;
//   - floor-TR: the bare hop inside this process (floor-proc − floor is
//     what a separate process costs on this machine).
func floorTargets(ctx context.Context, e *env) ([]target, error) {
	var ts []target
	if e.o.floors {
		var err error
		if ts, err = inProcessFloors(ctx, e); err != nil {
			return nil, err
		}
	}
	if e.o.anySelected("floor-proc-") {
		progress("starting the bare hop's process")
		fp, err := startFloorProc(filepath.Join(e.dir, "floor"), e.upstream+"/mcp", e.demoBin)
		if err != nil {
			return nil, err
		}
		e.later(fp.stop)
		ts = append(ts,
			target{name: "floor-proc-http", call: e.post(fp.base+"/http", ""), proc: fp.proc, path: "bare net/http hop, own process → 2025-11-25"},
			target{name: "floor-proc-stdio", call: e.post(fp.base+"/stdio", ""), proc: fp.proc, path: "bare net/http hop, own process → 2025-11-25"},
			target{name: "floor-proc-http-default", call: e.post(fp.base+"/http-default", ""), proc: fp.proc, path: "bare net/http hop, own process → " + upNewest},
			target{name: "floor-proc-stdio-default", call: e.post(fp.base+"/stdio-default", ""), proc: fp.proc, path: "bare net/http hop, own process → " + upNewest})
	}
	return ts, nil
}

// inProcessFloors are the -floors targets: mcpflow's API in this process
// and the bare hop in this process.
func inProcessFloors(ctx context.Context, e *env) ([]target, error) {
	ts, err := inProcessTargets(ctx, e)
	if err != nil {
		return nil, err
	}
	directHTTP, err := e.httpClient(ctx, e.upstream+"/mcp", nil, rev2025)
	if err != nil {
		return nil, err
	}
	directStdio, err := e.stdioClient(ctx, rev2025)
	if err != nil {
		return nil, err
	}
	floorLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	floorSrv := &http.Server{Handler: floorHandler(map[string]*client.Client{"http": directHTTP, "stdio": directStdio}, benchArgs)}
	go func() { _ = floorSrv.Serve(floorLn) }()
	e.later(func() { _ = floorSrv.Close() })
	floor := "http://" + floorLn.Addr().String()
	return append(ts, target{name: "floor-http", call: e.post(floor+"/http", ""), path: "bare net/http hop, in process → 2025-11-25"},
		target{name: "floor-stdio", call: e.post(floor+"/stdio", ""), path: "bare net/http hop, in process → 2025-11-25"}), nil
}

// inProcessTargets runs mcpflow's store, runtime and API (REST and MCP
// endpoint) in this process on a loopback listener.
func inProcessTargets(ctx context.Context, e *env) ([]target, error) {
	extPath := filepath.Join(e.dir, "extensions_config.json")
	if err := os.WriteFile(extPath, []byte(e.ext), 0o600); err != nil {
		return nil, err
	}
	exts, err := config.LoadExtensions(extPath, nil)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, store.BackendSQLite, filepath.Join(e.dir, "mcpflow.db"))
	if err != nil {
		return nil, err
	}
	e.later(func() { _ = db.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := mcpclient.NewRuntime(mcpclient.Options{ExtensionsPath: extPath, Initial: exts,
		WorkspaceRoot: filepath.Join(e.dir, "ws"), Logger: quiet})
	e.later(func() { _ = rt.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{Users: []api.UserToken{{UserID: "bench", Token: benchToken}}})
	if err != nil {
		return nil, err
	}
	mcpSrv := mcpserver.New(mcpserver.Options{Tools: rt, Sessions: db, Events: db, Logger: quiet})
	e.later(mcpSrv.Stop)
	srv := api.New(api.Options{Auth: auth, Threads: db, Tools: rt, MCP: mcpSrv, Logger: quiet})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: srv.Handler()}
	go func() { _ = hs.Serve(ln) }()
	e.later(func() { _ = hs.Close() })
	base := "http://" + ln.Addr().String()

	var ts []target
	for _, up := range []struct{ tr, srv string }{{"http", srvHTTP}, {"stdio", srvStdio}} {
		c25, err := e.viaMCP(ctx, base, rev2025)
		if err != nil {
			return nil, fmt.Errorf("in-process MCP endpoint: %w", err)
		}
		c26, err := e.viaMCP(ctx, base, rev2026)
		if err != nil {
			return nil, fmt.Errorf("in-process MCP endpoint: %w", err)
		}
		ts = append(ts,
			target{name: "mcpflow-" + up.tr, call: e.viaAPI(base, up.srv), path: "REST → mcpflow in process → " + upNewest},
			target{name: "mcpflow-mcp-" + up.tr, call: callTool(c25, up.srv+"_echo"), path: "mcp-go " + rev2025 + " → mcpflow in process → " + upNewest},
			target{name: "mcpflow-mcp-raw-" + up.tr, call: e.viaMCPRaw(base, c25, up.srv+"_echo"), path: "one POST, " + rev2025 + " → mcpflow in process → " + upNewest},
			target{name: "mcpflow-mcp26-" + up.tr, call: callTool(c26, up.srv+"_echo"), path: "mcp-go " + rev2026 + " → mcpflow in process → " + upNewest})
	}
	return ts, nil
}

// viaMCPRaw is the MCP endpoint at base called the way post calls the
// REST API: one POST of a tools/call message on session's MCP session,
// without a client library.
func (e *env) viaMCPRaw(base string, session *client.Client, tool string) func(context.Context) error {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"message":"hello"}}}`)
	return e.postRaw(base+"/mcp/threads/bench-thread", body, []byte(`"isError":false`), func(h http.Header) {
		h.Set("Authorization", "Bearer "+benchToken)
		h.Set("Accept", "application/json, text/event-stream")
		h.Set("Mcp-Session-Id", session.GetSessionId())
		h.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
	})
}
