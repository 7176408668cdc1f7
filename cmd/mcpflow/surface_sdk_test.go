package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// mcpflow's prompts, resources, completions and log messages through the
// official SDK clients, independent implementations of both revisions: the
// TypeScript SDK v1 (2025-11-25, a session) and v2 (2026-07-28), through
// internal/testdata/npm/surface_client.mjs, and the Go SDK pinned to
// 2025-11-25 or negotiating 2026-07-28. The upstream is the reference
// server-everything over stdio ("ever") and over streamable HTTP
// ("everh"). Each client gets <server>_completable-prompt with arguments,
// completes its "name" argument in the context of "department", lists the
// resources and reads the first; over stdio it also hears the server's log
// messages during a call. server-everything over HTTP sends its simulated
// log messages outside any request, which mcpflow does not relay (by
// design: an HTTP server's log messages reach the caller of the call they
// belong to), so over HTTP the client hears those of the conformance
// fixture server ("conf"), whose test_tool_with_logging logs three info
// messages during the call, at the level the client asked for.
//
// A resource URI both server-everythings have is read from the first in
// configuration order (ever), so a client reads over the HTTP upstream in a
// thread named h-*, where a policy hides ever: there everh is the only
// server-everything.

// surfaceSDKPrompt is what server-everything's completable-prompt answers
// for department Sales and name Eve.
const surfaceSDKPrompt = "Please promote Eve to the head of the Sales team."

// surfaceSDKLevels are the levels of MCP log messages.
var surfaceSDKLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// surfaceSDKToolLogs are the info messages the conformance fixture's
// test_tool_with_logging logs during a call, in order.
var surfaceSDKToolLogs = []string{"Tool execution started", "Tool processing data", "Tool execution completed"}

// startSurfaceSDK starts mcpflow with server-everything over stdio ("ever",
// first) and over streamable HTTP ("everh"), the conformance fixture server
// over streamable HTTP ("conf"), and a policy that hides ever from the
// threads named h-*.
func startSurfaceSDK(t *testing.T) *Main {
	t.Helper()
	testenv.Node2026(t) // the fixture server: skips without the SDK v2 packages
	entry := testenv.EverythingEntry(t)
	httpURL := testenv.StartEverythingHTTP(t, entry)
	confURL := testenv.StartConformanceFixture(t)
	ext := fmt.Sprintf(`{
  "policies": {"default": "allow", "rules": [
    {"name": "h-threads-reach-everh-only", "effect": "deny", "servers": ["ever"], "when": "thread.startsWith('h-')"}]},
  "mcpServers": {
    "ever": {"type": "stdio", "command": "node", "args": [%q, "stdio"], "tool_call_timeout": 60},
    "everh": {"type": "http", "url": %q, "tool_call_timeout": 60},
    "conf": {"type": "http", "url": %q}
}}`, entry, httpURL, confURL)
	return waitReady(t, startMain(t, ModeDev, writeConfig(t, "workspace: { root: ws }\n", ext), nil))
}

// surfaceSDKCase is one client run: the upstream it gets the prompt of and
// reads the resource from, in which thread, and the log messages it checks:
// log, server-everything's simulated logging (stdio only); logServer, the
// conformance fixture upstream whose test_tool_with_logging it calls ("" for
// none); level, the level it asks for log messages at.
type surfaceSDKCase struct {
	name, server, thread string
	log                  bool
	logServer, level     string
}

func surfaceSDKCases(client string) []surfaceSDKCase {
	return []surfaceSDKCase{
		{name: "stdio", server: "ever", thread: "sdk-" + client, log: true, level: "debug"},
		{name: "http", server: "everh", thread: "h-sdk-" + client, logServer: "conf", level: "info"},
	}
}

// logTool is the tool whose log messages tc checks over HTTP, "" for none.
func (tc surfaceSDKCase) logTool() string {
	if tc.logServer == "" {
		return ""
	}
	return tc.logServer + "_test_tool_with_logging"
}

// TestSurfaceSDKTypeScript: the TypeScript SDK v1 (2025-11-25, with
// logging/setLevel) and v2 (pinned to 2026-07-28, with the logLevel _meta
// on its calls), each over the stdio and the HTTP upstreams.
func TestSurfaceSDKTypeScript(t *testing.T) {
	testenv.Node2026(t) // skips without node or the SDK v2 packages
	m := startSurfaceSDK(t)
	for _, sdk := range []struct{ name, rev string }{{"v1", "2025-11-25"}, {"v2", "2026-07-28"}} {
		for _, tc := range surfaceSDKCases("ts-" + sdk.name) {
			t.Run(sdk.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				args := []string{"--server", tc.server}
				if tc.log {
					args = append(args, "--log")
				}
				if tc.logServer != "" {
					args = append(args, "--log-server", tc.logServer)
				}
				if tc.level != "" {
					args = append(args, "--log-level", tc.level)
				}
				steps := testenv.RunSurfaceClient(t, sdk.name, m.URL()+"/mcp/threads/"+tc.thread, testUserToken, args...)
				checkSurfaceTSSteps(t, steps, sdk.rev, tc)
			})
		}
	}
}

