package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient/workspace"
)

// TestPromptsAndResources: the reference server-everything as an upstream
// over stdio ("ever") and over streamable HTTP ("everh"); mcp-go's client
// on both revisions lists mcpflow's prompts (named like tools), gets one,
// lists resources and templates, reads one, and hears unknown ones
// answered as the spec says.
func TestPromptsAndResources(t *testing.T) {
	entry := testenv.EverythingEntry(t)
	httpURL := testenv.StartEverythingHTTP(t, entry)
	ext := fmt.Sprintf(`{"mcpServers": {
  "ever": {"type": "stdio", "command": "node", "args": [%q, "stdio"], "tool_call_timeout": 30},
  "everh": {"type": "http", "url": %q, "tool_call_timeout": 30}
}}`, entry, httpURL)
	m := waitReady(t, startMain(t, ModeDev, writeConfig(t, "workspace: { root: ws }\n", ext), nil))

	for _, rev := range []string{mcp.ProtocolVersion20251125, "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			opts := []mcpclient.ClientOption{}
			if rev == mcp.ProtocolVersion20251125 {
				opts = append(opts, mcpclient.WithProtocolVersion(rev))
			}
			c, err := mcpclient.NewStreamableHttpClient(m.URL()+"/mcp/threads/surface",
				transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testUserToken}))
			require.NoError(t, err)
			c = mcpclient.NewClient(c.GetTransport(), opts...)
			t.Cleanup(func() { _ = c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			require.NoError(t, c.Start(ctx))
			init := mcp.InitializeRequest{}
			init.Params.ClientInfo = mcp.Implementation{Name: "surface-test", Version: "1"}
			res, err := c.Initialize(ctx, init)
			require.NoError(t, err)
			require.Equal(t, rev, c.ProtocolVersion())
			require.NotNil(t, res.Capabilities.Prompts, "prompts declared")
			require.NotNil(t, res.Capabilities.Resources, "resources declared")

			prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
			require.NoError(t, err)
			byName := map[string]mcp.Prompt{}
			for _, p := range prompts.Prompts {
				byName[p.Name] = p
			}
			var simple string
			for _, server := range []string{"ever", "everh"} {
				found := false
				for name, p := range byName {
					if strings.HasPrefix(name, server+"_") && !strings.HasPrefix(name, "everh_") == (server == "ever") {
						found = true
						if len(p.Arguments) == 0 && simple == "" && server == "everh" {
							simple = name
						}
					}
				}
				require.True(t, found, "prompts of %s in %v", server, byName)
			}
			require.NotEmpty(t, simple, "a prompt without arguments: %v", byName)
			got, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: simple}})
			require.NoError(t, err)
			require.NotEmpty(t, got.Messages)

			// Arguments, and completion of a prompt's argument with the
			// context of another (the server narrows by it).
			args := map[string]string{"department": "Sales", "name": "Eve"}
			got, err = c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "ever_completable-prompt", Arguments: args}})
			require.NoError(t, err)
			require.Equal(t, "Please promote Eve to the head of the Sales team.", got.Messages[0].Content.(mcp.TextContent).Text)
			comp, err := c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{
				Ref:      mcp.PromptReference{Type: "ref/prompt", Name: "everh_completable-prompt"},
				Argument: mcp.CompleteArgument{Name: "name", Value: "E"},
				Context:  mcp.CompleteContext{Arguments: map[string]string{"department": "Sales"}},
			}})
			require.NoError(t, err)
			require.Equal(t, []string{"Eve"}, comp.Completion.Values)

			unknown := mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "ever_no-such-prompt"}}
			_, err = c.GetPrompt(ctx, unknown)
			require.ErrorContains(t, err, "unknown prompt 'ever_no-such-prompt'")

			resources, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			require.NoError(t, err)
			require.NotEmpty(t, resources.Resources)
			uris := map[string]bool{}
			for _, r := range resources.Resources {
				require.False(t, uris[r.URI], "%s listed twice: both servers have it, the first keeps it", r.URI)
				uris[r.URI] = true
			}
			first := resources.Resources[0]
			read, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: first.URI}})
			require.NoError(t, err)
			require.NotEmpty(t, read.Contents)
			switch rc := read.Contents[0].(type) {
			case mcp.TextResourceContents:
				require.Equal(t, first.URI, rc.URI)
			case mcp.BlobResourceContents:
				require.Equal(t, first.URI, rc.URI)
				require.NotEmpty(t, rc.Blob)
			default:
				t.Fatalf("contents %T", rc)
			}

			templates, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
			require.NoError(t, err)
			require.NotEmpty(t, templates.ResourceTemplates)

			_, err = c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "demo://no/such/resource"}})
			require.ErrorContains(t, err, "Resource not found")
		})
	}

	// On the wire (2026-07-28): an unknown resource is -32602 with its URI
	// in data (SEP-2164), an unknown prompt -32602, params checked.
	raw := &rpc2026{url: m.URL() + "/mcp/threads/surface", token: testUserToken}
	for _, tc := range []struct {
		method, name string
		params       map[string]any
		code         float64
		text         string
	}{
		{"resources/read", "demo://none", map[string]any{"uri": "demo://none"}, -32602, "Resource not found"},
		{"prompts/get", "nope", map[string]any{"name": "nope"}, -32602, "unknown prompt 'nope'"},
		{"prompts/get", "everh_simple-prompt", map[string]any{"name": "everh_simple-prompt", "arguments": []any{1}}, -32602, "arguments must be an object"},
		{"resources/read", "", map[string]any{}, -32602, "needs params.uri"},
	} {
		out, err := raw.trySend(tc.method, tc.name, tc.params)
		require.NoError(t, err)
		e, _ := out["error"].(map[string]any)
		require.NotNil(t, e, "%s %v: %v", tc.method, tc.params, out)
		require.Equal(t, tc.code, e["code"], "%v", e)
		require.Contains(t, e["message"], tc.text)
		if tc.method == "resources/read" && tc.name != "" {
			require.Equal(t, map[string]any{"uri": "demo://none"}, e["data"])
		}
	}

	// Under policies by server: a server-wide deny closes everh's prompts
	// and resources; ever's stay.
	gov := strings.Replace(ext, `"mcpServers"`, `"policies": {"default": "allow", "rules": [{"name": "no-everh", "effect": "deny", "servers": ["everh"]}],
  "limits": [{"name": "ever-reads", "servers": ["ever"], "per_minute": 1, "burst": 1}, {"name": "add-only", "tools": ["ever_get-sum"], "per_minute": 1, "burst": 1}]}, "mcpServers"`, 1)
	g := waitReady(t, startMain(t, ModeDev, writeConfig(t, "workspace: { root: ws }\n", gov), nil))
	graw := &rpc2026{url: g.URL() + "/mcp/threads/surface", token: testUserToken}
	out, err := graw.trySend("prompts/list", "", map[string]any{})
	require.NoError(t, err)
	res, _ := out["result"].(map[string]any)
	require.NotNil(t, res, "%v", out)
	var names []string
	for _, p := range res["prompts"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	require.Contains(t, names, "ever_simple-prompt")
	require.NotContains(t, names, "everh_simple-prompt")
	out, err = graw.trySend("prompts/get", "everh_simple-prompt", map[string]any{"name": "everh_simple-prompt"})
	require.NoError(t, err)
	require.Equal(t, "unknown prompt 'everh_simple-prompt'", out["error"].(map[string]any)["message"])

	// The server's limit that names no tool counts prompts/get and
	// resources/read (one a minute): the second is refused with when to
	// retry; the limit of one tool does not count them.
	out, err = graw.trySend("prompts/get", "ever_simple-prompt", map[string]any{"name": "ever_simple-prompt"})
	require.NoError(t, err)
	require.NotNil(t, out["result"], "%v", out)
	_, err = graw.trySend("resources/read", "demo://x", map[string]any{"uri": "demo://resource/static/document/architecture.md"})
	require.ErrorContains(t, err, "HTTP 429")
	require.ErrorContains(t, err, `rate limit "ever-reads" reached; retry in 60 s`)
	require.ErrorContains(t, err, "retryAfterSeconds:60")
}

