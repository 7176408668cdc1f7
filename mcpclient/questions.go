package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// Questions holds, in process memory, the questions upstream servers ask
// about their native MCP tasks (protocol 2025-11-25): an elicitation/create
// request related to a task (its _meta "io.modelcontextprotocol/related-task",
// or the tasks/result request it arrived on). A server sends such a
// request on the stream of a tasks/result request once the task is
// input_required, so NativeDriver keeps one tasks/result request open per
// input_required task in this process (a reader) and the session's
// elicitation handler hands the question to Questions, where it waits for
// the user's answer (Answer) while the upstream request stays open.
//
// Sessions declare the elicitation capability when their DialOptions name a
// Questions (stdio and streamable HTTP; the legacy SSE transport of mcp-go
// cannot answer server requests). An elicitation that relates to no task
// this process reads is refused with a JSON-RPC error: mcpflow relays
// questions for durable tasks only.
//
// A question lives as long as its reader: it is gone when the task leaves
// input_required upstream, when the upstream request ends (the server's own
// timeout) or when this process stops. Every Runtime has one.
type Questions struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	tasks map[questionKey]*taskQuestion
}

// questionKey names a remote task: its server and upstream task id.
type questionKey struct{ server, taskID string }

// taskQuestion is the reader of one task and its current question.
type taskQuestion struct {
	q    *heldQuestion // nil: no question yet
	done chan struct{} // closed when the reader ends
}

// heldQuestion is one elicitation request waiting for its answer.
type heldQuestion struct {
	message string
	schema  map[string]any // requestedSchema; nil when absent
	answers chan questionAnswer
	// answered is set once an answer reached the server; done is closed
	// when the upstream request is over (answered or gone).
	answered bool
	done     chan struct{}
}

// questionAnswer is an answer on its way and where its outcome goes.
type questionAnswer struct {
	result mcp.ElicitationResult
	sent   chan error
}

// relatedTaskMeta is the _meta key relating a request to a task.
const relatedTaskMeta = "io.modelcontextprotocol/related-task"

// Bounds of the questions.
const (
	// questionReaderMax bounds a reader's tasks/result request: the
	// upstream task's own ttl ends it sooner as a rule.
	questionReaderMax = 24 * time.Hour
	// questionFirstWait is how long a status poll that starts a reader
	// waits for the server's question before it reports what tasks/get
	// said (the next poll reports the question).
	questionFirstWait = 2 * time.Second
)

func newQuestions() *Questions {
	q := &Questions{tasks: map[questionKey]*taskQuestion{}}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	return q
}

// close ends every reader and question and waits for the readers.
func (q *Questions) close() {
	if q == nil {
		return
	}
	q.mu.Lock() // ask adds readers under mu while ctx lives
	q.cancel()
	q.mu.Unlock()
	q.wg.Wait()
}

// readerKeyCtx marks the context of a reader's tasks/result request with
// the task it reads: a streamable HTTP session hands a server request that
// arrived on that request's stream the same context.
type readerKeyCtx struct{}

