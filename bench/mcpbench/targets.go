package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The two revisions the clients speak: the pinned 2025 client (the peer's
// revision) and mcp-go v1.2.1's default.
const (
	rev2025 = mcp.ProtocolVersion20251125
	rev2026 = mcp.LATEST_PROTOCOL_VERSION // 2026-07-28
)

// initialize starts c and negotiates 2025-11-25 (the initialize handshake).
func initialize(ctx context.Context, c *client.Client) error { return initializeAs(ctx, c, rev2025) }

// initializeAs starts c and initializes it asking for rev (2026-07-28 is
// what mcp-go does with its defaults: the server/discover probe, no
// session), and fails unless the server agreed to rev: a target's name
// says which revision it speaks, and this checks it.
func initializeAs(ctx context.Context, c *client.Client, rev string) error {
	if err := c.Start(ctx); err != nil {
		return err
	}
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: rev,
		ClientInfo:      mcp.Implementation{Name: "mcpbench", Version: "1"},
	}})
	if err != nil {
		return err
	}
	if res.ProtocolVersion != rev {
		return fmt.Errorf("negotiated MCP %s, want %s", res.ProtocolVersion, rev)
	}
	return nil
}

// How the paths' descriptions name mcpflow's upstream revision.
const (
	upNewest = "newest offered (2026-07-28)"
	upPinned = "pinned 2025-11-25"
)

// httpClient is an mcp-go client on url with headers speaking rev, closed
// at the end of the run. One client (one MCP session under 2025-11-25) per
// target.
func (e *env) httpClient(ctx context.Context, url string, headers map[string]string, rev string) (*client.Client, error) {
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(e.hc), transport.WithHTTPHeaders(headers))
	if err != nil {
		return nil, err
	}
	var opts []client.ClientOption
	if rev == rev2025 {
		opts = append(opts, client.WithProtocolVersion(rev2025))
	}
	c := client.NewClient(tr, opts...)
	if err := initializeAs(ctx, c, rev); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("%s (MCP %s): %w", url, rev, err)
	}
	e.later(func() { _ = c.Close() })
	return c, nil
}

// stdioClient is an mcp-go client on its own demo-mcp stdio child speaking
// rev, closed at the end of the run.
func (e *env) stdioClient(ctx context.Context, rev string) (*client.Client, error) {
	c, err := client.NewStdioMCPClientWithOptions(e.demoBin, nil, []string{"--transport", "stdio"})
	if err != nil {
		return nil, err
	}
	if err := initializeAs(ctx, c, rev); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("demo-mcp stdio child (MCP %s): %w", rev, err)
	}
	e.later(func() { _ = c.Close() })
	return c, nil
}

// callTool is one tools/call of tool on c with benchArgs.
func callTool(c *client.Client, tool string) func(context.Context) error {
	return func(ctx context.Context) error {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: benchArgs}})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error")
		}
		return err
	}
}

// postRaw is an agent's call without a client library: one POST of body
// with headers, answered 200 with ok in the body.
func (e *env) postRaw(url string, body, ok []byte, headers func(http.Header)) func(context.Context) error {
	return func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		headers(req.Header)
		resp, err := e.hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !bytes.Contains(b, ok) {
			return fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		return nil
	}
}

// post is a REST call: the call body, answered with is_error false.
func (e *env) post(url, token string) func(context.Context) error {
	return e.postRaw(url, []byte(`{"arguments":{"message":"hello"}}`), []byte(`"is_error":false`), func(h http.Header) {
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
	})
}

// viaAPI is a REST call of server's echo tool on mcpflow at base.
func (e *env) viaAPI(base, server string) func(context.Context) error {
	return e.post(base+"/api/threads/bench-thread/tools/"+server+"_echo/call", benchToken)
}

// viaMCP is an mcp-go client speaking rev on mcpflow's MCP endpoint at
// base, with the user's token, on the REST calls' thread.
func (e *env) viaMCP(ctx context.Context, base, rev string) (*client.Client, error) {
	return e.httpClient(ctx, base+"/mcp/threads/bench-thread", map[string]string{"Authorization": "Bearer " + benchToken}, rev)
}

// directTargets are mcp-go clients straight on the demo server: pinned to
// 2025-11-25 (direct-*) and with mcp-go's defaults, 2026-07-28
// (direct-*-default).
func directTargets(ctx context.Context, e *env) ([]target, error) {
	var ts []target
	for _, d := range []struct {
		suffix, rev string
	}{{"", rev2025}, {"-default", rev2026}} {
		h, err := e.httpClient(ctx, e.upstream+"/mcp", nil, d.rev)
		if err != nil {
			return nil, fmt.Errorf("direct http: %w", err)
		}
		s, err := e.stdioClient(ctx, d.rev)
		if err != nil {
			return nil, fmt.Errorf("direct stdio: %w", err)
		}
		ts = append(ts, target{name: "direct-http" + d.suffix, call: callTool(h, "echo"), path: "mcp-go " + d.rev + " → demo"},
			target{name: "direct-stdio" + d.suffix, call: callTool(s, "echo"), path: "mcp-go " + d.rev + " → demo child"})
	}
	return ts, nil
}