// logClient is a 2025-11-25 client of url, initialized, that keeps the
// notifications/message it hears (got returns them so far).
func logClient(t *testing.T, ctx context.Context, url, name string) (c *mcpclient.Client, got func() []mcp.JSONRPCNotification) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testUserToken}))
	require.NoError(t, err)
	c = mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.ProtocolVersion20251125))
	t.Cleanup(func() { _ = c.Close() })
	var mu sync.Mutex
	var heard []mcp.JSONRPCNotification
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/message" {
			mu.Lock()
			heard = append(heard, n)
			mu.Unlock()
		}
	})
	require.NoError(t, c.Start(ctx))
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: name, Version: "1"}}})
	require.NoError(t, err)
	require.NotNil(t, res.Capabilities.Logging, "logging declared")
	return c, func() []mcp.JSONRPCNotification {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(heard)
	}
}

// TestLogRelay: a stdio upstream's log messages (server-everything's
// simulated logging, every 5 s at a random level) reach a 2025-11-25
// caller during its call once it set a level, named by the server in
// logger; a caller without a level hears none.
func TestLogRelay(t *testing.T) {
	entry := testenv.EverythingEntry(t)
	ext := fmt.Sprintf(`{"mcpServers": {"ever": {"type": "stdio", "command": "node", "args": [%q, "stdio"], "tool_call_timeout": 60}}}`, entry)
	m := waitReady(t, startMain(t, ModeDev, writeConfig(t, "workspace: { root: ws }\n", ext), nil))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(thread string) (*mcpclient.Client, func() []mcp.JSONRPCNotification) {
		return logClient(t, ctx, m.URL()+"/mcp/threads/"+thread, "log-test")
	}
	call := func(c *mcpclient.Client, name string, args map[string]any) {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
	}

	quiet, quietGot := connect("logs")
	loud, got := connect("logs")
	require.NoError(t, loud.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}))
	_, err := loud.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ever_toggle-simulated-logging"}})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		call(quiet, "ever_trigger-long-running-operation", map[string]any{"duration": 11, "steps": 11})
	}()
	call(loud, "ever_trigger-long-running-operation", map[string]any{"duration": 11, "steps": 11})
	wg.Wait()

	require.NotEmpty(t, got(), "log messages during the call")
	for _, n := range got() {
		require.Equal(t, "ever", n.Params.AdditionalFields["logger"], "%v", n.Params.AdditionalFields)
		require.Contains(t, fmt.Sprint(n.Params.AdditionalFields["data"]), "message")
	}
	require.Empty(t, quietGot(), "no level, no log messages")

	err = quiet.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: "loud"}})
	require.ErrorContains(t, err, "params.level must be one of debug, info")
}