// checkSurfaceTSSteps checks what surface_client.mjs printed. A step the
// SDK client failed (an error of the server's, or a result its schemas
// refuse) fails t and the checks go on with the next step.
func checkSurfaceTSSteps(t *testing.T, steps []map[string]any, rev string, tc surfaceSDKCase) {
	t.Helper()
	for _, s := range steps {
		if e, failed := s["error"]; failed {
			t.Errorf("%s %v: the SDK client failed: %v", s["step"], cmp.Or(s["name"], s["uri"]), e)
		}
	}
	step := func(name string) map[string]any {
		s := testenv.Step(steps, name)
		if s == nil {
			t.Errorf("no step %s in %v", name, steps)
		}
		if _, failed := s["error"]; failed {
			return nil
		}
		return s
	}

	connect := testenv.Step(steps, "connect")
	require.NotNil(t, connect, "%v", steps)
	require.Equal(t, rev, connect["protocolVersion"], "%v", connect)
	caps, _ := connect["capabilities"].(map[string]any)
	for _, c := range []string{"prompts", "resources", "completions", "logging"} {
		require.Contains(t, caps, c, "server capabilities %v", caps)
	}

	prompt := tc.server + "_completable-prompt"
	if s := step("prompts/list"); s != nil {
		var names []string
		args := map[string]any{}
		for _, p := range s["prompts"].([]any) {
			p := p.(map[string]any)
			names = append(names, p["name"].(string))
			args[p["name"].(string)] = p["arguments"]
		}
		require.Contains(t, names, prompt)
		require.Equal(t, []any{"department", "name"}, args[prompt])
		checkSurfaceServers(t, names, tc)
	}

	if s := step("prompts/get"); s != nil {
		require.Equal(t, prompt, s["name"])
		msgs, _ := s["result"].(map[string]any)["messages"].([]any)
		require.Len(t, msgs, 1, "%v", s)
		msg := msgs[0].(map[string]any)
		require.Equal(t, "user", msg["role"])
		require.Equal(t, map[string]any{"type": "text", "text": surfaceSDKPrompt}, msg["content"])
	}

	if s := step("completion/complete"); s != nil {
		require.Equal(t, map[string]any{"type": "ref/prompt", "name": prompt}, s["ref"])
		completion, _ := s["result"].(map[string]any)["completion"].(map[string]any)
		require.Equal(t, []any{"Eve"}, completion["values"], "%v", s)
	}

	if s := step("resources/list"); s != nil {
		var uris []string
		for _, r := range s["resources"].([]any) {
			uris = append(uris, r.(map[string]any)["uri"].(string))
		}
		checkSurfaceURIs(t, uris)
		if read := step("resources/read"); read != nil {
			require.Equal(t, uris[0], read["uri"])
			contents, _ := read["result"].(map[string]any)["contents"].([]any)
			require.NotEmpty(t, contents, "%v", read)
			first := contents[0].(map[string]any)
			require.Equal(t, uris[0], first["uri"], "%v", first)
			text, _ := first["text"].(string)
			blob, _ := first["blob"].(string)
			require.True(t, text != "" || blob != "", "contents of %s: %v", uris[0], first)
		}
	}

	if !tc.log && tc.logServer == "" {
		require.Nil(t, testenv.Step(steps, "notifications/message"), "no log messages asked for: %v", steps)
		return
	}
	if rev == "2025-11-25" {
		s := step("logging/setLevel")
		require.NotNil(t, s, "%v", steps)
		require.Equal(t, tc.level, s["level"])
	}
	toggle, long := tc.server+"_toggle-simulated-logging", tc.server+"_trigger-long-running-operation"
	var want, calls []string
	if tc.log {
		want = append(want, toggle, long)
	}
	if tc.logServer != "" {
		want = append(want, tc.logTool())
	}
	during := map[string][]surfaceLog{} // by the call in flight
	texts := map[string]string{}        // the first text of each call's result
	for _, s := range steps {
		switch s["step"] {
		case "tools/call":
			calls = append(calls, s["name"].(string))
			res, _ := s["result"].(map[string]any)
			require.NotEqual(t, true, res["isError"], "%v", s)
			if content, _ := res["content"].([]any); len(content) > 0 {
				texts[s["name"].(string)], _ = content[0].(map[string]any)["text"].(string)
			}
		case "notifications/message":
			p := s["params"].(map[string]any)
			l := surfaceLog{level: fmt.Sprint(p["level"]), logger: fmt.Sprint(p["logger"]), data: fmt.Sprint(p["data"])}
			call, _ := s["during"].(string)
			during[call] = append(during[call], l)
		}
	}
	require.Equal(t, want, calls)
	if tc.log {
		require.True(t, strings.HasPrefix(texts[toggle], "Started simulated"), "the thread's own stdio session starts logging: %q", texts[toggle])
		checkSurfaceLogs(t, tc.server, during[long])
	}
	if tc.logServer != "" {
		require.Equal(t, "Logging test completed", texts[tc.logTool()])
		checkSurfaceToolLogs(t, tc.logServer, during[tc.logTool()])
	}
}

