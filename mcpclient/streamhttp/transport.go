package streamhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Options configure a Transport. The zero value is usable.
type Options struct {
	// HTTPClient sends every request (nil: http.DefaultClient); no Timeout,
	// an SSE answer lasts as long as its call.
	HTTPClient *http.Client
	Headers    transport.HTTPHeaderFunc // per request, set last (they win)
	Logger     *slog.Logger             // what cannot be returned as an error; nil discards
	// MaxMessageBytes bounds one message the server sends (a JSON answer,
	// an SSE event's data or line): a larger one is not read (0:
	// DefaultMaxMessageBytes). It bounds the memory an answer takes; what
	// reaches a caller is bounded by server.max_content_bytes (at most
	// 64 MiB), which cuts where the caller sees it.
	MaxMessageBytes int
}

// DefaultMaxMessageBytes is Options.MaxMessageBytes' default.
const DefaultMaxMessageBytes = 128 << 20

// Transport is a streamable HTTP client transport to one MCP endpoint. It
// is safe for concurrent use.
type Transport struct {
	url     string
	tmpl    *http.Request // POST to url; each request is a WithContext copy
	client  *http.Client
	headers transport.HTTPHeaderFunc
	log     *slog.Logger
	maxMsg  int // Options.MaxMessageBytes

	protocol atomic.Pointer[protocolHeader]

	mu      sync.Mutex
	session string   // Mcp-Session-Id, "" before initialize or after a 404
	sessHdr []string // {session}, the header value of every request
	ended   bool     // the server lost the session: only initialize goes out
	// listening is set once the standalone GET stream runs (Listen).
	listening bool

	handlerMu sync.RWMutex
	onNotify  func(mcp.JSONRPCNotification)
	onRequest transport.RequestHandler

	closing   context.Context // done once Close is called
	close     context.CancelFunc
	closeOnce sync.Once
}

// protocolHeader is the negotiated revision and its header value.
type protocolHeader struct {
	version string
	header  []string
	modern  bool
}

var (
	_ transport.BidirectionalInterface = (*Transport)(nil)
	_ transport.HTTPConnection         = (*Transport)(nil)
)

// Header values shared by every request (net/http only reads them).
var (
	hdrJSON       = []string{"application/json"}
	hdrAcceptPost = []string{"application/json, text/event-stream"}
	hdrAcceptSSE  = []string{"text/event-stream"}
)

const (
	handlerTimeout = 30 * time.Second // a server request handler's context, as mcp-go's
	closeTimeout   = 5 * time.Second  // the DELETE of Close
	maxErrorBody   = 1 << 20          // what is read of a refused request's body
)

// errAnswerTooLarge refuses a message over Options.MaxMessageBytes
// (tooLarge says how large).
var errAnswerTooLarge = errors.New("the server's message is larger than mcpflow reads")

func tooLarge(maxMsg int) error { return fmt.Errorf("%w (%d bytes)", errAnswerTooLarge, maxMsg) }

// New returns a transport to the MCP endpoint serverURL.
func New(serverURL string, o Options) (*Transport, error) {
	tmpl, err := http.NewRequest(http.MethodPost, serverURL, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid URL: %w", err)
	}
	t := &Transport{url: serverURL, tmpl: tmpl, client: o.HTTPClient, headers: o.Headers, log: o.Logger, maxMsg: o.MaxMessageBytes}
	if t.maxMsg <= 0 {
		t.maxMsg = DefaultMaxMessageBytes
	}
	if t.client == nil {
		t.client = http.DefaultClient
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	t.closing, t.close = context.WithCancel(context.Background())
	return t, nil
}

// Start does nothing: streamable HTTP needs no connection beforehand.
func (t *Transport) Start(context.Context) error { return nil }

// Close cancels requests in flight, fails later ones with
// ErrTransportClosed and, before 2026-07-28, sends DELETE. It returns nil.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		t.close()
		t.mu.Lock()
		session := t.session
		t.session, t.sessHdr = "", nil
		t.mu.Unlock()
		p := t.protocol.Load()
		if session == "" || p != nil && p.modern {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.url, nil)
		if err != nil {
			t.log.Error("failed to create close request", "err", err)
			return
		}
		req.Header[transport.HeaderKeySessionID] = []string{session}
		if p != nil && p.version != "" {
			req.Header[transport.HeaderKeyProtocolVersion] = p.header
		}
		res, err := t.client.Do(req)
		if err != nil {
			t.log.Error("failed to send close request", "err", sendError(err))
			return
		}
		_ = res.Body.Close()
	})
	return nil
}

