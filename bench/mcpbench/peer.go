package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/bench/internal/benchproc"
)

// peer is the peer gateway TBXark/mcp-proxy (github.com/TBXark/mcp-proxy,
// built from its repository; docs/perf-baselines §2 measured commit
// 4f78891, mcp-go v0.44.0) in its own process, in front of the same demo
// server: /demo/ over streamable HTTP, /demostdio/ over a stdio child it
// spawns. Logging is off and there are no auth tokens, as in the
// baselines' configuration. Its server side is stateless streamable HTTP
// and it speaks only protocol 2025-11-25 or older, so the direct clients
// pinned to 2025-11-25 are its fair baseline.
type peer struct {
	proc *proc
	base string // http://127.0.0.1:PORT
}

// startPeer writes the proxy's config.json under dir, starts bin and
// returns once it reports every upstream connected.
func startPeer(bin, dir, demoURL, demoBin string) (*peer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	off := map[string]any{"logEnabled": false}
	cfg := map[string]any{
		"mcpProxy": map[string]any{"baseURL": "http://" + addr, "addr": addr, "name": "MCP Proxy", "version": "1.0.0",
			"type": "streamable-http", "options": map[string]any{"panicIfInvalid": true, "logEnabled": false}},
		"mcpServers": map[string]any{
			"demo":      map[string]any{"transportType": "streamable-http", "url": demoURL, "options": off},
			"demostdio": map[string]any{"command": demoBin, "args": []string{"--transport", "stdio"}, "options": off},
		},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return nil, err
	}
	bin, err = filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	var once sync.Once
	p, err := benchproc.Start("peer proxy", filepath.Join(dir, "peer.log"), func(line string) {
		if strings.Contains(line, "All clients initialized") {
			once.Do(func() { close(ready) })
		}
	}, childEnv(), bin, "-config", cfgPath, "-expand-env=false")
	if err != nil {
		return nil, err
	}
	select {
	case <-ready:
	case <-p.Done():
		return nil, fmt.Errorf("peer proxy exited: %v\n%s", p.Err, p.Tail(20))
	case <-time.After(60 * time.Second):
		p.Stop(procStopGrace)
		return nil, fmt.Errorf("peer proxy not ready after 60 s\n%s", p.Tail(20))
	}
	return &peer{proc: p, base: "http://" + addr}, nil
}

// url is where the proxy serves upstream name.
func (p *peer) url(name string) string { return p.base + "/" + name + "/" }

// initialize retries init for up to 10 s: the proxy logs its upstreams
// connected just before its HTTP listener may be serving them.
func (p *peer) initialize(init func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := init()
		if err == nil || time.Now().After(deadline) || p.proc.Exited() {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *peer) stop() {
	if p != nil {
		p.proc.Stop(procStopGrace)
	}
}