// sampler answers sampling/createMessage as a host's model would.
type sampler struct{ asked chan string }

func (s sampler) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	s.asked <- req.Messages[0].Content.(mcp.TextContent).Text
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("a sampled answer")},
		Model: "test-model", StopReason: "endTurn"}, nil
}

// TestSamplingRelay: a 2025-11-25 upstream (server-everything over stdio
// and over streamable HTTP, which offers its sampling tool to a client that
// declares sampling) asks for sampling during an ordinary call; mcpflow
// asks its 2025-11-25 caller on the call's stream, and the caller's answer
// reaches the server.
func TestSamplingRelay(t *testing.T) {
	entry := testenv.EverythingEntry(t)
	httpURL := testenv.StartEverythingHTTP(t, entry)
	ext := fmt.Sprintf(`{"mcpServers": {
  "ever": {"type": "stdio", "command": "node", "args": [%q, "stdio"], "tool_call_timeout": 60},
  "everh": {"type": "http", "url": %q, "tool_call_timeout": 60, "forward_roots": true}
}}`, entry, httpURL)
	m := waitReady(t, startMain(t, ModeDev, writeConfig(t, "workspace: { root: ws }\n", ext), nil))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr, err := transport.NewStreamableHTTP(m.URL()+"/mcp/threads/sampling",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testUserToken}), transport.WithContinuousListening())
	require.NoError(t, err)
	s := sampler{asked: make(chan string, 1)}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.ProtocolVersion20251125), mcpclient.WithSamplingHandler(s))
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(ctx))
	_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "sampler", Version: "1"}}})
	require.NoError(t, err)
	for _, server := range []string{"ever", "everh"} {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: server + "_trigger-sampling-request",
			Arguments: map[string]any{"prompt": "What is 2+2 on " + server + "?"}}})
		require.NoError(t, err, server)
		require.False(t, res.IsError, "%s: %v", server, res.Content)
		require.Contains(t, <-s.asked, "What is 2+2 on "+server+"?")
		require.Contains(t, res.Content[0].(mcp.TextContent).Text, "a sampled answer", server)
	}
	// server-everything offers get-roots-list to a client that declared
	// roots: mcpflow declares them to the HTTP server with forward_roots,
	// never to a stdio one, which runs on this host.
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
	}
	require.True(t, names["everh_get-roots-list"], "%v", names)
	require.False(t, names["ever_get-roots-list"], "%v", names)
}

// subscriber is a 2025-11-25 client of url with its GET stream, initialized
// (resources.subscribe declared), and the URIs of the
// notifications/resources/updated it hears.
func subscriber(t *testing.T, ctx context.Context, url string) (*mcpclient.Client, chan string) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testUserToken}), transport.WithContinuousListening())
	require.NoError(t, err)
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.ProtocolVersion20251125))
	t.Cleanup(func() { _ = c.Close() })
	updates := make(chan string, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/resources/updated" {
			updates <- fmt.Sprint(n.Params.AdditionalFields["uri"])
		}
	})
	require.NoError(t, c.Start(ctx))
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "subs", Version: "1"}}})
	require.NoError(t, err)
	require.True(t, res.Capabilities.Resources.Subscribe)
	return c, updates
}

