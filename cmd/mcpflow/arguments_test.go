package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// Integers beyond 2^53 (float64's exact range).
const (
	bigREST     = "9007199254740993"
	bigMCP      = "9007199254740995"
	bigSubmit   = "9007199254740997"
	bigMCPTask  = "9007199254740999"
	bigNested   = "-9007199254740993"
	bigDecimals = "0.10000000000000000555"
)

// rawArgs is one call as the demo server received it (--record-calls),
// its arguments decoded with every digit kept.
type rawArgs struct {
	tool string
	args map[string]any
}

// upstreamCalls reads the demo server's record of every call through
// mcpflow (the headers tool's history, where arguments are the text that
// arrived).
func (e *taskEnv) upstreamCalls(t *testing.T, thread string) []rawArgs {
	t.Helper()
	code, out := e.post(t, "/api/threads/"+thread+"/tools/demo_headers/call", `{"arguments": {"history": true}}`)
	require.Equal(t, 200, code, out)
	raw, err := json.Marshal(out["structured_content"].(map[string]any)["history"])
	require.NoError(t, err)
	var calls []struct {
		Tool      string `json:"tool"`
		Arguments string `json:"arguments"`
	}
	require.NoError(t, json.Unmarshal(raw, &calls))
	var res []rawArgs
	for _, c := range calls {
		r := rawArgs{tool: c.Tool}
		if c.Arguments != "" {
			dec := json.NewDecoder(strings.NewReader(c.Arguments))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&r.args), c.Arguments)
		}
		res = append(res, r)
	}
	return res
}

// findCall returns the arguments of the one call of tool whose label
// argument is label.
func findCall(t *testing.T, calls []rawArgs, tool, label string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, c := range calls {
		if c.tool == tool && c.args["label"] == label {
			found = append(found, c.args)
		}
	}
	require.Len(t, found, 1, "calls of %s labelled %s: %v", tool, label, calls)
	return found[0]
}

// Tool arguments reach the upstream MCP server exactly as the agent sent
// them: integers beyond 2^53 (and long decimals) keep every digit on an
// ordinary REST call, an ordinary call through the MCP endpoint, a durable
// submit through REST and a task-augmented submit through the MCP
// endpoint, where the arguments cross Temporal (workflow input, submit
// activity input) before the worker sends them.
func TestArgumentsReachUpstreamExactly(t *testing.T) {
	demo := testenv.StartDemo(t, "http", "--record-calls", "--state", filepath.Join(t.TempDir(), "jobs.json"))
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 10, %s}}}`, demo.URL, jobToolset)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\nworkspace: { root: ws }\n", ext)
	e := &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
	base := e.m.URL()

	// An ordinary REST call.
	code, out := e.post(t, "/api/threads/n1/tools/demo_echo/call",
		`{"arguments": {"message": "rest", "label": "rest", "big": `+bigREST+`, "nested": {"list": [`+bigNested+`, `+bigDecimals+`]}}}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, false, out["is_error"], out)

	// An ordinary call through the MCP endpoint.
	sid := initSession(t, base, "/mcp/threads/n1", testUserToken, nil)
	a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/n1", token: testUserToken, session: sid,
		body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo_echo","arguments":{"message":"mcp","label":"mcp","big":` + bigMCP + `}}}`})
	require.Equal(t, 200, a.status, a.raw)
	require.Equal(t, false, a.result()["isError"], a.raw)

	// A durable submit through REST.
	code, out = e.post(t, "/api/threads/n1/tools/demo_submit_job/call",
		`{"arguments": {"duration_seconds": 0, "label": "submit", "big": `+bigSubmit+`, "nested": {"list": [`+bigNested+`, `+bigDecimals+`]}}}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, false, out["is_error"], out)
	restTask := out["structured_content"].(map[string]any)["task_id"].(string)

	// A task-augmented submit through the MCP endpoint.
	a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/n1", token: testUserToken, session: sid,
		body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo_submit_job","task":{},"arguments":{"duration_seconds":0,"label":"mcp-task","big":` + bigMCPTask + `}}}`})
	require.Equal(t, 200, a.status, a.raw)
	mcpTask := a.result()["task"].(map[string]any)["taskId"].(string)

	e.waitStatus(t, "n1", restTask, "completed")
	e.waitStatus(t, "n1", mcpTask, "completed")

	calls := e.upstreamCalls(t, "n1")
	for _, c := range []struct{ tool, label, big string }{
		{"echo", "rest", bigREST},
		{"echo", "mcp", bigMCP},
		{"submit_job", "submit", bigSubmit},
		{"submit_job", "mcp-task", bigMCPTask},
	} {
		args := findCall(t, calls, c.tool, c.label)
		require.Equal(t, json.Number(c.big), args["big"], "%s (%s): the upstream received the integer unchanged", c.tool, c.label)
	}
	for _, label := range []string{"rest", "submit"} {
		tool := map[string]string{"rest": "echo", "submit": "submit_job"}[label]
		nested := findCall(t, calls, tool, label)["nested"].(map[string]any)["list"].([]any)
		require.Equal(t, []any{json.Number(bigNested), json.Number(bigDecimals)}, nested, "%s: nested numbers are kept too", label)
	}

	// In Temporal the workflow input and the submit activity's input hold
	// the number as the agent wrote it.
	hist := historyBytes(t, restTask)
	require.GreaterOrEqual(t, bytes.Count(hist, []byte(`"big":`+bigSubmit)), 2, "the workflow input and the submit activity input")
}
