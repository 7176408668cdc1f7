package session

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/config"
)

// TestReview3StdioHelper is a stand-in 2026-07-28 stdio server when run by
// TestReview3StdioStoppedStreamIsCancelled or TestReview4StdioProbeIsCancelled
// (REVIEW3_STDIO_LOG set): it refuses each subscriptions/listen naming
// test://bad (-32602), acknowledges the others and keeps them open, and
// writes every message it reads to the log file, one line each.
func TestReview3StdioHelper(t *testing.T) {
	logPath := os.Getenv("REVIEW3_STDIO_LOG")
	if logPath == "" {
		t.Skip("the stdio server of TestReview3StdioStoppedStreamIsCancelled")
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = out.Write(append(b, '\n'))
		_ = out.Flush()
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		line := in.Bytes()
		_, _ = logf.Write(append(append([]byte(nil), line...), '\n'))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(line, &msg) != nil || len(msg.ID) == 0 || msg.Method == "" {
			continue
		}
		answer := func(result any) { send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result}) }
		switch msg.Method {
		case "server/discover":
			answer(map[string]any{
				"supportedVersions": []string{"2026-07-28"},
				"capabilities":      map[string]any{"resources": map[string]any{"subscribe": true, "listChanged": true}},
				"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "review3", "version": "1"}},
			})
		case "resources/read":
			var p struct {
				URI string `json:"uri"`
			}
			_ = json.Unmarshal(msg.Params, &p)
			answer(map[string]any{"contents": []any{map[string]any{"uri": p.URI, "text": "x"}}})
		case "subscriptions/listen":
			var p struct {
				Notifications listenFilter2 `json:"notifications"`
			}
			_ = json.Unmarshal(msg.Params, &p)
			if slices.Contains(p.Notifications.ResourceSubscriptions, "test://bad") {
				send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32602, "message": "cannot subscribe"}})
				continue
			}
			send(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
				"params": map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/subscriptionId": msg.ID}, "notifications": p.Notifications}})
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		}
	}
	_ = logf.Close()
	os.Exit(0)
}

// TestReview3StdioStoppedStreamIsCancelled (holds; regression test): over
// stdio a stream the listener stops is cancelled at the server - mcp-go's
// cancelRequest sends notifications/cancelled for it, stdiopipe not being
// an HTTPConnection - before Close, for every stream but the last (whose
// stdin Close ends): replacing a stream does not leave the old request
// running at the server.
func TestReview3StdioStoppedStreamIsCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	exe, err := os.Executable()
	require.NoError(t, err)
	logPath := filepath.Join(t.TempDir(), "in.jsonl")
	s, err := Dial(ctx, &config.Server{Name: "review3", Enabled: true, Type: config.TransportStdio,
		Command: exe, Args: []string{"-test.run=^TestReview3StdioHelper$"},
		Env: map[string]string{"REVIEW3_STDIO_LOG": logPath}, ProtocolVersion: "2026-07-28"}, DialOptions{})
	require.NoError(t, err)
	closed := sync.OnceFunc(func() { _ = s.Close() })
	defer closed()
	require.True(t, s.Modern())

	var unsubs []func()
	for i := range 4 {
		u, err := s.Subscribe(ctx, fmt.Sprintf("test://%d", i), func() {})
		require.NoError(t, err)
		unsubs = append(unsubs, u)
	}
	s.HearLists()
	for _, u := range unsubs[:2] {
		u()
	}

	// Every listen but the open one is cancelled at the server.
	var listens, cancelled []string
	var before int // cancellations read before the next stream's request
	for {
		listens, cancelled, before = nil, nil, 0
		var last listenFilter2
		for _, m := range readStdioLog(t, logPath) {
			switch m.Method {
			case "subscriptions/listen":
				listens = append(listens, string(m.ID))
				last = m.Params.Notifications
			case "notifications/cancelled":
				cancelled = append(cancelled, string(m.Params.RequestID))
				if len(listens) > 0 && string(m.Params.RequestID) == listens[len(listens)-1] {
					before++
				}
			}
		}
		if last.ResourcesListChanged && fmt.Sprint(last.ResourceSubscriptions) == "[test://2 test://3]" &&
			len(cancelled) == len(listens)-1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("listens %v, cancelled %v: a stopped stream's request was not cancelled at the server", listens, cancelled)
		case <-time.After(20 * time.Millisecond):
		}
	}
	require.ElementsMatch(t, listens[:len(listens)-1], cancelled)
	t.Logf("%d streams, the stopped ones cancelled: %v; %d of the cancellations read before the next stream's request",
		len(listens), cancelled, before)
	closed()
}

// stdioMsg is a message TestReview3StdioHelper read, as its log holds it.
type stdioMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID     json.RawMessage `json:"requestId"`
		Notifications listenFilter2   `json:"notifications"`
	} `json:"params"`
}

// readStdioLog returns the messages the stand-in stdio server read so far.
func readStdioLog(t *testing.T, path string) []stdioMsg {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []stdioMsg
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m stdioMsg
		_ = json.Unmarshal([]byte(line), &m)
		out = append(out, m)
	}
	return out
}