// listenTo opens a 2026-07-28 subscriptions/listen naming uri in
// resourceSubscriptions; next returns its next message (failing after
// 20 s or when the stream ended). The stream ends with ctx.
func listenTo(t *testing.T, ctx context.Context, raw *rpc2026, uri string) (next func() map[string]any) {
	t.Helper()
	resp := raw.request(t, ctx, "subscriptions/listen", "", map[string]any{
		"notifications": map[string]any{"resourceSubscriptions": []any{uri}}})
	t.Cleanup(func() { _ = resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := sseFrames(resp.Body)
	return func() map[string]any {
		t.Helper()
		select {
		case e, ok := <-events:
			require.True(t, ok, "the stream ended")
			return e
		case <-time.After(20 * time.Second):
			t.Fatal("no event on the listen stream")
		}
		return nil
	}
}

// TestResourceSubscriptions: a 2025-11-25 session subscribes to a resource
// of server-everything, over stdio and over streamable HTTP; the server's
// updates (its toggle-subscriber-updates tool: one at once, then every
// 5 s) reach the session's GET stream as notifications/resources/updated,
// and none after it unsubscribed.
func TestResourceSubscriptions(t *testing.T) {
	entry := testenv.EverythingEntry(t)
	httpURL := testenv.StartEverythingHTTP(t, entry)
	for _, tc := range []struct{ name, server string }{
		{"stdio", fmt.Sprintf(`"ever": {"type": "stdio", "command": "node", "args": [%q, "stdio"], "tool_call_timeout": 60}`, entry)},
		{"http", fmt.Sprintf(`"ever": {"type": "http", "url": %q, "tool_call_timeout": 60}`, httpURL)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := waitReady(t, startMain(t, ModeDev, writeConfig(t, "workspace: { root: ws }\n", `{"mcpServers": {`+tc.server+`}}`), nil))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, updates := subscriber(t, ctx, m.URL()+"/mcp/threads/subs")
			list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			require.NoError(t, err)
			uri := list.Resources[0].URI
			require.NoError(t, c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}))
			// The client opens its GET stream in the background: an update
			// sent before it is open is lost, and the next comes 5 s later.
			_, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ever_toggle-subscriber-updates"}})
			require.NoError(t, err)
			select {
			case got := <-updates:
				require.Equal(t, uri, got)
			case <-time.After(15 * time.Second):
				t.Fatal("no notifications/resources/updated")
			}
			require.NoError(t, c.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}))
			for len(updates) > 0 {
				<-updates
			}
			select {
			case got := <-updates:
				t.Fatalf("an update after unsubscribing: %s", got)
			case <-time.After(6 * time.Second):
			}
		})
	}
}

