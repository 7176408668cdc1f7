package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

const (
	carolToken = "e2e-carol-token" // an approver
	bobToken   = "e2e-bob-token"   // not one
)

// approvalPolicies send demo_echo calls labelled "ap…" to approval by
// carol (or the ops group), within an hour, and those labelled "late…"
// within the shortest timeout.
const approvalPolicies = `{"default": "allow", "rules": [
  {"name": "echo-needs-approval", "effect": "approve", "tools": ["demo_echo"], "when": "has(args.label) && args.label.startsWith('ap')",
   "approvers": ["user:carol", "group:ops"]},
  {"name": "late-echo", "effect": "approve", "tools": ["demo_echo"], "when": "has(args.label) && args.label.startsWith('late')",
   "approvers": ["user:carol"], "approval_timeout_seconds": 60}]}`

// approvalConfig is writeConfig's configuration with three users (alice
// calls, carol approves, bob may not) and the audit log on; tasks adds to
// mcp_tasks.
func approvalConfig(t *testing.T, demoURL, tasks string) string {
	t.Helper()
	users := fmt.Sprintf("{ id: alice, token: %q }, { id: carol, token: %q }, { id: bob, token: %q }", testUserToken, carolToken, bobToken)
	return writeConfigUsers(t, users, "mcp_tasks: { enabled: true, poll_interval_seconds: 1"+tasks+" }\naudit: { enabled: true, flush_interval_ms: 20 }\n",
		fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 10}}, "policies": %s}`, demoURL, approvalPolicies))
}

// callForApproval calls demo_echo as alice with label and returns the
// task the call became.
func (e *taskEnv) callForApproval(t *testing.T, label string) string {
	t.Helper()
	code, out := e.post(t, "/api/threads/ap/tools/demo_echo/call", `{"arguments": {"message": "hello `+label+`", "label": "`+label+`"}}`)
	require.Equal(t, 200, code, out)
	sc := out["structured_content"].(map[string]any)
	require.Equal(t, "working", sc["status"], out)
	return sc["task_id"].(string)
}

// echoCalls counts the calls of demo_echo labelled label that reached the
// demo server.
func (e *taskEnv) echoCalls(t *testing.T, label string) int {
	n := 0
	for _, c := range e.upstreamCalls(t, "ap-count") {
		if c.tool == "echo" && c.args["label"] == label {
			n++
		}
	}
	return n
}

// TestApprovals: a call an approve rule holds for becomes a durable task
// that waits; only an approver may decide it (not the caller, not another
// user); approved, the tool runs once with the approved arguments; denied,
// cancelled by its caller or past its deadline, it never runs. The
// approvers list and decide through REST and the CLI, and each decision
// is audited.
func TestApprovals(t *testing.T) {
	demo := testenv.StartDemo(t, "http", "--record-calls", "--state", filepath.Join(t.TempDir(), "jobs.json"))
	e := &taskEnv{m: waitReady(t, startMain(t, ModeDev, approvalConfig(t, demo.URL, ""), nil))}
	base := e.m.URL()

	late := e.callForApproval(t, "late") // its deadline passes while the rest runs

	// Waiting, with who may decide in the task's status message.
	id := e.callForApproval(t, "ap-yes")
	detail := e.waitStatus(t, "ap", id, "working")
	require.Contains(t, detail["status_message"], `waiting for approval by user:carol or group:ops until`)
	require.Contains(t, detail["status_message"], `(policy rule "echo-needs-approval")`)
	require.Zero(t, e.echoCalls(t, "ap-yes"))

	// Not bob's, nor alice's own, to decide.
	code, out := do(t, "GET", base+"/api/approvals", bobToken, "")
	require.Equal(t, 200, code, out)
	require.Empty(t, out["approvals"])
	code, out = do(t, "POST", base+"/api/approvals/"+id, bobToken, `{"decision": "approve"}`)
	require.Equal(t, 404, code, out)
	require.Contains(t, fmt.Sprint(out), "no such approval")
	require.NotContains(t, fmt.Sprint(out), "carol", "who may decide is not told to others")
	code, out = do(t, "POST", base+"/api/approvals/"+id, testUserToken, `{"decision": "approve"}`)
	require.Equal(t, 403, code, out)
	require.Contains(t, fmt.Sprint(out), "the caller of a call cannot approve or deny it")
	code, out = do(t, "POST", base+"/api/approvals/"+id, carolToken, `{"decision": "maybe"}`)
	require.Equal(t, 400, code, out)
	code, out = do(t, "POST", base+"/api/approvals/mcp-task-00000000000000000000000000000000", carolToken, `{"decision": "approve"}`)
	require.Equal(t, 404, code)
	require.Contains(t, fmt.Sprint(out), "no such approval")
	require.NotContains(t, fmt.Sprint(out), "mcp-task-0000")
	code, out = do(t, "GET", base+"/api/approvals?state=waiting", carolToken, "")
	require.Equal(t, 400, code)
	require.Contains(t, fmt.Sprint(out), "state must be one of pending, approved, denied, expired, cancelled, calling, done")

	// Carol sees it, with its arguments, and approves it with the CLI.
	carol := func(args ...string) cliResult {
		return runWith(t.Context(), e.cliEnv("MCPFLOW_TOKEN", carolToken), args...)
	}
	r := carol("approvals")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, id+"  alice calls demo_echo (rule echo-needs-approval) in thread ap")
	require.Contains(t, r.stdout, `"label":"ap-yes"`)
	r = carol("approvals", "approve", id, "--reason", "looks fine")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, id+": approved alice's call of demo_echo.\n", r.stdout)
	detail = e.waitStatus(t, "ap", id, "completed")
	require.Contains(t, fmt.Sprint(detail["result"]), "hello ap-yes")
	require.Equal(t, 1, e.echoCalls(t, "ap-yes"))
	r = carol("approvals", "deny", id)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "the approval is done, not pending")

	// Denied: the task fails with who denied it and why; nothing ran.
	denied := e.callForApproval(t, "ap-no")
	code, out = do(t, "POST", base+"/api/approvals/"+denied, carolToken, `{"decision": "deny", "reason": "not today"}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, "denied", out["state"])
	detail = e.waitStatus(t, "ap", denied, "failed")
	require.Equal(t, "denied by carol: not today", detail["error"])

	// Cancelled by its caller while it waits: nobody can approve it after.
	cancelled := e.callForApproval(t, "ap-cancel")
	code, out = e.post(t, "/api/threads/ap/mcp-tasks/"+cancelled+"/cancel", `{}`)
	require.Equal(t, 202, code, out)
	e.waitStatus(t, "ap", cancelled, "cancelled")
	code, out = do(t, "POST", base+"/api/approvals/"+cancelled, carolToken, `{"decision": "approve"}`)
	require.Equal(t, 409, code, out)
	require.Contains(t, fmt.Sprint(out), "the approval is cancelled, not pending")

	// Over MCP 2026-07-28 with the Tasks extension the call is a task that
	// waits, with the same status message, and completes once approved.
	c26 := &rpc2026{url: base + "/mcp/threads/ap", token: testUserToken, ext: true}
	created := c26.call(t, "tools/call", "demo_echo", map[string]any{"name": "demo_echo",
		"arguments": map[string]any{"message": "hello ap-mcp", "label": "ap-mcp"}})
	require.Equal(t, "task", created["resultType"], "%v", created)
	mcpTask := created["taskId"].(string)
	got := c26.waitTask(t, mcpTask, "working")
	require.Contains(t, got["statusMessage"], "waiting for approval by user:carol or group:ops")
	code, out = do(t, "POST", base+"/api/approvals/"+mcpTask, carolToken, `{"decision": "approve"}`)
	require.Equal(t, 200, code, out)
	got = c26.waitTask(t, mcpTask, "completed")
	require.Contains(t, fmt.Sprint(got), "hello ap-mcp")

	// Carol decides through MCP elicitation, with the built-in tool
	// review_approvals: on 2025-11-25 (mcp-go's client, asked on the call's
	// stream) and on 2026-07-28 (the TypeScript SDK v2 client, asked by the
	// call's input_required result). Bob has nothing to review.
	el25 := e.callForApproval(t, "ap-el25")
	c25, _, asked := legacyClientAs(t, base+"/mcp", carolToken, map[string]any{"decision": "approve"})
	ctx := t.Context()
	req := mcp.CallToolRequest{}
	req.Params.Name = "review_approvals"
	req.Params.Arguments = map[string]any{"task_id": el25}
	res, err := c25.CallTool(ctx, req)
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, "Approved alice's call of demo_echo (task "+el25+").", res.Content[0].(mcp.TextContent).Text)
	require.Len(t, asked.questions(), 1)
	require.Contains(t, asked.questions()[0], `alice asks to call demo_echo (server demo) in thread ap with the arguments {"label":"ap-el25","message":"hello ap-el25"}`)
	e.waitStatus(t, "ap", el25, "completed")

	el26 := e.callForApproval(t, "ap-el26")
	steps := testenv.RunMCP2026Client(t, base+"/mcp", carolToken, "ordinary",
		`{"tool": "review_approvals", "arguments": {"task_id": "`+el26+`"}, "answer": {"decision": "deny", "reason": "not via MCP"}}`)
	require.Contains(t, fmt.Sprint(testenv.Step(steps, "input_request")), "alice asks to call demo_echo", "%v", steps)
	require.Contains(t, fmt.Sprint(testenv.Step(steps, "result")), "Denied alice's call of demo_echo (task "+el26+")", "%v", steps)
	detail = e.waitStatus(t, "ap", el26, "failed")
	require.Equal(t, "denied by carol: not via MCP", detail["error"])

	res, err = c25.CallTool(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "No calls wait for your approval.", res.Content[0].(mcp.TextContent).Text, "el25 is decided")
	// A task_id is read by its id; one that names no approval is answered alike.
	for _, id := range []string{"no-such-task", "../x"} {
		other := mcp.CallToolRequest{}
		other.Params.Name, other.Params.Arguments = "review_approvals", map[string]any{"task_id": id}
		res, err = c25.CallTool(ctx, other)
		require.NoError(t, err)
		require.Equal(t, "No calls wait for your approval.", res.Content[0].(mcp.TextContent).Text, id)
	}
	// The tool is listed to approvers only.
	require.Contains(t, restToolNamesAs(t, base, carolToken), "review_approvals")
	require.NotContains(t, restToolNamesAs(t, base, bobToken), "review_approvals")
	require.NotContains(t, restToolNamesAs(t, base, testUserToken), "review_approvals")
	cb, _, _ := legacyClientAs(t, base+"/mcp", bobToken, map[string]any{"decision": "approve"})
	_, err = cb.CallTool(ctx, req)
	require.ErrorContains(t, err, "review_approvals", "bob: unknown tool")

	// Past its deadline: denied.
	detail = e.waitStatus(t, "ap", late, "failed")
	require.Contains(t, detail["error"], "not approved before its deadline")
	code, out = do(t, "POST", base+"/api/approvals/"+late, carolToken, `{"decision": "approve"}`)
	require.Equal(t, 409, code, out)

	for _, label := range []string{"ap-no", "ap-cancel", "late"} {
		require.Zero(t, e.echoCalls(t, label), label)
	}
	require.Equal(t, 1, e.echoCalls(t, "ap-yes"))

	// The audit log has the calls (decision approve, outcome pending) and
	// carol's decisions.
	require.Eventually(t, func() bool {
		code, out := get(t, base+"/api/audit?kind=approval", testAdminToken)
		return code == 200 && len(out["records"].([]any)) == 5
	}, 10*time.Second, 50*time.Millisecond)
	_, out = get(t, base+"/api/audit?kind=approval", testAdminToken)
	decisions := map[string]string{}
	for _, rec := range out["records"].([]any) {
		m := rec.(map[string]any)
		require.Equal(t, "carol", m["user_id"])
		decisions[m["task_id"].(string)] = m["decision"].(string)
	}
	require.Equal(t, map[string]string{id: "approve", denied: "deny", mcpTask: "approve", el25: "approve", el26: "deny"}, decisions)
	// The calls (decision approve, outcome pending: late, ap-yes, ap-no,
	// ap-cancel, ap-mcp, ap-el25, ap-el26) and the approved ones that ran
	// (surface approval, with their outcome).
	// The approved calls' records come from the worker's audit log, in
	// its next batch.
	pending, ran := 0, map[string]string{}
	require.Eventually(t, func() bool {
		_, out = get(t, base+"/api/audit?kind=call&decision=approve", testAdminToken)
		pending, ran = 0, map[string]string{}
		for _, rec := range out["records"].([]any) {
			m := rec.(map[string]any)
			if m["surface"] == "approval" {
				ran[m["task_id"].(string)] = m["outcome"].(string) + " " + m["detail"].(string)
				continue
			}
			require.Equal(t, "pending", m["outcome"])
			pending++
		}
		return len(ran) == 3
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, 7, pending)
	require.Equal(t, map[string]string{id: "ok approved by carol", mcpTask: "ok approved by carol", el25: "ok approved by carol"}, ran)
}