// SetProtocolVersion sets the Mcp-Protocol-Version ("" = none).
func (t *Transport) SetProtocolVersion(version string) {
	t.protocol.Store(&protocolHeader{version: version, header: []string{version}, modern: mcp.IsModernProtocol(version)})
}

func (t *Transport) modern() bool {
	p := t.protocol.Load()
	return p != nil && p.modern
}

// GetSessionId returns the Mcp-Session-Id the server gave ("" when none).
func (t *Transport) GetSessionId() string { //nolint:revive // the name is transport.Interface's
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session
}

// SetNotificationHandler sets the handler of notifications on a stream.
func (t *Transport) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	t.handlerMu.Lock()
	defer t.handlerMu.Unlock()
	t.onNotify = h
}

// SetRequestHandler sets the handler of requests on a stream; its response
// is posted back.
func (t *Transport) SetRequestHandler(h transport.RequestHandler) {
	t.handlerMu.Lock()
	defer t.handlerMu.Unlock()
	t.onRequest = h
}

// SendRequest sends a request (json.RawMessage params as they are).
func (t *Transport) SendRequest(ctx context.Context, r transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	body, err := encodeRequest(r)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal request: %w", err)
	}
	raw, rpc, err := t.SendRaw(ctx, r.Method, body, r.Header)
	if err != nil {
		return nil, err
	}
	return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: r.ID, Result: raw, Error: rpc}, nil
}

// SendNotification sends a JSON-RPC notification.
func (t *Transport) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	body, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("failed to marshal notification: %w", err)
	}
	return t.post(ctx, body, "notification")
}

// post sends a message that has no answer and checks the status.
func (t *Transport) post(ctx context.Context, body []byte, what string) error {
	ctx, cancel, stop := t.bind(ctx)
	defer stop()
	resp, err := t.do(ctx, http.MethodPost, body, hdrAcceptPost, nil, false)
	if err != nil {
		cancel()
		return fmt.Errorf("failed to send request: %w", t.closedOr(err))
	}
	defer func() { cancel(); _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusAccepted, http.StatusNoContent:
		return nil
	case http.StatusUnauthorized:
		return unauthorized(resp)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return fmt.Errorf("%s failed with status %d: %s", what, resp.StatusCode, bodyText(resp.Request, b))
}

// bind returns ctx cancelled also by Close (no goroutine), its cancel and
// a release function.
func (t *Transport) bind(ctx context.Context) (context.Context, context.CancelFunc, func()) {
	ctx, cancel := context.WithCancel(ctx)
	unregister := context.AfterFunc(t.closing, cancel)
	return ctx, cancel, func() { unregister(); cancel() }
}

// closedOr returns ErrTransportClosed after Close, else err.
func (t *Transport) closedOr(err error) error {
	if t.closing.Err() != nil {
		return transport.ErrTransportClosed
	}
	return err
}

// startsConnection reports whether method may go out after the server
// lost the session: initialize, or server/discover in 2026-07-28.
func (t *Transport) startsConnection(method string) bool {
	return method == string(mcp.MethodInitialize) || method == string(mcp.MethodServerDiscover) && t.modern()
}

// SendRaw posts body, an encoded request of method, with header's fields,
// and returns the result (JSON or SSE answer) as the server wrote it or
// its JSON-RPC error. body is not copied: do not change it afterwards.
func (t *Transport) SendRaw(ctx context.Context, method string, body []byte, header http.Header) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	if t.closing.Err() != nil {
		return nil, nil, fmt.Errorf("failed to send request: %w", transport.ErrTransportClosed)
	}
	ctx, cancel, stop := t.bind(ctx)
	defer stop()
	starts := t.startsConnection(method)
	resp, err := t.do(ctx, http.MethodPost, body, hdrAcceptPost, header, starts)
	if err != nil {
		if errors.Is(err, transport.ErrSessionTerminated) && method == string(mcp.MethodInitialize) {
			return nil, nil, transport.ErrLegacySSEServer // 404: an HTTP+SSE server
		}
		return nil, nil, fmt.Errorf("failed to send request: %w", t.closedOr(err))
	}
	// Cancel first: on HTTP/2 closing an unread body may wait for the stream.
	defer func() { cancel(); _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return refused(resp, method)
	}
	if method == string(mcp.MethodInitialize) {
		if id := resp.Header.Get(transport.HeaderKeySessionID); id != "" {
			t.mu.Lock()
			t.session, t.sessHdr = id, []string{id}
			t.mu.Unlock()
		}
	}
	session := t.GetSessionId()
	var raw json.RawMessage
	var rpc *mcp.JSONRPCErrorDetails
	switch ct := resp.Header.Get("Content-Type"); mediaType(ct) {
	case "application/json":
		raw, rpc, err = readJSON(resp, t.maxMsg)
	case "text/event-stream":
		raw, rpc, err = t.readStream(ctx, resp.Body)
	default:
		return nil, nil, fmt.Errorf("unexpected content type: %s", ct)
	}
	if err != nil && t.closing.Err() != nil {
		err = transport.ErrTransportClosed
	}
	if err == nil && rpc == nil && starts {
		t.sessionStarted(session)
	}
	return raw, rpc, err
}