// TestResourceSubscriptions2026: a 2026-07-28 client's subscriptions/listen
// names a resource of server-everything (stdio) in resourceSubscriptions;
// the acknowledgement names it, and the
// server's updates come on the listen stream with the subscription's id.
func TestResourceSubscriptions2026(t *testing.T) {
	entry := testenv.EverythingEntry(t)
	ext := fmt.Sprintf(`{"mcpServers": {"ever": {"type": "stdio", "command": "node", "args": [%q, "stdio"], "tool_call_timeout": 60}}}`, entry)
	m := waitReady(t, startMain(t, ModeDev, writeConfig(t, "workspace: { root: ws }\n", ext), nil))
	raw := &rpc2026{url: m.URL() + "/mcp/threads/subs26", token: testUserToken}
	list := raw.call(t, "resources/list", "", map[string]any{})
	uri := list["resources"].([]any)[0].(map[string]any)["uri"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	next := listenTo(t, ctx, raw, uri)
	ack := next()
	require.Equal(t, "notifications/subscriptions/acknowledged", ack["method"])
	require.Equal(t, []any{uri}, ack["params"].(map[string]any)["notifications"].(map[string]any)["resourceSubscriptions"])
	raw.call(t, "tools/call", "ever_toggle-subscriber-updates", map[string]any{"name": "ever_toggle-subscriber-updates", "arguments": map[string]any{}})
	upd := next()
	require.Equal(t, "notifications/resources/updated", upd["method"], "%v", upd)
	params := upd["params"].(map[string]any)
	require.Equal(t, uri, params["uri"])
	require.NotNil(t, params["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"], "%v", params)
}

// TestListChanged: an upstream's notifications/prompts/list_changed (an
// mcp-go server adding a prompt, over streamable HTTP, pinned to
// 2025-11-25 and speaking 2026-07-28) reaches a 2025-11-25 session's GET
// stream and a 2026-07-28 client's subscriptions/listen that asked for it.
func TestListChanged(t *testing.T) {
	var ups []*mcpserver.MCPServer
	var urls []string
	for range 2 {
		up := mcpserver.NewMCPServer("up", "1", mcpserver.WithPromptCapabilities(true))
		up.AddPrompt(mcp.NewPrompt("first"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("first", nil), nil
		})
		h := mcpserver.NewStreamableHTTPServer(up)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		ups, urls = append(ups, up), append(urls, srv.URL+"/mcp")
	}
	ext := fmt.Sprintf(`{"mcpServers": {
  "up25": {"type": "http", "url": %q, "protocol_version": "2025-11-25"},
  "up26": {"type": "http", "url": %q}
}}`, urls[0], urls[1])
	m := waitReady(t, startMain(t, ModeDev, writeConfig(t, "", ext), nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addPrompt := func(i int, name string) {
		ups[i].AddPrompt(mcp.NewPrompt(name), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult(name, nil), nil
		})
	}

	// 2025-11-25: the session's GET stream.
	tr, err := transport.NewStreamableHTTP(m.URL()+"/mcp/threads/lists",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testUserToken}), transport.WithContinuousListening())
	require.NoError(t, err)
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.ProtocolVersion20251125))
	t.Cleanup(func() { _ = c.Close() })
	changed := make(chan string, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if strings.HasSuffix(n.Method, "/list_changed") {
			changed <- n.Method
		}
	})
	require.NoError(t, c.Start(ctx))
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "lists", Version: "1"}}})
	require.NoError(t, err)
	require.True(t, res.Capabilities.Prompts.ListChanged)
	wait := func(what string) string {
		select {
		case got := <-changed:
			return got
		case <-time.After(15 * time.Second):
			t.Fatalf("no list_changed %s", what)
		}
		return ""
	}
	for i, name := range []string{"from-25", "from-26"} {
		require.Eventually(t, func() bool { // the GET stream and the watches are up
			addPrompt(i, name+"-probe")
			select {
			case <-changed:
				return true
			case <-time.After(300 * time.Millisecond):
				return false
			}
		}, 10*time.Second, 10*time.Millisecond, "server %d", i)
		for len(changed) > 0 {
			<-changed
		}
		addPrompt(i, name)
		require.Equal(t, "notifications/prompts/list_changed", wait(name))
		list, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
		require.NoError(t, err)
		require.True(t, slices.ContainsFunc(list.Prompts, func(p mcp.Prompt) bool { return strings.HasSuffix(p.Name, "_"+name) }), "%v", list.Prompts)
	}

	// 2026-07-28: subscriptions/listen with promptsListChanged.
	raw := &rpc2026{url: m.URL() + "/mcp/threads/lists26", token: testUserToken}
	resp := raw.request(t, ctx, "subscriptions/listen", "", map[string]any{"notifications": map[string]any{"promptsListChanged": true}})
	defer resp.Body.Close()
	events := sseFrames(resp.Body)
	ack := <-events
	require.Equal(t, true, ack["params"].(map[string]any)["notifications"].(map[string]any)["promptsListChanged"], "%v", ack)
	for i := range 2 {
		require.Eventually(t, func() bool {
			addPrompt(i, fmt.Sprintf("listen-%d", i))
			select {
			case e := <-events:
				return e["method"] == "notifications/prompts/list_changed"
			case <-time.After(300 * time.Millisecond):
				return false
			}
		}, 10*time.Second, 10*time.Millisecond, "server %d on the listen stream", i)
	}
}

// TestPromptInputRequired2025: a prompt whose 2026-07-28 server answers
// input_required (the conformance fixture's) is refused with a clear error
// to a 2025-11-25 client, which cannot be asked for it on prompts/get; a
// 2026-07-28 client gets the input_required as the server wrote it.
func TestPromptInputRequired2025(t *testing.T) {
	testenv.Node2026(t)
	fixture := testenv.StartConformanceFixture(t)
	ext := fmt.Sprintf(`{"mcpServers": {"conformance": {"type": "http", "url": %q, "tool_name_prefix": false}}}`, fixture)
	m := waitReady(t, startMain(t, ModeDev, writeConfig(t, "", ext), nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := mcpclient.NewStreamableHttpClient(m.URL()+"/mcp/threads/ir",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testUserToken}))
	require.NoError(t, err)
	c = mcpclient.NewClient(c.GetTransport(), mcpclient.WithProtocolVersion(mcp.ProtocolVersion20251125))
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(ctx))
	_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "ir", Version: "1"}}})
	require.NoError(t, err)
	_, err = c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "test_input_required_result_prompt"}})
	require.ErrorContains(t, err, "prompt 'test_input_required_result_prompt' asks for input (input_required), which mcpflow relays on prompts/get to 2026-07-28 clients only")
	got, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "test_simple_prompt"}})
	require.NoError(t, err)
	require.NotEmpty(t, got.Messages)

	raw := &rpc2026{url: m.URL() + "/mcp/threads/ir26", token: testUserToken}
	res := raw.call(t, "prompts/get", "test_input_required_result_prompt", map[string]any{"name": "test_input_required_result_prompt"})
	require.Equal(t, "input_required", res["resultType"], "%v", res)
	require.NotEmpty(t, res["inputRequests"])
}

