package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
)

// The relay of an ordinary tools/call, transparent to client and server:
//   - Progress: the server's notifications/progress come back with the
//     client's token, turning the answer into an SSE stream.
//   - Questions, 2026-07-28: input_required, the retry and -32021 pass as
//     they are; the client's own capabilities are declared upstream.
//   - Questions, 2025-11-25: a server's question is asked on the call's
//     stream as mcpflow's request ("mcpflow-relay-…"); the client's
//     response, on the same session and replica, is the answer.

// relayPrefix starts the id of a request mcpflow relays to a 2025-11-25
// client during a tools/call.
const relayPrefix = "mcpflow-relay-"

// relayed holds the relayed requests waiting for their client's response:
// id → the session they were asked on and where the response goes.
type relayed struct {
	mu      sync.Mutex
	waiting map[string]relayWait
}

type relayWait struct {
	session string
	answer  chan *message
}

func (r *relayed) add(id, session string) chan *message {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting == nil {
		r.waiting = map[string]relayWait{}
	}
	ch := make(chan *message, 1)
	r.waiting[id] = relayWait{session: session, answer: ch}
	return ch
}

func (r *relayed) drop(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.waiting, id)
}

// deliver hands a response to the request it answers, when the request
// waits here and was asked on session.
func (r *relayed) deliver(id, session string, msg *message) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.waiting[id]
	if !ok || w.session != session {
		return false
	}
	delete(r.waiting, id)
	w.answer <- msg
	return true
}

// relayID reads the id of a response to a relayed request.
func relayID(id json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(id, &s) != nil || !strings.HasPrefix(s, relayPrefix) {
		return "", false
	}
	return s, true
}

// relay builds the call's relay (see the top of this file) from its
// params.
func (c *call) relay() *mcpflow.CallRelay {
	p := &c.msg.Params
	r := &mcpflow.CallRelay{}
	if c.modern {
		r.ClientCapabilities = c.capsRaw
		if len(r.ClientCapabilities) == 0 || string(r.ClientCapabilities) == "null" {
			r.ClientCapabilities = json.RawMessage(`{}`)
		}
		r.PassInput = true
		r.InputResponses = nullToEmpty(p.InputResponses)
		r.RequestState = p.RequestState
	} else {
		r.ClientCapabilities = c.caps().upstream
		if acceptsSSE(c.r) && c.session != "" && len(c.caps().answers) > 0 {
			r.Ask = c.ask
		}
	}
	if level := c.callLogLevel(); level != "" && acceptsSSE(c.r) {
		r.Log, r.LogLevel = c.logRelay(level), level
	}
	if token := p.Meta["progressToken"]; !isNull(token) && acceptsSSE(c.r) {
		r.Progress = func(params map[string]any) {
			params["progressToken"] = token
			_ = c.notify(notification{JSONRPC: mcp.JSONRPC_VERSION, Method: string(mcp.MethodNotificationProgress), Params: params})
		}
	}
	return r
}

// errCallOver refuses a write to a call that has answered.
var errCallOver = errors.New("the call has answered")

// notify writes a message on the call's answer, turning it into an SSE
// stream at the first.
func (c *call) notify(v any) error {
	c.streamMu.Lock()
	defer c.streamMu.Unlock()
	if c.over {
		return errCallOver
	}
	if c.stream == nil {
		c.stream = newSSEWriter(c.w)
		c.stream.start()
	}
	return c.stream.event("", v)
}

// reply writes the answer to the request: the last event of its stream
// when one started, else one JSON body with status.
func (c *call) reply(status int, v any) {
	c.streamMu.Lock()
	defer c.streamMu.Unlock()
	c.over = true
	if c.stream != nil {
		_ = c.stream.event("", v)
		return
	}
	writeJSON(c.w, status, v)
}

// ask asks a 2025-11-25 client the server's input requests (each a
// {"method", "params"} object), one after the other on the call's stream,
// and returns its results keyed as the requests were. A client's JSON-RPC
// error is a *mcpflow.RPCError.
func (c *call) ask(ctx context.Context, requests map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	keys := make([]string, 0, len(requests))
	for k := range requests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	answers := make(map[string]json.RawMessage, len(requests))
	for _, key := range keys {
		var in struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(requests[key], &in); err != nil || in.Method == "" {
			return nil, mcpflow.Errorf(mcpflow.EUpstream, "the MCP server asked for input in a form mcpflow cannot read")
		}
		if !slices.Contains(c.caps().answers, in.Method) {
			return nil, mcpflow.Errorf(mcpflow.EUpstream, "the MCP server asked for %s, which this client did not declare at initialize", truncate(in.Method, 60))
		}
		var b [12]byte
		_, _ = rand.Read(b[:])
		id := relayPrefix + hex.EncodeToString(b[:])
		wait := c.s.relays.add(id, c.session)
		idJSON, _ := json.Marshal(id)
		err := c.notify(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params,omitempty"`
		}{mcp.JSONRPC_VERSION, idJSON, in.Method, in.Params})
		if err != nil {
			c.s.relays.drop(id)
			return nil, mcpflow.Errorf(mcpflow.EUpstream, "could not ask the client: %v", err)
		}
		var msg *message
		select {
		case msg = <-wait:
		case <-c.r.Context().Done():
			c.s.relays.drop(id)
			return nil, c.r.Context().Err()
		case <-ctx.Done():
			c.s.relays.drop(id)
			return nil, ctx.Err()
		}
		if len(msg.Error) > 0 {
			var e mcpflow.RPCError
			if json.Unmarshal(msg.Error, &e) != nil || e.Code == 0 {
				e = mcpflow.RPCError{Code: mcp.INTERNAL_ERROR, Message: "the client answered with an error"}
			}
			return nil, &e
		}
		answers[key] = msg.Result
	}
	return answers, nil
}

// answerRelayed takes a client's response to a relayed request: 202 when
// a call of its session waits for it, 404 otherwise (answered already,
// the call over, or asked by another replica).
func (s *Server) answerRelayed(w http.ResponseWriter, sess *mcpflow.MCPSession, id string, msg *message) {
	if !s.relays.deliver(id, sess.ID, msg) {
		writeHTTPError(w, http.StatusNotFound, nil, mcp.INVALID_PARAMS, "no call of this session waits for this response here: it was answered already, or its call is over")
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