// sessionStarted lets requests go out again after a successful start.
func (t *Transport) sessionStarted(session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.session == session {
		t.ended = false
	}
}

// do sends one HTTP request with the transport's headers. After the server
// lost the session only starts goes out; a 404 to a non-GET ends it.
func (t *Transport) do(ctx context.Context, method string, body []byte, accept []string, header http.Header, starts bool) (*http.Response, error) {
	t.mu.Lock()
	session, sessHdr, ended := t.session, t.sessHdr, t.ended
	t.mu.Unlock()
	if ended && !starts {
		return nil, transport.ErrSessionTerminated
	}
	p := t.protocol.Load()
	if p != nil && p.modern {
		session = "" // 2026-07-28 has no sessions
	}
	req := t.tmpl.WithContext(ctx)
	req.Method = method
	h := make(http.Header, len(header)+5)
	for k, v := range header {
		h[k] = v
	}
	h["Content-Type"] = hdrJSON
	h["Accept"] = accept
	if session != "" {
		h[transport.HeaderKeySessionID] = sessHdr
	}
	if p != nil && p.version != "" {
		h[transport.HeaderKeyProtocolVersion] = p.header
	}
	if t.headers != nil {
		for k, v := range t.headers(ctx) {
			h.Set(k, v)
		}
	}
	req.Header = h
	if body != nil {
		req.ContentLength = int64(len(body))
		// NopCloser over a *bytes.Reader: net/http writes headers and body
		// in one syscall.
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, sendError(err)
	}
	if resp.StatusCode == http.StatusNotFound && (p == nil || !p.modern) {
		// 404 ends a session; in 2026-07-28, which has none, it is a
		// JSON-RPC error of its own (an unknown method), read as such.
		_ = resp.Body.Close()
		if method != http.MethodGet && session != "" {
			t.mu.Lock()
			if t.session == session {
				t.session, t.sessHdr, t.ended = "", nil, true
			}
			t.mu.Unlock()
		}
		return nil, transport.ErrSessionTerminated
	}
	return resp, nil
}

// refused reads the answer of a status other than 200 and 202.
func refused(resp *http.Response, method string) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, nil, unauthorized(resp)
	}
	if method == string(mcp.MethodInitialize) && resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return nil, nil, transport.ErrLegacySSEServer
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if msg, err := decodeMessage(body); err == nil && (msg.err != nil || msg.result != nil) {
		return msg.result, msg.err, nil // a JSON-RPC answer
	}
	return nil, nil, fmt.Errorf("request failed with status %d: %s", resp.StatusCode, bodyText(resp.Request, body))
}

// unauthorized is the error of a 401 answer.
func unauthorized(resp *http.Response) error {
	return &transport.AuthorizationRequiredError{ResourceMetadataURL: resourceMetadata(resp.Header.Values("WWW-Authenticate"))}
}

// mediaType returns a Content-Type's media type, lower case; the two
// common values are compared, not parsed.
func mediaType(ct string) string {
	if ct == "application/json" || ct == "text/event-stream" {
		return ct
	}
	ct, _, _ = strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(ct))
}

// readJSON reads a JSON answer.
func readJSON(resp *http.Response, maxMsg int) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	if n := resp.ContentLength; n > 0 && n < maxPooled {
		buf.Grow(int(n))
	}
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, int64(maxMsg)+1)); err != nil {
		return nil, nil, fmt.Errorf("failed to decode response: %w", err)
	}
	if buf.Len() > maxMsg {
		return nil, nil, tooLarge(maxMsg)
	}
	msg, err := decodeMessage(buf.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("failed to decode response: %w", err)
	}
	if !msg.hasID {
		return nil, nil, fmt.Errorf("response should contain RPC id: %s", bodyText(resp.Request, buf.Bytes()))
	}
	return msg.result, msg.err, nil
}

// bufferPool holds answer buffers up to maxPooled, for every transport.
var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooled = 1 << 20

func getBuffer() *bytes.Buffer { return bufferPool.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooled {
		return
	}
	b.Reset()
	bufferPool.Put(b)
}