// rooter answers roots/list with one root and counts the requests.
type rooter struct{ asked chan struct{} }

func (r rooter) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	r.asked <- struct{}{}
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///home/caller/project", Name: "project"}}}, nil
}

// TestRootsRelay: a server over streamable HTTP pinned to 2025-11-25 with
// forward_roots (the conformance fixture, which asks roots/list on the
// call's stream) asks for the caller's roots during an ordinary call;
// mcpflow asks its 2025-11-25 caller, which declared roots, and the answer
// reaches the server. The same server without forward_roots is told of no
// roots, and the caller is not asked. A caller that did not declare roots is not asked, and the call
// fails. A stdio server is never told of
// roots (it runs on mcpflow's host): a 2026-07-28 stdio call's declared
// capabilities lose them (TestWithoutRoots).
func TestRootsRelay(t *testing.T) {
	testenv.Node2026(t)
	fixture := testenv.StartConformanceFixture(t)
	ext := fmt.Sprintf(`{"mcpServers": {
  "conformance": {"type": "http", "url": %q, "tool_name_prefix": false, "protocol_version": "2025-11-25", "forward_roots": true},
  "plain": {"type": "http", "url": %[1]q, "protocol_version": "2025-11-25"}}}`, fixture)
	m := waitReady(t, startMain(t, ModeDev, writeConfig(t, "", ext), nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := func(thread string, opts ...mcpclient.ClientOption) *mcpclient.Client {
		tr, err := transport.NewStreamableHTTP(m.URL()+"/mcp/threads/"+thread,
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testUserToken}))
		require.NoError(t, err)
		c := mcpclient.NewClient(tr, append(opts, mcpclient.WithProtocolVersion(mcp.ProtocolVersion20251125))...)
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, c.Start(ctx))
		_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "roots", Version: "1"}}})
		require.NoError(t, err)
		return c
	}
	r := rooter{asked: make(chan struct{}, 4)}
	c := dial("roots", mcpclient.WithRootsHandler(r))
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "test_input_required_result_list_roots"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, "Client roots: file:///home/caller/project", res.Content[0].(mcp.TextContent).Text)
	require.Len(t, r.asked, 1, "the caller was asked once")
	<-r.asked

	// Without forward_roots (the default) mcpflow declares no roots to the
	// server, and does not ask the caller.
	res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "plain_test_input_required_result_list_roots"}})
	if err == nil {
		require.True(t, res.IsError, "the call cannot succeed without roots: %v", res.Content)
	}
	require.Empty(t, r.asked, "the caller was not asked for a server without forward_roots")

	plain := dial("noroots")
	res, err = plain.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "test_input_required_result_list_roots"}})
	// mcpflow answers the server's roots/list -32601, as a client without
	// roots does; the fixture raises it as its call's error, which
	// mcpflow reads as it reads any -32601 answer to tools/call.
	if err == nil {
		require.True(t, res.IsError, "the call cannot succeed without roots: %v", res.Content)
	}
	require.Empty(t, r.asked, "the other caller was not asked")
}