// ask returns the task's waiting question, starting a reader through run
// when none is running and waiting up to questionFirstWait for the question
// it brings. It returns nil when no question waits.
func (q *Questions) ask(ctx context.Context, key questionKey, run func(ctx context.Context) error) *heldQuestion {
	q.mu.Lock()
	_, reading := q.tasks[key]
	if !reading {
		if q.ctx.Err() != nil {
			q.mu.Unlock()
			return nil
		}
		tq := &taskQuestion{done: make(chan struct{})}
		q.tasks[key] = tq
		q.wg.Add(1)
		go q.read(key, tq, run)
	}
	q.mu.Unlock()
	deadline := time.NewTimer(questionFirstWait)
	defer deadline.Stop()
	for {
		if hq := q.waiting(key); hq != nil || reading {
			return hq
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// read runs a reader: one tasks/result request of the task, open until the
// task is terminal upstream. Its answer is not used (status polls read the
// outcome); its end ends the task's question.
func (q *Questions) read(key questionKey, tq *taskQuestion, run func(ctx context.Context) error) {
	defer q.wg.Done()
	ctx, cancel := context.WithTimeout(context.WithValue(q.ctx, readerKeyCtx{}, key), questionReaderMax)
	defer cancel()
	_ = run(ctx)
	close(tq.done)
	q.mu.Lock()
	if q.tasks[key] == tq {
		delete(q.tasks, key)
	}
	q.mu.Unlock()
}

// waiting returns the task's question while it waits for an answer.
func (q *Questions) waiting(key questionKey) *heldQuestion {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if tq := q.tasks[key]; tq != nil && tq.q != nil && !tq.q.answered && !isClosed(tq.q.done) {
		return tq.q
	}
	return nil
}

// answer delivers an answer to the task's question once: nil when it
// reached the server (or did already: a retried delivery), ErrInputGone
// when no question waits.
func (q *Questions) answer(ctx context.Context, key questionKey, ans mcpflow.InputAnswer) error {
	if q == nil {
		return mcpflow.ErrInputGone
	}
	q.mu.Lock()
	tq := q.tasks[key]
	if tq == nil || tq.q == nil {
		q.mu.Unlock()
		return mcpflow.ErrInputGone
	}
	hq := tq.q
	if hq.answered {
		q.mu.Unlock()
		return nil
	}
	q.mu.Unlock()
	res := mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseAction(ans.Action), Content: ans.Content}}
	a := questionAnswer{result: res, sent: make(chan error, 1)}
	select {
	case hq.answers <- a:
	case <-hq.done:
		return mcpflow.ErrInputGone
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-a.sent:
		return err
	case <-hq.done:
		// The request ended while the answer was sent: the server may
		// have it; answered says whether it did.
		q.mu.Lock()
		ok := hq.answered
		q.mu.Unlock()
		if ok {
			return nil
		}
		return mcpflow.ErrInputGone
	case <-ctx.Done():
		return ctx.Err()
	}
}

// elicit is the elicitation/create handler of a session: it holds the
// question of the task it relates to until the user's answer arrives, then
// sends the answer with respond, and returns nil. It returns the refusal to
// send for requests it cannot relate to a task this process reads, and for
// URL-mode requests. ctx is read for its values only: the question lasts
// as long as the task's reader.
func (q *Questions) elicit(ctx context.Context, server string, req transport.JSONRPCRequest, respond func(*transport.JSONRPCResponse) error) *transport.JSONRPCResponse {
	refuse := func(msg string) *transport.JSONRPCResponse {
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.INVALID_REQUEST, msg, nil)
	}
	var p mcp.ElicitationParams
	if raw, err := json.Marshal(req.Params); err != nil || json.Unmarshal(raw, &p) != nil {
		return refuse("malformed elicitation/create params")
	}
	taskID := relatedTask(p.Meta)
	if taskID == "" {
		if key, ok := ctx.Value(readerKeyCtx{}).(questionKey); ok && key.server == server {
			taskID = key.taskID
		}
	}
	if taskID == "" {
		// An ordinary call whose caller cannot be asked during it (a REST
		// caller, a 2025-11-25 client without the capability or its SSE
		// answer, a 2026-07-28 client: that revision asks only through an
		// input_required answer).
		return refuse("mcpflow cannot relay this question: the caller of this call cannot be asked during it (a REST call, an MCP client without the elicitation capability or an SSE answer, or a 2026-07-28 client, which is asked only through input_required); durable tasks can ask (related-task)")
	}
	if p.Mode != "" && p.Mode != "form" {
		return refuse("mcpflow relays form-mode questions only")
	}
	key := questionKey{server: server, taskID: taskID}
	hq := &heldQuestion{message: p.Message, answers: make(chan questionAnswer), done: make(chan struct{})}
	if s, ok := p.RequestedSchema.(map[string]any); ok {
		hq.schema = maps.Clone(s)
	}
	q.mu.Lock()
	tq := q.tasks[key]
	if tq == nil {
		q.mu.Unlock()
		return refuse("no durable task of this mcpflow process waits for this question")
	}
	tq.q = hq
	q.mu.Unlock()
	defer close(hq.done)
	for {
		select {
		case a := <-hq.answers:
			raw, err := json.Marshal(a.result)
			if err != nil {
				a.sent <- err
				continue
			}
			err = respond(transport.NewJSONRPCResultResponse(req.ID, raw))
			if err == nil {
				q.mu.Lock()
				hq.answered = true
				q.mu.Unlock()
			}
			a.sent <- err
			if err == nil {
				return nil
			}
		case <-q.ctx.Done():
			return refuse("mcpflow stopped before the question was answered")
		case <-tq.done:
			return nil // the task's tasks/result request is over: nothing to answer
		}
	}
}

