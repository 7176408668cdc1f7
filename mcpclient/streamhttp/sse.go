package streamhttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Reconnection delays of a stream ended before the answer (SEP-1699):
// without a retry field, and the least taken from one.
var (
	defaultRetry = time.Second
	minRetry     = 10 * time.Millisecond
)

// sseCursor is what resuming a stream needs.
type sseCursor struct {
	lastID   string
	retry    time.Duration
	hasRetry bool
}

// readStream reads an SSE answer on the caller's goroutine, dispatching
// notifications and requests until the response; a stream ended early
// after an event id is resumed with GET (before 2026-07-28).
func (t *Transport) readStream(ctx context.Context, body io.Reader) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	var (
		cur sseCursor
		raw json.RawMessage
		rpc *mcp.JSONRPCErrorDetails
		got bool
	)
	dispatch := func(data []byte) bool {
		msg, err := decodeMessage(data)
		if err != nil {
			t.log.Info("failed to unmarshal message (non-fatal)", "err", err, "message_len", len(data))
			return false
		}
		switch {
		case !msg.hasID:
			t.notify(ctx, data)
		case msg.method != "":
			t.serve(ctx, data)
		default:
			raw, rpc, got = msg.result, msg.err, true
		}
		return got
	}
	ended, err := readSSE(body, t.maxMsg, &cur, dispatch)
	for !got && ended && ctx.Err() == nil && cur.lastID != "" && !t.modern() {
		if ended, err = t.resume(ctx, &cur, dispatch); err != nil {
			return nil, nil, fmt.Errorf("failed to resume the SSE stream for the response: %w", err)
		}
	}
	switch {
	case got:
		return raw, rpc, nil
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	case errors.Is(err, errAnswerTooLarge):
		return nil, nil, err
	case err != nil:
		t.log.Error("SSE stream error", "err", err)
	}
	return nil, nil, errors.New("unexpected nil response")
}

// resume reopens the stream after the delay with Last-Event-ID and reads
// it; it reports whether the server ended this stream too.
func (t *Transport) resume(ctx context.Context, cur *sseCursor, dispatch func([]byte) bool) (bool, error) {
	delay := defaultRetry
	if cur.hasRetry {
		delay = max(cur.retry, minRetry)
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	ctx, cancel := context.WithCancel(ctx)
	resp, err := t.do(ctx, http.MethodGet, nil, hdrAcceptSSE, http.Header{"Last-Event-Id": {cur.lastID}}, false)
	if err != nil {
		cancel()
		return false, err
	}
	defer func() { cancel(); _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("unexpected status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); mediaType(ct) != "text/event-stream" {
		return false, fmt.Errorf("unexpected content type %q", ct)
	}
	ended, _ := readSSE(resp.Body, t.maxMsg, cur, dispatch)
	return ended, nil
}

// notify hands a notification on a request's stream to the request's sink
// (WithRequestNotifications) when it takes it, else to the handler.
func (t *Transport) notify(ctx context.Context, data []byte) {
	t.handlerMu.RLock()
	h := t.onNotify
	t.handlerMu.RUnlock()
	sink, _ := ctx.Value(sinkKey{}).(func(mcp.JSONRPCNotification) bool)
	if h == nil && sink == nil {
		return
	}
	var n mcp.JSONRPCNotification
	if err := json.Unmarshal(data, &n); err != nil {
		t.log.Error("failed to unmarshal notification", "err", err)
		return
	}
	if sink != nil && sink(n) || h == nil {
		return
	}
	h(n)
}

type sinkKey struct{}

// WithRequestNotifications makes the notifications a server sends on the
// stream of a request sent with ctx go to sink first: those it takes
// (true) do not reach the transport's handler. A request's notifications
// are that request's (its log messages, say), unlike the session's.
func WithRequestNotifications(ctx context.Context, sink func(mcp.JSONRPCNotification) bool) context.Context {
	return context.WithValue(ctx, sinkKey{}, sink)
}

// serve runs the request handler on its own goroutine (it may wait for a
// person), under ctx bounded by handlerTimeout, and posts its response.
func (t *Transport) serve(ctx context.Context, data []byte) {
	var req transport.JSONRPCRequest
	if err := json.Unmarshal(data, &req); err != nil {
		t.log.Info("failed to unmarshal request (non-fatal)", "err", err)
		return
	}
	t.handlerMu.RLock()
	h := t.onRequest
	t.handlerMu.RUnlock()
	go func() {
		ctx, cancel := context.WithTimeout(ctx, handlerTimeout)
		defer cancel()
		defer func() {
			if r := recover(); r != nil {
				t.log.Error("panic handling server request", "method", req.Method, "panic", r)
				t.respond(ctx, transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, fmt.Sprintf("internal error: panic in request handler: %v", r), nil))
			}
		}()
		if h == nil {
			t.log.Error("received request from server but no handler set", "method", req.Method)
			t.respond(ctx, transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "no handler configured for method: "+req.Method, nil))
			return
		}
		resp, err := h(ctx, req)
		if err != nil {
			t.log.Error("error handling request", "method", req.Method, "err", err)
			code, msg := mcp.INTERNAL_ERROR, err.Error()
			switch {
			case errors.Is(err, context.Canceled):
				code, msg = mcp.REQUEST_INTERRUPTED, "request was cancelled"
			case errors.Is(err, context.DeadlineExceeded):
				code, msg = mcp.REQUEST_INTERRUPTED, "request timed out"
			case req.Method == string(mcp.MethodSamplingCreateMessage):
				msg = "sampling request failed: " + msg
			}
			resp = transport.NewJSONRPCErrorResponse(req.ID, code, msg, nil)
		}
		if resp != nil {
			t.respond(ctx, resp)
		}
	}()
}

// respond posts the response to a server request; a failure is logged.
func (t *Transport) respond(ctx context.Context, resp *transport.JSONRPCResponse) {
	body, err := json.Marshal(resp)
	if err != nil {
		t.log.Error("failed to marshal response", "err", err)
		return
	}
	if err := t.post(ctx, body, "response"); err != nil {
		t.log.Error("failed to send response to server", "err", err)
	}
}

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// readSSE hands each event's data (valid during the call) to dispatch
// until it returns true, the stream ends (ended) or reading fails; ids and
// retry go to cur once their event is dispatched.
func readSSE(r io.Reader, maxMsg int, cur *sseCursor, dispatch func([]byte) bool) (ended bool, err error) {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	data := getBuffer()
	defer func() {
		br.Reset(nil)
		readerPool.Put(br)
		putBuffer(data)
	}()
	var long []byte // a line longer than br's buffer
	var id string
	idSet := false
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(long) > maxMsg {
					return false, tooLarge(maxMsg)
				}
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				// An unfinished event is dispatched, its id not recorded.
				if data.Len() > 0 {
					dispatch(data.Bytes())
				}
				return true, nil
			}
			return false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if idSet {
				cur.lastID, idSet = id, false
			}
			if data.Len() > 0 {
				stop := dispatch(data.Bytes())
				data.Reset()
				if stop {
					return false, nil
				}
			}
			continue
		}
		name, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(name) {
		case "data":
			if data.Len()+len(value) > maxMsg {
				return false, tooLarge(maxMsg)
			}
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				id, idSet = string(value), true
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil && len(bytes.Trim(value, "0123456789")) == 0 {
				cur.retry, cur.hasRetry = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
}