// TestContentBound: with server.max_content_bytes at 2048, server-everything's
// 9.9 kB features.md read through mcpflow (MCP) comes cut, with a notice item
// and _meta saying how large it was; its echo of a 5000-character message
// comes cut with a notice block, over MCP and REST; a small read is whole.
func TestContentBound(t *testing.T) {
	entry := testenv.EverythingEntry(t)
	ext := fmt.Sprintf(`{"mcpServers": {"ever": {"type": "stdio", "command": "node", "args": [%q, "stdio"], "tool_call_timeout": 30}}}`, entry)
	path := writeConfig(t, "workspace: { root: ws }\n", ext)
	cfg, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, bytes.Replace(cfg, []byte("shutdown_timeout_seconds: 2 }"), []byte("shutdown_timeout_seconds: 2, max_content_bytes: 2048 }"), 1), 0o600))
	m := waitReady(t, startMain(t, ModeDev, path, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := mcpclient.NewStreamableHttpClient(m.URL()+"/mcp/threads/bound",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testUserToken}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(ctx))
	_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "bound", Version: "1"}}})
	require.NoError(t, err)

	const uri = "demo://resource/static/document/features.md"
	read, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	require.NoError(t, err)
	require.Len(t, read.Contents, 2, "the cut document and the notice")
	doc := read.Contents[0].(mcp.TextResourceContents)
	require.Equal(t, uri, doc.URI)
	require.NotEmpty(t, doc.Text)
	require.Less(t, len(doc.Text), 2048)
	notice := read.Contents[1].(mcp.TextResourceContents)
	require.Equal(t, uri, notice.URI)
	require.Contains(t, notice.Text, "was cut to fit server.max_content_bytes (2048): 0 of 1 contents kept whole")
	require.NotNil(t, read.Meta)
	require.Equal(t, float64(2048), read.Meta.AdditionalFields["io.mcpflow/truncated"].(map[string]any)["limitBytes"])

	small, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "demo://resource/static/document/extension.md"}})
	require.NoError(t, err)
	require.Len(t, small.Contents, 1, "965 bytes: whole")

	long := strings.Repeat("x", 5000)
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ever_echo", Arguments: map[string]any{"message": long}}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Len(t, res.Content, 2)
	require.Contains(t, res.Content[1].(mcp.TextContent).Text, "was cut to fit server.max_content_bytes (2048): 0 of 1 content blocks kept whole")

	code, body, err := callAs(ctx, t, m.URL(), "bound", "ever_echo", `{"message": "`+long+`"}`)
	require.NoError(t, err)
	require.Equal(t, 200, code, "%v", body)
	content := body["content"].([]any)
	require.Len(t, content, 2)
	require.Contains(t, content[1].(map[string]any)["text"], "server.max_content_bytes (2048)")
}

// TestLogLevelThreshold: the conformance fixture pinned to 2025-11-25 logs
// three info messages during test_tool_with_logging; a 2025-11-25 caller
// at level info hears all three, named by the server in logger, one at
// warning hears none (mcpflow drops what is below the caller's level: the
// shared upstream session has one level for every caller); a 2026-07-28
// request through a 2026 upstream with _meta logLevel "info" hears them
// too, and one at error none.
func TestLogLevelThreshold(t *testing.T) {
	testenv.Node2026(t)
	fixture := testenv.StartConformanceFixture(t)
	ext := fmt.Sprintf(`{"mcpServers": {
  "old": {"type": "http", "url": %q, "protocol_version": "2025-11-25"},
  "new": {"type": "http", "url": %[1]q}}}`, fixture)
	m := waitReady(t, startMain(t, ModeDev, writeConfig(t, "", ext), nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hear := func(level mcp.LoggingLevel) []mcp.JSONRPCNotification {
		c, got := logClient(t, ctx, m.URL()+"/mcp/threads/levels", "levels")
		require.NoError(t, c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: level}}))
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "old_test_tool_with_logging"}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		return got()
	}
	info := hear(mcp.LoggingLevelInfo)
	require.Len(t, info, 3, "every info message at level info")
	for _, n := range info {
		require.Equal(t, "info", n.Params.AdditionalFields["level"])
		require.True(t, strings.HasPrefix(fmt.Sprint(n.Params.AdditionalFields["logger"]), "old"), "%v", n.Params.AdditionalFields)
	}
	require.Empty(t, hear(mcp.LoggingLevelWarning), "info is below warning")

	for _, tc := range []struct {
		level string
		want  int
	}{{"info", 3}, {"error", 0}} {
		raw := &rpc2026{url: m.URL() + "/mcp/threads/levels26", token: testUserToken, extra: map[string]any{"io.modelcontextprotocol/logLevel": tc.level}}
		resp := raw.request(t, ctx, "tools/call", "new_test_tool_with_logging", map[string]any{"name": "new_test_tool_with_logging"})
		logs, answered := 0, false
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			// Nothing relayed: no stream, the answer alone.
			var out map[string]any
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
			answered = out["result"] != nil
		}
		for f := range sseFrames(resp.Body) {
			if f["method"] == "notifications/message" {
				logs++
			}
			answered = answered || f["result"] != nil
		}
		_ = resp.Body.Close()
		require.True(t, answered, "level %s: the call answered", tc.level)
		require.Equal(t, tc.want, logs, "level %s", tc.level)
	}
}