// procTargets are mcpflow as its own process (see deployed): its MCP
// endpoint called by the pinned 2025 client on the upstream pinned to
// 2025-11-25 (mcpflow-proc-mcp-TR-25) and as users run it
// (mcpflow-proc-mcp-TR), by the 2026 client (mcpflow-proc-mcp26-TR), and
// its REST API on both upstreams (mcpflow-proc-TR, mcpflow-proc-TR-25).
func procTargets(ctx context.Context, e *env) ([]target, error) {
	if e.o.mcpflow == "" || !e.o.anySelected("mcpflow-proc-") && !e.o.anySelected("mcpflow-gov-") {
		return nil, nil
	}
	progress("starting %s serve", e.o.mcpflow)
	dep, err := startDeployed(ctx, e.o.mcpflow, filepath.Join(e.dir, "deployed"), e.ext, e.o.profileDir != "", false)
	if err != nil {
		return nil, err
	}
	e.later(dep.stop)
	var ts []target
	if e.o.anySelected("mcpflow-gov-") {
		// The same process with governance on: 20 policy rules evaluated
		// for every call and the audit log (withGovernance).
		progress("starting %s serve with 20 policy rules and the audit log", e.o.mcpflow)
		gov, err := startDeployed(ctx, e.o.mcpflow, filepath.Join(e.dir, "governed"), e.ext, e.o.profileDir != "", true)
		if err != nil {
			return nil, err
		}
		e.later(gov.stop)
		c, err := e.viaMCP(ctx, gov.base, rev2025)
		if err != nil {
			return nil, fmt.Errorf("the governed mcpflow's MCP endpoint: %w", err)
		}
		ts = append(ts,
			target{name: "mcpflow-gov-mcp-http-25", path: "mcp-go " + rev2025 + " → mcpflow MCP (20 rules, audit) → " + upPinned,
				call: callTool(c, srvHTTP25+"_echo"), proc: gov.proc, pprof: gov.pprof},
			target{name: "mcpflow-gov-http-25", path: "REST → mcpflow (20 rules, audit) → " + upPinned,
				call: e.viaAPI(gov.base, srvHTTP25), proc: gov.proc, pprof: gov.pprof})
	}
	add := func(name, path string, call func(context.Context) error) {
		ts = append(ts, target{name: name, path: path, call: call, proc: dep.proc, pprof: dep.pprof})
	}
	for _, up := range []struct{ tr, srv, srv25 string }{{"http", srvHTTP, srvHTTP25}, {"stdio", srvStdio, srvStdio25}} {
		for _, m := range []struct {
			name, srv, rev, up string
		}{
			{"mcpflow-proc-mcp-" + up.tr + "-25", up.srv25, rev2025, upPinned},
			{"mcpflow-proc-mcp-" + up.tr, up.srv, rev2025, upNewest},
			{"mcpflow-proc-mcp26-" + up.tr, up.srv, rev2026, upNewest},
		} {
			c, err := e.viaMCP(ctx, dep.base, m.rev)
			if err != nil {
				return nil, fmt.Errorf("mcpflow's MCP endpoint: %w", err)
			}
			add(m.name, "mcp-go "+m.rev+" → mcpflow MCP → "+m.up, callTool(c, m.srv+"_echo"))
		}
		add("mcpflow-proc-"+up.tr, "REST → mcpflow → "+upNewest, e.viaAPI(dep.base, up.srv))
		add("mcpflow-proc-"+up.tr+"-25", "REST → mcpflow → "+upPinned, e.viaAPI(dep.base, up.srv25))
	}
	return ts, nil
}

// peerTargets are the peer proxy's (see peer), called by the pinned 2025
// client. Without a peer binary the run goes on and e.peerNote says why
// the summary's peer rows are not measured.
func peerTargets(ctx context.Context, e *env) ([]target, error) {
	if !e.o.anySelected("peer-") {
		e.peerNote = "-only left the peer out"
		return nil, nil
	}
	if e.o.peer == "" {
		e.peerNote = "no peer binary given (-peer)"
		return nil, nil
	}
	if _, err := os.Stat(e.o.peer); err != nil {
		e.peerNote = fmt.Sprintf("no peer binary at %s (it could not be built)", e.o.peer)
		progress("%s: the peer's rows will not be measured", e.peerNote)
		return nil, nil
	}
	progress("starting the peer proxy %s", e.o.peer)
	pr, err := startPeer(e.o.peer, filepath.Join(e.dir, "peer"), e.upstream+"/mcp", e.demoBin)
	if err != nil {
		e.peerNote = "the peer did not start: " + err.Error()
		progress("%s: the peer's rows will not be measured", e.peerNote)
		return nil, nil
	}
	e.later(pr.stop)
	var ts []target
	for _, up := range []struct{ name, path string }{{"peer-http", srvHTTP}, {"peer-stdio", srvStdio}} {
		var c *client.Client
		err := pr.initialize(func() error {
			var err error
			c, err = e.httpClient(ctx, pr.url(up.path), nil, rev2025)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("peer proxy, %s: %w\n%s", up.path, err, pr.proc.Tail(20))
		}
		ts = append(ts, target{name: up.name, call: callTool(c, "echo"), proc: pr.proc,
			path: "mcp-go " + rev2025 + " → peer → " + rev2025 + " (the only revision it speaks)"})
	}
	return ts, nil
}
