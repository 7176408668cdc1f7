package question

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// Questions holds the questions (2025-11-25 elicitation/create related to
// a task by _meta "io.modelcontextprotocol/related-task" or by the
// tasks/result request it arrived on) while the user's answer is awaited.
// A server asks on a tasks/result stream, so one such request (a reader)
// stays open per input_required task; the question lives as long as it.
// An elicitation related to no task read here is refused.
type Questions struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	tasks map[Key]*taskQuestion
}

// Key names a remote task: its server and upstream task id.
type Key struct{ Server, TaskID string }

// taskQuestion is the reader of one task and its current question.
type taskQuestion struct {
	q    *Held         // nil: no question yet
	done chan struct{} // closed when the reader ends
}

// Held is one elicitation request waiting for its answer.
type Held struct {
	Message string
	Schema  map[string]any // requestedSchema; nil when absent
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

func New() *Questions {
	q := &Questions{tasks: map[Key]*taskQuestion{}}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	return q
}

// Close ends every reader and question and waits for the readers.
func (q *Questions) Close() {
	if q == nil {
		return
	}
	q.mu.Lock() // ask adds readers under mu while ctx lives
	q.cancel()
	q.mu.Unlock()
	q.wg.Wait()
}

// readerKeyCtx marks a reader's request context with its task (a server
// request on that stream gets the same context).
type readerKeyCtx struct{}

// Ask returns the task's waiting question, starting a reader through run
// when none is running and waiting up to questionFirstWait for the question
// it brings. It returns nil when no question waits.
func (q *Questions) Ask(ctx context.Context, key Key, run func(ctx context.Context) error) *Held {
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
		if hq := q.Waiting(key); hq != nil || reading {
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
func (q *Questions) read(key Key, tq *taskQuestion, run func(ctx context.Context) error) {
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

// Waiting returns the task's question while it waits for an answer.
func (q *Questions) Waiting(key Key) *Held {
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

// Answer delivers an answer to the task's question once: nil when it
// reached the server (or did already: a retried delivery), ErrInputGone
// when no question waits.
func (q *Questions) Answer(ctx context.Context, key Key, ans mcpflow.InputAnswer) error {
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

// Elicit holds a session's elicitation/create until the user's answer,
// sends it with respond and returns nil; it returns the refusal of a
// URL-mode request or one related to no task read here.
func (q *Questions) Elicit(ctx context.Context, server string, req transport.JSONRPCRequest, respond func(*transport.JSONRPCResponse) error) *transport.JSONRPCResponse {
	refuse := func(msg string) *transport.JSONRPCResponse {
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.INVALID_REQUEST, msg, nil)
	}
	var p mcp.ElicitationParams
	if raw, err := json.Marshal(req.Params); err != nil || json.Unmarshal(raw, &p) != nil {
		return refuse("malformed elicitation/create params")
	}
	taskID := relatedTask(p.Meta)
	if taskID == "" {
		if key, ok := ctx.Value(readerKeyCtx{}).(Key); ok && key.Server == server {
			taskID = key.TaskID
		}
	}
	if taskID == "" {
		return refuse("mcpflow cannot relay this question: the caller of this call cannot be asked during it (a REST call, an MCP client without the elicitation capability or an SSE answer, or a 2026-07-28 client, which is asked only through input_required); durable tasks can ask (related-task)")
	}
	if p.Mode != "" && p.Mode != "form" {
		return refuse("mcpflow relays form-mode questions only")
	}
	key := Key{Server: server, TaskID: taskID}
	hq := &Held{Message: p.Message, answers: make(chan questionAnswer), done: make(chan struct{})}
	if s, ok := p.RequestedSchema.(map[string]any); ok {
		hq.Schema = maps.Clone(s)
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

// RelatesToTask reports whether an elicitation/create belongs to a
// durable task (its related-task _meta, or the task reader it arrived on).
func (q *Questions) RelatesToTask(ctx context.Context, server string, req transport.JSONRPCRequest) bool {
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	if raw, err := json.Marshal(req.Params); err == nil {
		_ = json.Unmarshal(raw, &p)
	}
	if relatedTask(p.Meta) != "" {
		return true
	}
	key, ok := ctx.Value(readerKeyCtx{}).(Key)
	return ok && key.Server == server
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