// TestForeignFileURIs: a stdio server that reads any file: URI (a test
// server) serves alice's own workspace files through mcpflow, while a URI
// of another user's workspace, of another of alice's threads, or one that
// climbs out of her workspace with ".." (escaped or not) answers as an
// unknown resource (SEP-2164) without reaching the server.
func TestForeignFileURIs(t *testing.T) {
	entry := filepath.Join(testenv.RepoRoot(), "internal", "testdata", "npm", "file_resources_server.mjs")
	testenv.EverythingEntry(t) // skips without node and the npm packages
	ext := fmt.Sprintf(`{"mcpServers": {"files": {"type": "stdio", "command": "node", "args": [%q]}}}`, entry)
	path := writeConfig(t, "workspace: { root: ws }\n", ext)
	m := waitReady(t, startMain(t, ModeDev, path, nil))
	root := filepath.Join(filepath.Dir(path), "ws")
	alice, err := workspace.Prepare(root, "alice", "files")
	require.NoError(t, err)
	bob, err := workspace.Prepare(root, "bob", "files")
	require.NoError(t, err)
	other, err := workspace.Prepare(root, "alice", "other")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(alice.UserData, "mine.txt"), []byte("alice's notes"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(bob.UserData, "secret.txt"), []byte("bob's secret"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(other.UserData, "elsewhere.txt"), []byte("another thread"), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := mcpclient.NewStreamableHttpClient(m.URL()+"/mcp/threads/files",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testUserToken}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(ctx))
	_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "files", Version: "1"}}})
	require.NoError(t, err)

	own, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "file://" + filepath.Join(alice.UserData, "mine.txt")}})
	require.NoError(t, err)
	require.Equal(t, "alice's notes", own.Contents[0].(mcp.TextResourceContents).Text)

	require.Equal(t, filepath.Join(bob.UserData, "secret.txt"), filepath.Clean(alice.UserData+"/../../../../bob/threads/files/user-data/secret.txt"),
		"the climbing URIs below name bob's file")
	for _, uri := range []string{
		"file://" + filepath.Join(bob.UserData, "secret.txt"),
		"file://" + filepath.Join(other.UserData, "elsewhere.txt"),
		"file://" + alice.UserData + "/../../../../bob/threads/files/user-data/secret.txt",
		"file://" + alice.UserData + "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/bob/threads/files/user-data/secret.txt",
	} {
		_, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
		require.Error(t, err, uri)
		require.NotContains(t, err.Error(), "secret", uri)
		require.Contains(t, err.Error(), "Resource not found", uri)
	}
}

// TestResourceSubscriptionsUpstream2026: a subscription through mcpflow to
// a server that speaks 2026-07-28 over streamable HTTP (the conformance
// fixture) is held with mcpflow's own subscriptions/listen naming the URI;
// the server's update reaches a 2025-11-25 session's GET stream and a
// 2026-07-28 client's subscriptions/listen, and no update reaches the
// 2025 session after it unsubscribed.
func TestResourceSubscriptionsUpstream2026(t *testing.T) {
	testenv.Node2026(t)
	fixture := testenv.StartConformanceFixture(t)
	ext := fmt.Sprintf(`{"mcpServers": {"new": {"type": "http", "url": %q, "tool_name_prefix": false, "protocol_version": "2026-07-28"}}}`, fixture)
	m := waitReady(t, startMain(t, ModeDev, writeConfig(t, "", ext), nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const uri = "test://watched-resource"
	trigger := func() {
		t.Helper()
		raw := &rpc2026{url: m.URL() + "/mcp/threads/trigger", token: testUserToken}
		raw.call(t, "tools/call", "test_trigger_resource_update", map[string]any{"name": "test_trigger_resource_update", "arguments": map[string]any{}})
	}

	// 2026-07-28 caller.
	raw := &rpc2026{url: m.URL() + "/mcp/threads/subs26", token: testUserToken}
	next := listenTo(t, ctx, raw, uri)
	ack := next()
	require.Equal(t, "notifications/subscriptions/acknowledged", ack["method"], "%v", ack)
	require.Equal(t, []any{uri}, ack["params"].(map[string]any)["notifications"].(map[string]any)["resourceSubscriptions"])
	trigger()
	upd := next()
	require.Equal(t, "notifications/resources/updated", upd["method"], "%v", upd)
	require.Equal(t, uri, upd["params"].(map[string]any)["uri"])

	// 2025-11-25 caller.
	c, updates := subscriber(t, ctx, m.URL()+"/mcp/threads/subs25")
	require.NoError(t, c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}))
	// The client opens its GET stream in the background: announce until
	// an update arrives.
	require.Eventually(t, func() bool {
		trigger()
		select {
		case got := <-updates:
			return got == uri
		case <-time.After(500 * time.Millisecond):
			return false
		}
	}, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, c.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}))
	for len(updates) > 0 {
		<-updates
	}
	trigger()
	select {
	case got := <-updates:
		t.Fatalf("an update after unsubscribing: %s", got)
	case <-time.After(2 * time.Second):
	}
	// The 2026 listen stream, still open, heard the later announcements.
	require.Equal(t, "notifications/resources/updated", next()["method"])
}