// surfaceLog is one notifications/message a client heard.
type surfaceLog struct{ level, logger, data string }

// checkSurfaceLogs checks the log messages heard during the 11 s call:
// server-everything's simulated logging sends one every 5 s, at a random
// level (all at or above debug), named by mcpflow after the server.
func checkSurfaceLogs(t *testing.T, server string, during []surfaceLog) {
	t.Helper()
	require.NotEmpty(t, during, "log messages during the 11 s call")
	t.Logf("%d log messages during the call: %+v", len(during), during)
	for _, l := range during {
		require.Equal(t, server, l.logger, "%+v", l)
		require.Contains(t, surfaceSDKLevels, l.level, "%+v", l)
		require.Contains(t, l.data, "message", "%+v", l)
	}
}

// checkSurfaceToolLogs checks the log messages heard during the call of
// the conformance fixture's test_tool_with_logging over HTTP: its three
// info messages, in order, named by mcpflow after the server.
func checkSurfaceToolLogs(t *testing.T, server string, during []surfaceLog) {
	t.Helper()
	t.Logf("%d log messages during the %s_test_tool_with_logging call: %+v", len(during), server, during)
	var data []string
	for _, l := range during {
		require.Equal(t, "info", l.level, "%+v", l)
		require.True(t, strings.HasPrefix(l.logger, server), "logger %q names the server %s: %+v", l.logger, server, l)
		data = append(data, l.data)
	}
	require.Equal(t, surfaceSDKToolLogs, data, "the three info messages during the call")
}

// checkSurfaceServers checks that the prompts listed are those of the
// thread's servers: both in a thread of its own, everh's alone in an h-*
// thread (so that a resource read there reaches everh).
func checkSurfaceServers(t *testing.T, names []string, tc surfaceSDKCase) {
	t.Helper()
	var ever, everh bool
	for _, n := range names {
		ever = ever || strings.HasPrefix(n, "ever_")
		everh = everh || strings.HasPrefix(n, "everh_")
	}
	require.True(t, everh, "everh's prompts: %v", names)
	require.Equal(t, tc.server == "ever", ever, "ever's prompts in thread %s: %v", tc.thread, names)
}

// checkSurfaceURIs checks that resources/list listed resources, each URI
// once.
func checkSurfaceURIs(t *testing.T, uris []string) {
	t.Helper()
	require.NotEmpty(t, uris)
	seen := map[string]bool{}
	for _, u := range uris {
		require.False(t, seen[u], "%s listed twice: %v", u, uris)
		seen[u] = true
	}
}

// TestSurfaceSDKGo: the Go SDK pinned to 2025-11-25 (a session, with
// SetLoggingLevel) and negotiating 2026-07-28 (stateless, with the logLevel
// _meta on its calls), each over the stdio and the HTTP upstreams; log
// messages reach its LoggingMessageHandler.
func TestSurfaceSDKGo(t *testing.T) {
	m := startSurfaceSDK(t)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		for _, tc := range surfaceSDKCases("go-" + rev) {
			t.Run(rev+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				testSurfaceGoSDK(t, m.URL()+"/mcp/threads/"+tc.thread, rev, tc)
			})
		}
	}
}