// TestApprovalSurvivesKill9: the API and the worker are killed with
// SIGKILL while a call waits for approval; with new processes the approval
// lands and the tool runs once.
func TestApprovalSurvivesKill9(t *testing.T) {
	demo := testenv.StartDemo(t, "http", "--record-calls", "--state", filepath.Join(t.TempDir(), "jobs.json"))
	cfg := approvalConfig(t, demo.URL, ", lease_seconds: 5")
	raw, err := os.ReadFile(cfg)
	require.NoError(t, err)
	base := "http://" + regexp.MustCompile(`server: \{ addr: "([^"]+)"`).FindStringSubmatch(string(raw))[1]
	bin := testenv.Binary(t, "./cmd/mcpflow")
	serve, work := startProc(t, bin, ModeServe, cfg), startProc(t, bin, ModeWorker, cfg)

	code, out := do(t, "POST", base+"/api/threads/k9/tools/demo_echo/call", testUserToken, `{"arguments": {"message": "after the kill", "label": "ap-k9"}}`)
	require.Equal(t, 200, code, out)
	id := out["structured_content"].(map[string]any)["task_id"].(string)
	waitTask := func(status string) map[string]any {
		var last map[string]any
		require.Eventually(t, func() bool {
			_, last = do(t, "GET", base+"/api/threads/k9/mcp-tasks/"+id, testUserToken, "")
			return last["status"] == status
		}, 90*time.Second, 100*time.Millisecond, "task never %s: %v", status, last)
		return last
	}
	waitTask("working")
	// Pending approvals are found in Temporal by the McpApprovers search
	// attribute (the Web UI's filter).
	tc, err := client.Dial(client.Options{HostPort: temporal.HostPort, Namespace: "default"})
	require.NoError(t, err)
	defer tc.Close()
	require.Eventually(t, func() bool {
		resp, err := tc.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: `McpApprovers = "user:carol,group:ops" AND McpTaskStatus = "working"`})
		return err == nil && len(resp.Executions) == 1 && resp.Executions[0].Execution.WorkflowId == id
	}, 30*time.Second, 200*time.Millisecond)

	serve.kill9(t)
	work.kill9(t)
	startProc(t, bin, ModeServe, cfg)
	startProc(t, bin, ModeWorker, cfg)

	code, out = do(t, "POST", base+"/api/approvals/"+id, carolToken, `{"decision": "approve"}`)
	require.Equal(t, 200, code, out)
	detail := waitTask("completed")
	require.Contains(t, fmt.Sprint(detail["result"]), "after the kill")
	code, out = do(t, "POST", base+"/api/threads/k9/tools/demo_headers/call", testUserToken, `{"arguments": {"history": true}}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, 1, strings.Count(fmt.Sprint(out["structured_content"]), `"label":"ap-k9"`), "the approved call ran once: %v", out)
	// The worker process's audit log wrote the approved call's record.
	require.Eventually(t, func() bool {
		_, out = get(t, base+"/api/audit?kind=call&decision=approve", testAdminToken)
		for _, rec := range out["records"].([]any) {
			if m := rec.(map[string]any); m["surface"] == "approval" && m["task_id"] == id {
				return m["outcome"] == "ok"
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond, "%v", out)
}

// restToolNamesAs lists the tools of thread "ap" as the user of token.
func restToolNamesAs(t *testing.T, base, token string) []string {
	t.Helper()
	code, body := get(t, base+"/api/threads/ap/tools", token)
	require.Equal(t, 200, code, body)
	var names []string
	for _, tl := range body["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	return names
}
