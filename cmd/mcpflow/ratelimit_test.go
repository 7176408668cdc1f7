package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// TestRateLimitReplicas: two `mcpflow serve` on one PostgreSQL share a
// limit's bucket. 32 callers through a round-robin proxy make 320 calls
// against a burst of 40 (and a rate too slow to matter): the replicas
// admit at most 40 between them, never more, and at least 40 less the
// chunks that may lapse unspent (2 replicas × 4); the rest are 429 with
// Retry-After on REST and a JSON-RPC error with the delay on MCP.
func TestRateLimitReplicas(t *testing.T) {
	dsn := testenv.PostgresSchema(t, "ratelimit_")
	demo := demoHTTP(t)
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q}},
 "policies": {"limits": [{"name": "echo-burst", "tools": ["demo_echo"], "per": "all", "per_minute": 0.001, "burst": 40}]}}`, demo)
	var urls []string
	for range 2 {
		cfg := writeConfig(t, "", ext)
		b, err := os.ReadFile(cfg)
		require.NoError(t, err)
		body := strings.Replace(string(b), "database: { backend: sqlite, dsn: mcpflow.db }", fmt.Sprintf("database: { backend: postgres, dsn: %q }", dsn), 1)
		require.NoError(t, os.WriteFile(cfg, []byte(body), 0o600))
		urls = append(urls, startMain(t, ModeServe, cfg, nil).URL())
	}
	proxy := newRoundRobin(t, urls...)

	var admitted, limited atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				req, _ := http.NewRequest("POST", proxy.URL+"/api/threads/rl/tools/demo_echo/call", strings.NewReader(`{"arguments": {"message": "hi"}}`))
				req.Header.Set("Authorization", "Bearer "+testUserToken)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == 200:
					admitted.Add(1)
				case resp.StatusCode == 429 && resp.Header.Get("Retry-After") != "" && strings.Contains(string(body), `rate limit \"echo-burst\" reached`):
					limited.Add(1)
				default:
					t.Errorf("%d %s", resp.StatusCode, body)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("admitted %d, limited %d", admitted.Load(), limited.Load())
	require.LessOrEqual(t, admitted.Load(), int64(40), "the replicas admitted more than the bucket holds")
	require.GreaterOrEqual(t, admitted.Load(), int64(40-2*4))
	require.Equal(t, int64(320), admitted.Load()+limited.Load())

	// MCP (2026-07-28): the same refusal as a JSON-RPC error with the delay.
	c := &rpc2026{url: proxy.URL + "/mcp/threads/rl", token: testUserToken}
	resp := c.request(t, context.Background(), "tools/call", "demo_echo", map[string]any{"name": "demo_echo", "arguments": map[string]any{"message": "hi"}})
	defer resp.Body.Close()
	var out struct {
		Error struct {
			Code    int
			Message string
			Data    map[string]any
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, 429, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Contains(t, out.Error.Message, `rate limit "echo-burst" reached`)
	require.Greater(t, out.Error.Data["retryAfterSeconds"], float64(0))
}
