package demomcp

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

var listeningURL = regexp.MustCompile(`^http://127\.0\.0\.1:[1-9][0-9]*$`)

// TestBinaryHTTPTransports starts the binary over sse and http, talks to it
// with a connected client, then sends SIGTERM and expects exit status 0.
func TestBinaryHTTPTransports(t *testing.T) {
	t.Parallel()
	for _, transportName := range []string{TransportHTTP, TransportSSE} {
		t.Run(transportName, func(t *testing.T) {
			t.Parallel()
			p := startProcess(t, "--transport", transportName, "--addr", "127.0.0.1:0", "--workdir", t.TempDir())
			require.Regexp(t, listeningURL, p.baseURL)

			var c *client.Client
			var err error
			if transportName == TransportHTTP {
				c, err = client.NewStreamableHttpClient(p.baseURL + StreamableHTTPPath)
				require.NoError(t, err)
			} else {
				c, err = client.NewSSEMCPClient(p.baseURL + SSEPath)
				require.NoError(t, err)
				require.NoError(t, c.Start(testContext(t)))
			}
			initClient(t, c, "")
			tools, err := c.ListTools(testContext(t), mcp.ListToolsRequest{})
			require.NoError(t, err)
			require.Len(t, tools.Tools, len(ToolNames))
			require.Equal(t, "hi", firstText(callTool(t, c, ToolEcho, map[string]any{"message": "hi"})))

			// The client stays connected (for SSE, with an open stream).
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 0, p.wait(t))
			require.Equal(t, 1, strings.Count(p.stderrText(), ListeningPrefix), p.stderrText())
		})
	}
}

func TestBinaryStdioSIGTERM(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(demoBinary(t))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	_, err = stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"))
	require.NoError(t, err)
	var resp struct {
		Result mcp.InitializeResult `json:"result"`
	}
	require.NoError(t, json.NewDecoder(stdout).Decode(&resp))
	require.Equal(t, Name, resp.Result.ServerInfo.Name)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		require.FailNow(t, "demo-mcp (stdio) did not exit after SIGTERM")
	}
}

// TestBinaryStateSurvivesRestart kills the server hard and starts it again
// on the same state file: the job still resolves and counters survive.
func TestBinaryStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state.json")

	connect := func(p *process) *client.Client {
		c, err := client.NewStreamableHttpClient(p.baseURL + StreamableHTTPPath)
		require.NoError(t, err)
		return initClient(t, c, "")
	}

	first := startProcess(t, "--transport", "http", "--state", state)
	c1 := connect(first)
	id := submit(t, c1, map[string]any{"duration_seconds": 1, "label": "survivor", "result": map[string]any{"file": "report.pdf"}})
	cancelledID := submit(t, c1, map[string]any{"duration_seconds": 300})
	cancel(t, c1, cancelledID)
	status(t, c1, id)
	require.NoError(t, first.cmd.Process.Kill())
	first.wait(t)

	var onDisk map[string]any
	raw, err := os.ReadFile(state)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &onDisk))

	// DEMO_MCP_STATE is the env fallback for --state.
	second := startProcessEnv(t, []string{"DEMO_MCP_STATE=" + state}, "--transport", "http")
	c2 := connect(second)
	require.Equal(t, map[string]any{"task_id": id, "status": "completed", "result": map[string]any{"file": "report.pdf"}},
		waitStatus(t, c2, id, "completed"))
	require.Equal(t, map[string]any{"task_id": cancelledID, "status": "cancelled"}, cancel(t, c2, cancelledID))

	stats := callStructured(t, c2, ToolJobStats, nil)
	require.EqualValues(t, 2, stats["submits"])
	require.EqualValues(t, 2, stats["cancels"])
	jobs := stats["jobs"].(map[string]any)
	survivor := jobs[id].(map[string]any)
	require.Equal(t, "survivor", survivor["label"])
	require.Equal(t, "completed", survivor["status"])
	require.EqualValues(t, 1, survivor["submits"])
	require.EqualValues(t, 0, survivor["cancel_calls"])
	require.EqualValues(t, 2, jobs[cancelledID].(map[string]any)["cancel_calls"])
}

func TestRunRejectsUnknownTransport(t *testing.T) {
	t.Parallel()
	err := Run(t.Context(), Options{Transport: "websocket"})
	require.ErrorContains(t, err, "transport")
}
