package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/mcpclient/question"
)

// serverRequests installs the handler of server requests (after Start,
// which installs mcp-go's): ping, elicitation/create through q, and
// sampling/createMessage and roots/list (declared to streamable HTTP
// servers only), which only the caller of an ordinary call can answer (a
// 2025-11-25 session's capabilities are declared once for every caller). On
// streamable HTTP the handler's context lasts 30 s, so post sends the
// answer and the handler returns none.
func (s *Session) serverRequests(tr transport.Interface, q *question.Questions, post func(context.Context, *transport.JSONRPCResponse) error) {
	bidi, ok := tr.(transport.BidirectionalInterface)
	if !ok || q == nil {
		return
	}
	bidi.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		// askCallerOf answers req with the caller a's answer: returned on
		// stdio, posted on streamable HTTP.
		askCallerOf := func(a *mcpflow.CallRelay) (*transport.JSONRPCResponse, error) {
			resp := askCaller(context.WithoutCancel(ctx), a, req)
			if post == nil {
				return resp, nil
			}
			_ = post(context.WithoutCancel(ctx), resp)
			return nil, nil
		}
		switch req.Method {
		case string(mcp.MethodPing):
			return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{}`)), nil
		case string(mcp.MethodElicitationCreate):
		case string(mcp.MethodSamplingCreateMessage), string(mcp.MethodListRoots):
			if req.Method == string(mcp.MethodListRoots) && !s.roots {
				return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "mcpflow declared no roots to this server", nil), nil
			}
			a := s.askerOf(ctx)
			if a == nil {
				return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "mcpflow answers "+req.Method+" during a call whose caller can answer it, only", nil), nil
			}
			return askCallerOf(a)
		default:
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "method not supported by mcpflow: "+req.Method, nil), nil
		}
		if a := s.askerOf(ctx); a != nil && !q.RelatesToTask(ctx, s.server, req) {
			return askCallerOf(a) // an ordinary call's question: its caller answers
		}
		if post == nil { // stdio: answered through the transport
			var out *transport.JSONRPCResponse
			resp := q.Elicit(ctx, s.server, req, func(r *transport.JSONRPCResponse) error { out = r; return nil })
			if resp != nil {
				return resp, nil
			}
			return out, nil
		}
		hctx := context.WithoutCancel(ctx)
		resp := q.Elicit(hctx, s.server, req, func(r *transport.JSONRPCResponse) error { return post(hctx, r) })
		if resp != nil {
			_ = post(hctx, resp)
		}
		return nil, nil
	})
}

// httpResponder posts a response to a server request on the session.
func httpResponder(url string, tr transport.Interface, headers func(context.Context) map[string]string) func(context.Context, *transport.JSONRPCResponse) error {
	return func(ctx context.Context, resp *transport.JSONRPCResponse) error {
		body, err := json.Marshal(resp)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		for k, v := range headers(ctx) {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if id := tr.GetSessionId(); id != "" {
			req.Header.Set(transport.HeaderKeySessionID, id)
		}
		req.Header.Set(transport.HeaderKeyProtocolVersion, sessLegacyVersion) // answers exist in 2025-11-25 only
		res, err := sessHTTPClient.Do(req)
		if err != nil {
			return fmt.Errorf("send the answer: %w", err)
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusAccepted {
			return fmt.Errorf("the server refused the answer (HTTP %d)", res.StatusCode)
		}
		return nil
	}
}

// sessNoElicit makes mcp-go declare elicitation and sampling;
// serverRequests answers.
type sessNoElicit struct{}

func (sessNoElicit) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return nil, errors.New("elicitation is answered by mcpflow's request handler")
}

func (sessNoElicit) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, errors.New("sampling is answered by mcpflow's request handler")
}

// askCaller relays a server's question to the caller and returns its
// answer or refusal.
func askCaller(ctx context.Context, a *mcpflow.CallRelay, req transport.JSONRPCRequest) *transport.JSONRPCResponse {
	inner, err := json.Marshal(map[string]any{"method": req.Method, "params": req.Params})
	if err != nil {
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.INVALID_REQUEST, "malformed request params", nil)
	}
	answers, err := a.Ask(ctx, map[string]json.RawMessage{"q": inner})
	if err != nil {
		var rpc *mcpflow.RPCError
		if errors.As(err, &rpc) {
			return transport.NewJSONRPCErrorResponse(req.ID, rpc.Code, rpc.Message, rpc.Data)
		}
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, mcpflow.ErrorMessage(err), nil)
	}
	res, ok := answers["q"]
	if !ok {
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, "the caller did not answer", nil)
	}
	return transport.NewJSONRPCResultResponse(req.ID, res)
}
