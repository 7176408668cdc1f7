package testenv

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// input renders a mcp2026_client.mjs INPUT object.
func input(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// text returns the first text block of a CallToolResult.
func text(t *testing.T, result any) string {
	t.Helper()
	r, ok := result.(map[string]any)
	require.True(t, ok, "result %v", result)
	content, _ := r["content"].([]any)
	require.NotEmpty(t, content, "result %v", result)
	block, _ := content[0].(map[string]any)
	return block["text"].(string)
}

// TestMCP2026Harness runs the 2026 test client (TS SDK v2 + ext-tasks)
// against the 2026-only test server (TS SDK v2 server + the Tasks extension)
// through every scenario: the harness the MCP endpoint's and the upstream
// driver's tests stand on works end to end, with two independent programs
// agreeing on the wire.
func TestMCP2026Harness(t *testing.T) {
	t.Parallel()
	const token = "harness-token"
	url := StartMCP2026Server(t, "--token", token)

	t.Run("discover", func(t *testing.T) {
		steps := RunMCP2026Client(t, url, token, "discover")
		d := Step(steps, "discover")
		require.NotNil(t, d, "steps %v", steps)
		require.EqualValues(t, 200, d["status"])
		result := d["result"].(map[string]any)
		require.Equal(t, []any{"2026-07-28"}, result["supportedVersions"])
		require.Equal(t, map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}, result["capabilities"].(map[string]any)["extensions"])
		require.Contains(t, result, "ttlMs")
		require.Contains(t, result, "cacheScope")
		c := Step(steps, "connect")
		require.Equal(t, "modern", c["era"])
		require.Equal(t, "2026-07-28", c["protocolVersion"])
	})

	t.Run("ordinary", func(t *testing.T) {
		steps := RunMCP2026Client(t, url, token, "ordinary", input(t, map[string]any{"tool": "echo", "arguments": map[string]any{"text": "hello"}}))
		tools := Step(steps, "tools/list")["tools"].([]any)
		var echo map[string]any
		for _, tool := range tools {
			if tool.(map[string]any)["name"] == "echo" {
				echo = tool.(map[string]any)
			}
		}
		require.NotNil(t, echo, "tools %v", tools)
		require.Equal(t, "Echo", echo["title"])
		require.Equal(t, true, echo["annotations"].(map[string]any)["readOnlyHint"])
		require.Equal(t, "https://json-schema.org/draft/2020-12/schema", echo["inputSchema"].(map[string]any)["$schema"])
		require.Contains(t, echo, "outputSchema")
		result := Step(steps, "result")["result"]
		require.Equal(t, "hello", text(t, result))
		require.Equal(t, map[string]any{"text": "hello"}, result.(map[string]any)["structuredContent"])
	})

	t.Run("ordinary progress", func(t *testing.T) {
		steps := RunMCP2026Client(t, url, token, "ordinary", input(t, map[string]any{"tool": "progress", "arguments": map[string]any{"steps": 3}, "progressToken": "p-1"}))
		var progress []float64
		for _, s := range steps {
			if s["step"] == "progress" {
				progress = append(progress, s["progress"].(float64))
			}
		}
		require.Equal(t, []float64{1, 2, 3}, progress)
		require.Equal(t, "done after 3 steps", text(t, Step(steps, "result")["result"]))
	})

	t.Run("ordinary MRTR question", func(t *testing.T) {
		steps := RunMCP2026Client(t, url, token, "ordinary", input(t, map[string]any{
			"tool": "mrtr_question", "arguments": map[string]any{"question": "Name?"}, "answer": map[string]any{"answer": "Ada"},
		}))
		q := Step(steps, "input_request")
		require.NotNil(t, q, "steps %v", steps)
		require.Equal(t, "request-retry", q["delivery"])
		require.Equal(t, "Name?", q["params"].(map[string]any)["message"])
		require.Equal(t, "answer: Ada", text(t, Step(steps, "result")["result"]))
	})

	t.Run("task", func(t *testing.T) {
		steps := RunMCP2026Client(t, url, token, "task", input(t, map[string]any{"tool": "sleep_task", "arguments": map[string]any{"ms": 50}}))
		require.Equal(t, "task", Step(steps, "call")["kind"])
		o := Step(steps, "outcome")
		require.Equal(t, "completed", o["status"])
		require.Equal(t, "slept 50 ms", text(t, o["result"]))
	})

	t.Run("question", func(t *testing.T) {
		steps := RunMCP2026Client(t, url, token, "question", input(t, map[string]any{
			"tool": "ask_question", "arguments": map[string]any{"question": "Colour?"}, "answer": map[string]any{"answer": "blue"},
		}))
		q := Step(steps, "input_request")
		require.NotNil(t, q, "steps %v", steps)
		require.Equal(t, "task-update", q["delivery"])
		require.Equal(t, "answer", q["key"])
		o := Step(steps, "outcome")
		require.Equal(t, "completed", o["status"])
		require.Equal(t, "answer: blue", text(t, o["result"]))
	})

	t.Run("task failed", func(t *testing.T) {
		steps := RunMCP2026Client(t, url, token, "task", input(t, map[string]any{"tool": "fail_task", "arguments": map[string]any{"message": "boom"}}))
		o := Step(steps, "outcome")
		require.Equal(t, "failed", o["status"])
		require.Equal(t, map[string]any{"code": float64(-32603), "message": "boom"}, o["error"])
	})

	t.Run("task tool error", func(t *testing.T) {
		steps := RunMCP2026Client(t, url, token, "task", input(t, map[string]any{"tool": "tool_error_task"}))
		o := Step(steps, "outcome")
		require.Equal(t, "completed", o["status"])
		require.Equal(t, true, o["result"].(map[string]any)["isError"])
	})

	t.Run("cancel", func(t *testing.T) {
		steps := RunMCP2026Client(t, url, token, "cancel", input(t, map[string]any{"tool": "long_task", "cancelAfterMs": 100}))
		require.NotNil(t, Step(steps, "cancel"), "steps %v", steps)
		require.Equal(t, "cancelled", Step(steps, "final")["status"])
	})

	t.Run("expected error", func(t *testing.T) {
		// Without the tasks extension a task-only tool is -32021; the
		// SDK client's ordinary call does not declare the extension.
		steps := RunMCP2026Client(t, url, token, "ordinary", input(t, map[string]any{"tool": "ask_question", "expectError": true}))
		e := Step(steps, "error")
		require.NotNil(t, e, "steps %v", steps)
		require.EqualValues(t, -32021, e["code"])
	})

	t.Run("wrong token", func(t *testing.T) {
		_, stderr, err := runMCP2026Client(t, url, "wrong", "task", input(t, map[string]any{"tool": "sleep_task"}))
		require.Error(t, err)
		require.Contains(t, stderr, "401")
	})
}

// TestConformanceFixture checks that the conformance fixture server starts
// and serves a 2026 client its Tasks-extension fixtures (the conformance
// runner itself runs in `make conformance`, not here).
func TestConformanceFixture(t *testing.T) {
	t.Parallel()
	url := StartConformanceFixture(t)
	steps := RunMCP2026Client(t, url, "", "question", input(t, map[string]any{
		"tool": "confirm_delete", "arguments": map[string]any{"filename": "report.pdf"}, "answer": map[string]any{"confirm": true},
	}))
	require.Equal(t, "confirm", Step(steps, "input_request")["key"])
	o := Step(steps, "outcome")
	require.Equal(t, "completed", o["status"])
	require.Equal(t, "deleted report.pdf", text(t, o["result"]))
}
