package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	ginjson "github.com/gin-gonic/gin/codec/json"
	"github.com/mcpflow/mcpflow"
)

// threadForCall returns the route's thread for the calling user, creating
// it when the user does not have it yet (a tool call on a new thread starts
// it). Thread ids are per user; a deleted thread is 410.
func (s *Server) threadForCall(c *gin.Context) (*mcpflow.Thread, bool) {
	return s.threadFor(c, c.Param("thread_id"))
}

// threadFor is threadForCall for a thread id taken from elsewhere.
func (s *Server) threadFor(c *gin.Context, id string) (*mcpflow.Thread, bool) {
	p, _ := principal(c)
	if err := checkThreadID(id, p.UserID); err != nil {
		s.renderError(c, err)
		return nil, false
	}
	ref := mcpflow.ThreadRef{UserID: p.UserID, ThreadID: id}
	if s.threads.live(ref, s.now()) {
		return &mcpflow.Thread{ID: id, UserID: p.UserID}, true
	}
	// Read first: the thread nearly always exists, and a read is cheaper
	// than an insert attempt on every call. Thread ids are per user:
	// another user's thread of this id is neither found nor in the way.
	t, err := s.opts.Threads.GetThread(c.Request.Context(), p.UserID, id)
	switch {
	case err == nil && t.Deleted():
		err = mcpflow.Errorf(mcpflow.EGone, "thread was deleted")
	case mcpflow.ErrorCode(err) == mcpflow.ENotFound:
		t, _, err = s.opts.Threads.CreateThread(c.Request.Context(), &mcpflow.Thread{ID: id, UserID: p.UserID, CreatedAt: s.now().UTC()})
	}
	if err != nil {
		if mcpflow.ErrorCode(err) == mcpflow.ENotFound {
			err = mcpflow.Errorf(mcpflow.ENotFound, "thread not found")
		}
		s.renderError(c, err)
		return nil, false
	}
	s.threads.put(t.Ref(), s.now())
	return t, true
}

// toolsBody is the tools listing. UnavailableServers is present only when
// some enabled server's tools are missing (mcpflow retries those whose
// discovery failed).
type toolsBody struct {
	Tools              []mcpflow.Tool              `json:"tools"`
	RoutingHints       string                      `json:"routing_hints"`
	UnavailableServers []mcpflow.UnavailableServer `json:"unavailable_servers,omitempty"`
}

func (s *Server) listTools(c *gin.Context) {
	t, ok := s.threadForCall(c)
	if !ok {
		return
	}
	tools, err := s.opts.Tools.ListTools(c.Request.Context(), t.UserID, t.ID)
	if err != nil {
		s.renderError(c, err)
		return
	}
	if tools == nil {
		tools = []mcpflow.Tool{}
	}
	down, err := s.opts.Tools.UnavailableServers(c.Request.Context(), t.UserID)
	if err != nil {
		s.renderError(c, err)
		return
	}
	c.JSON(http.StatusOK, toolsBody{Tools: tools, RoutingHints: s.opts.Tools.RoutingHints(tools), UnavailableServers: down})
}

// callBody is a tool call's request body. Its arguments stay as the agent
// wrote them (decodeCallBody checks they are an object), so that they reach
// the server without being decoded, an integer beyond 2^53 included.
type callBody struct {
	Arguments  json.RawMessage   `json:"arguments"`
	Secrets    map[string]string `json:"secrets"`
	RunID      *string           `json:"run_id"`
	ToolCallID *string           `json:"tool_call_id"`
}

// headerIdempotencyKey carries a durable submit's idempotency key
// (mcpflow.ToolCall.IdempotencyKey): a retry with the same key answers the
// task the first attempt started.
const headerIdempotencyKey = "Idempotency-Key"

const callBodyMessage = "request body must be {\"arguments\": {...}, \"secrets\"?: {...}, \"run_id\"?: s, \"tool_call_id\"?: s}"

// decodeCallBody decodes a tool call's body in one pass, its arguments
// kept raw: a body it refuses is refused with what is wrong, the body or
// its arguments.
func decodeCallBody(body []byte) (callBody, error) {
	var req callBody
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return callBody{}, mcpflow.Errorf(mcpflow.EInvalid, callBodyMessage)
	}
	if req.Arguments = bytes.TrimSpace(req.Arguments); bytes.Equal(req.Arguments, []byte("null")) {
		req.Arguments = nil
	}
	if len(req.Arguments) > 0 && req.Arguments[0] != '{' {
		return callBody{}, mcpflow.Errorf(mcpflow.EInvalid, "arguments must be a JSON object")
	}
	return req, nil
}

func (s *Server) callTool(c *gin.Context) {
	body, ok := s.readBody(c)
	if !ok {
		return
	}
	req, err := decodeCallBody(body)
	if err != nil {
		s.renderError(c, err)
		return
	}
	if req.RunID != nil && (*req.RunID == "" || utf8.RuneCountInString(*req.RunID) > 64) {
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "run_id must be 1 to 64 characters"))
		return
	}
	if req.ToolCallID != nil && (*req.ToolCallID == "" || utf8.RuneCountInString(*req.ToolCallID) > 128) {
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "tool_call_id must be 1 to 128 characters"))
		return
	}
	key := ""
	if keys := c.Request.Header.Values(headerIdempotencyKey); len(keys) > 0 {
		problem := mcpflow.IdempotencyKeyProblem(keys[0])
		if len(keys) > 1 {
			problem = fmt.Sprintf("must be sent once (got %d)", len(keys))
		}
		if problem != "" {
			s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "the Idempotency-Key header %s", problem))
			return
		}
		key = keys[0]
	}
	t, ok := s.threadForCall(c)
	if !ok {
		return
	}
	if !s.calls.acquire(t.UserID) {
		c.Header("Retry-After", "1")
		s.renderError(c, mcpflow.Errorf(mcpflow.ETooMany, "too many tool calls in flight for this user (at most %d); retry shortly", s.calls.max))
		return
	}
	defer s.calls.release(t.UserID)
	res, err := s.opts.Tools.CallTool(restOrigin(c), mcpflow.ToolCall{
		UserID: t.UserID, ThreadID: t.ID, Tool: c.Param("tool"), RawArguments: req.Arguments,
		Secrets: req.Secrets, RunID: req.RunID, ToolCallID: req.ToolCallID, IdempotencyKey: key,
	})
	if err != nil {
		s.renderError(c, err)
		return
	}
	if res.Content == nil {
		res.Content = []json.RawMessage{}
	}
	sendJSON(c, http.StatusOK, res)
}

// sendJSON writes v as c.JSON does (the same bytes), with its
// Content-Length, and sends it at once. The access line and the metrics
// are written after the handler returns, and net/http would only send the
// answer after them: this way the client has it meanwhile.
func sendJSON(c *gin.Context, code int, v any) {
	b, err := ginjson.API.Marshal(v)
	if err != nil {
		c.JSON(code, v) // renders the failure as it always did
		return
	}
	c.Header("Content-Length", strconv.Itoa(len(b)))
	c.Data(code, "application/json; charset=utf-8", b)
	c.Writer.Flush()
}

func (s *Server) resetCache(c *gin.Context) {
	s.opts.Tools.ResetCache()
	s.log.Info("MCP tool cache reset", "request_id", requestID(c))
	c.JSON(http.StatusOK, gin.H{"success": true, "message": "MCP tools cache reset. Tools will reload on next use."})
}
