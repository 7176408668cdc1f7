package question

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// elicitRequest is an elicitation/create related to taskID ("" for none).
func elicitRequest(taskID string) transport.JSONRPCRequest {
	params := map[string]any{
		"message":         "Which one?",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"pick": map[string]any{"type": "string"}}},
	}
	if taskID != "" {
		params["_meta"] = map[string]any{relatedTaskMeta: map[string]any{"taskId": taskID}}
	}
	return transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(7)), Method: string(mcp.MethodElicitationCreate), Params: params}
}

// TestQuestionsLifecycle: a question related to a task whose reader runs is
// held until its answer, which is sent once; a retried delivery is not sent
// again; the question is gone when the reader ends.
func TestQuestionsLifecycle(t *testing.T) {
	q := New()
	defer q.Close()
	key := Key{Server: "s", TaskID: "t1"}
	stop := make(chan struct{})
	reader := func(ctx context.Context) error {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		return nil
	}
	require.Nil(t, q.Ask(context.Background(), key, reader), "no question yet: ask waits, then reports none")
	require.False(t, q.Waiting(key) != nil)
	require.ErrorIs(t, q.Answer(context.Background(), key, mcpflow.InputAnswer{Action: "decline"}), mcpflow.ErrInputGone)

	var sent []*transport.JSONRPCResponse
	done := make(chan *transport.JSONRPCResponse, 1)
	go func() {
		done <- q.Elicit(context.Background(), "s", elicitRequest("t1"), func(r *transport.JSONRPCResponse) error {
			sent = append(sent, r)
			return nil
		})
	}()
	require.Eventually(t, func() bool { return q.Waiting(key) != nil }, 5*time.Second, 10*time.Millisecond)
	hq := q.Ask(context.Background(), key, reader)
	require.NotNil(t, hq, "the reader runs: ask answers the held question at once")
	require.Equal(t, "Which one?", hq.Message)
	require.Equal(t, "object", hq.Schema["type"])

	require.NoError(t, q.Answer(context.Background(), key, mcpflow.InputAnswer{Action: "accept", Content: map[string]any{"pick": "b"}}))
	require.Nil(t, <-done, "the answer was the response")
	require.Len(t, sent, 1)
	var res map[string]any
	require.NoError(t, json.Unmarshal(sent[0].Result, &res))
	require.Equal(t, map[string]any{"action": "accept", "content": map[string]any{"pick": "b"}}, res)
	require.Nil(t, q.Waiting(key), "an answered question waits no more")
	require.NoError(t, q.Answer(context.Background(), key, mcpflow.InputAnswer{Action: "decline"}), "a retried delivery succeeds")
	require.Len(t, sent, 1, "and sends nothing")

	close(stop)
	require.Eventually(t, func() bool {
		return errors.Is(q.Answer(context.Background(), key, mcpflow.InputAnswer{Action: "decline"}), mcpflow.ErrInputGone)
	}, 5*time.Second, 10*time.Millisecond, "the reader ended: the question is gone")
}

// TestQuestionsGoneWithTheReader: a question whose tasks/result request
// ends unanswered is gone, and its elicitation answers nothing.
func TestQuestionsGoneWithTheReader(t *testing.T) {
	q := New()
	defer q.Close()
	key := Key{Server: "s", TaskID: "t2"}
	stop := make(chan struct{})
	q.Ask(context.Background(), key, func(context.Context) error { <-stop; return nil })
	done := make(chan *transport.JSONRPCResponse, 1)
	go func() {
		done <- q.Elicit(context.Background(), "s", elicitRequest("t2"), func(*transport.JSONRPCResponse) error {
			t.Error("nothing is sent")
			return nil
		})
	}()
	require.Eventually(t, func() bool { return q.Waiting(key) != nil }, 5*time.Second, 10*time.Millisecond)
	close(stop)
	require.Nil(t, <-done)
	require.Nil(t, q.Waiting(key))
	require.ErrorIs(t, q.Answer(context.Background(), key, mcpflow.InputAnswer{Action: "cancel"}), mcpflow.ErrInputGone)
}

// TestQuestionsRefused: elicitations mcpflow cannot relate to a task it
// reads, and URL-mode ones, are refused with a JSON-RPC error; a failed
// send keeps the question for another delivery.
func TestQuestionsRefused(t *testing.T) {
	q := New()
	defer q.Close()
	never := func(*transport.JSONRPCResponse) error { t.Error("nothing is sent"); return nil }
	for name, req := range map[string]transport.JSONRPCRequest{
		"no related task":     elicitRequest(""),
		"a task nobody reads": elicitRequest("unknown"),
		"url mode": func() transport.JSONRPCRequest {
			r := elicitRequest("t3")
			r.Params.(map[string]any)["mode"] = "url"
			return r
		}(),
		"another server's key": elicitRequest("t3"),
	} {
		server := "s"
		if name == "another server's key" {
			server = "other"
		}
		if name == "url mode" || name == "another server's key" {
			q.Ask(context.Background(), Key{Server: "s", TaskID: "t3"}, func(ctx context.Context) error { <-ctx.Done(); return nil })
		}
		resp := q.Elicit(context.Background(), server, req, never)
		require.NotNil(t, resp, name)
		require.NotNil(t, resp.Error, name)
		require.Equal(t, mcp.INVALID_REQUEST, resp.Error.Code, name)
	}

	key := Key{Server: "s", TaskID: "t4"}
	q.Ask(context.Background(), key, func(ctx context.Context) error { <-ctx.Done(); return nil })
	fail := true
	go q.Elicit(context.WithValue(context.Background(), readerKeyCtx{}, key), "s", elicitRequest(""), func(*transport.JSONRPCResponse) error {
		if fail {
			fail = false
			return errors.New("connection reset")
		}
		return nil
	})
	require.Eventually(t, func() bool { return q.Waiting(key) != nil }, 5*time.Second, 10*time.Millisecond, "related by the stream it came on")
	require.Error(t, q.Answer(context.Background(), key, mcpflow.InputAnswer{Action: "decline"}))
	require.NotNil(t, q.Waiting(key), "a failed send leaves the question waiting")
	require.NoError(t, q.Answer(context.Background(), key, mcpflow.InputAnswer{Action: "decline"}))
	require.Nil(t, q.Waiting(key))
}