// relatesToTask reports whether an elicitation/create belongs to a
// durable task (its related-task _meta, or the task reader it arrived on).
func (q *Questions) relatesToTask(ctx context.Context, server string, req transport.JSONRPCRequest) bool {
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	if raw, err := json.Marshal(req.Params); err == nil {
		_ = json.Unmarshal(raw, &p)
	}
	if relatedTask(p.Meta) != "" {
		return true
	}
	key, ok := ctx.Value(readerKeyCtx{}).(questionKey)
	return ok && key.server == server
}

// askCaller asks the caller of an ordinary call a server's question
// (relayed as it is) and answers with the caller's answer, or with the
// caller's refusal.
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

// relatedTask reads the task id of a request's related-task _meta.
func relatedTask(m *mcp.Meta) string {
	if m == nil || m.AdditionalFields == nil {
		return ""
	}
	rel, ok := m.AdditionalFields[relatedTaskMeta].(map[string]any)
	if !ok {
		return ""
	}
	id, _ := rel["taskId"].(string)
	return id
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// serverRequests installs the session's handler of server-to-client
// requests (after the client's Start, which installs mcp-go's own): ping,
// and elicitation/create through q. On stdio the answer is the handler's
// response; on streamable HTTP mcp-go gives a handler 30 seconds and sends
// its response under that deadline, so the session posts the answer itself
// (postResponse) and the handler answers nothing.
func (s *Session) serverRequests(tr transport.Interface, q *Questions, post func(context.Context, *transport.JSONRPCResponse) error) {
	bidi, ok := tr.(transport.BidirectionalInterface)
	if !ok || q == nil {
		return
	}
	bidi.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		switch req.Method {
		case string(mcp.MethodPing):
			return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{}`)), nil
		case string(mcp.MethodElicitationCreate):
		default:
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "method not supported by mcpflow: "+req.Method, nil), nil
		}
		if a := s.askerOf(ctx); a != nil && !q.relatesToTask(ctx, s.server, req) {
			// An ordinary call's question: the caller answers it, as long
			// as its call lasts (mcp-go gives this handler 30 s only).
			resp := askCaller(context.WithoutCancel(ctx), a, req)
			if post == nil {
				return resp, nil
			}
			_ = post(context.WithoutCancel(ctx), resp)
			return nil, nil
		}
		if post == nil {
			// stdio: the response goes back through the transport.
			var out *transport.JSONRPCResponse
			resp := q.elicit(ctx, s.server, req, func(r *transport.JSONRPCResponse) error { out = r; return nil })
			if resp != nil {
				return resp, nil
			}
			return out, nil
		}
		// The request's own context ends after 30 s; the answer may take
		// longer. It stays bound to the stream it arrived on.
		hctx := context.WithoutCancel(ctx)
		resp := q.elicit(hctx, s.server, req, func(r *transport.JSONRPCResponse) error { return post(hctx, r) })
		if resp != nil {
			_ = post(hctx, resp)
		}
		return nil, nil
	})
}

// httpResponder posts a JSON-RPC response to a streamable HTTP server on
// the session, as mcp-go's transport would: same URL, session id, protocol
// version and headers.
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

// sessNoElicit makes mcp-go declare the elicitation capability; the
// session's own request handler (serverRequests) answers the requests.
type sessNoElicit struct{}

func (sessNoElicit) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return nil, errors.New("elicitation is answered by mcpflow's request handler")
}