func testSurfaceGoSDK(t *testing.T, url, rev string, tc surfaceSDKCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	// The SDK hands the notifications it reads to the handler on a goroutine
	// of their own, in order, and a call's result to its caller at once: the
	// last log messages relayed on a call's stream, read before its result,
	// can reach the handler just after the call returned. So a message is
	// counted for the call last started (each call here starts after the
	// one before returned), and a check waits for those that are late.
	var lastCall string
	during := map[string][]surfaceLog{} // by the call last started
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpflow-surface-go-sdk", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			during[lastCall] = append(during[lastCall], surfaceLog{level: string(req.Params.Level), logger: req.Params.Logger, data: fmt.Sprint(req.Params.Data)})
		},
	})
	var opts *mcp.ClientSessionOptions
	if rev == "2025-11-25" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: rev}
	}
	rt := &recordingTransport{headers: map[string]string{"Authorization": "Bearer " + testUserToken}}
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	init := session.InitializeResult()
	require.Equal(t, rev, init.ProtocolVersion)
	caps := init.Capabilities
	require.NotNil(t, caps.Prompts, "prompts declared")
	require.NotNil(t, caps.Resources, "resources declared")
	require.NotNil(t, caps.Completions, "completions declared")
	require.NotNil(t, caps.Logging, "logging declared")

	prompts, err := session.ListPrompts(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	prompt := tc.server + "_completable-prompt"
	i := slices.Index(names, prompt)
	require.GreaterOrEqual(t, i, 0, "%s in %v", prompt, names)
	var argNames []string
	for _, a := range prompts.Prompts[i].Arguments {
		argNames = append(argNames, a.Name)
	}
	require.Equal(t, []string{"department", "name"}, argNames)
	checkSurfaceServers(t, names, tc)

	got, err := session.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt, Arguments: map[string]string{"department": "Sales", "name": "Eve"}})
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	require.Equal(t, mcp.Role("user"), got.Messages[0].Role)
	text, ok := got.Messages[0].Content.(*mcp.TextContent)
	require.True(t, ok, "content %T", got.Messages[0].Content)
	require.Equal(t, surfaceSDKPrompt, text.Text)

	comp, err := session.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: prompt},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: "E"},
		Context:  &mcp.CompleteContext{Arguments: map[string]string{"department": "Sales"}},
	})
	require.NoError(t, err)
	require.Equal(t, []string{"Eve"}, comp.Completion.Values)

	resources, err := session.ListResources(ctx, nil)
	require.NoError(t, err)
	var uris []string
	for _, r := range resources.Resources {
		uris = append(uris, r.URI)
	}
	checkSurfaceURIs(t, uris)
	read, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uris[0]})
	require.NoError(t, err)
	require.NotEmpty(t, read.Contents)
	require.Equal(t, uris[0], read.Contents[0].URI)
	require.True(t, read.Contents[0].Text != "" || len(read.Contents[0].Blob) > 0, "contents of %s: %+v", uris[0], read.Contents[0])
	if rev == "2026-07-28" {
		// A ReadResourceResult is a CacheableResult on 2026-07-28: ttlMs and
		// cacheScope are required (the SDK reads an absent cacheScope as "").
		assert.Contains(t, []string{"public", "private"}, read.CacheScope, "cacheScope of the resources/read result")
	}

	if !tc.log && tc.logServer == "" {
		return
	}
	modern := rev == "2026-07-28"
	if !modern {
		require.NoError(t, session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(tc.level)}))
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		mu.Lock()
		lastCall = name
		mu.Unlock()
		params := &mcp.CallToolParams{Name: name, Arguments: args}
		if modern {
			// 2026-07-28 has no logging/setLevel: a request names its
			// level in _meta, beside the keys the SDK adds.
			params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: tc.level}
		}
		res, err := session.CallTool(ctx, params)
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		return res
	}
	heard := func(name string) []surfaceLog { // the log messages heard since call name started
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(during[name])
	}
	firstText := func(res *mcp.CallToolResult) string {
		require.NotEmpty(t, res.Content)
		tx, _ := res.Content[0].(*mcp.TextContent)
		require.NotNil(t, tx, "%v", res.Content)
		return tx.Text
	}
	if tc.log {
		toggled := firstText(call(tc.server+"_toggle-simulated-logging", map[string]any{}))
		require.True(t, strings.HasPrefix(toggled, "Started simulated"), "the thread's own stdio session starts logging: %q", toggled)
		long := tc.server + "_trigger-long-running-operation"
		call(long, map[string]any{"duration": 11, "steps": 11})
		checkSurfaceLogs(t, tc.server, heard(long))
	}
	if tc.logServer != "" {
		require.Equal(t, "Logging test completed", firstText(call(tc.logTool(), map[string]any{})))
		for deadline := time.Now().Add(5 * time.Second); len(heard(tc.logTool())) < len(surfaceSDKToolLogs) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond) // the late ones, handed to the handler after the result
		}
		checkSurfaceToolLogs(t, tc.logServer, heard(tc.logTool()))
	}
}
