package streamhttp

import (
	"errors"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// Listen opens the session's standalone GET stream (before 2026-07-28)
// once, in the background until Close: the server's notifications and
// requests that belong to no request (resource updates, say) come on it.
// A stream that ends is reopened after its retry delay (at least a
// second); it stops when the server has none (405) or the session ended
// (404, or lost: a redialed session listens anew). Without a session
// (2026-07-28, or before initialize) it does nothing.
func (t *Transport) Listen() {
	t.mu.Lock()
	start := !t.listening && t.session != "" && !t.modern()
	t.listening = t.listening || start
	t.mu.Unlock()
	if start {
		go t.listen()
	}
}

func (t *Transport) listen() {
	var cur sseCursor
	ctx := t.closing
	dispatch := func(data []byte) bool {
		msg, err := decodeMessage(data)
		switch {
		case err != nil:
			t.log.Info("failed to unmarshal message on the GET stream (non-fatal)", "err", err)
		case !msg.hasID:
			t.notify(ctx, data)
		case msg.method != "":
			t.serve(ctx, data)
		}
		return false
	}
	for ctx.Err() == nil && t.GetSessionId() != "" {
		header := http.Header{}
		if cur.lastID != "" {
			header["Last-Event-Id"] = []string{cur.lastID}
		}
		resp, err := t.do(ctx, http.MethodGet, nil, hdrAcceptSSE, header, false)
		switch {
		case errors.Is(err, transport.ErrSessionTerminated):
			return
		case err != nil:
			t.log.Debug("GET stream failed", "err", err)
		case resp.StatusCode == http.StatusMethodNotAllowed:
			_ = resp.Body.Close()
			return // the server offers no GET stream
		case resp.StatusCode != http.StatusOK || mediaType(resp.Header.Get("Content-Type")) != "text/event-stream":
			t.log.Debug("GET stream refused", "status", resp.StatusCode)
			_ = resp.Body.Close()
		default:
			_, _ = readSSE(resp.Body, t.maxMsg, &cur, dispatch)
			_ = resp.Body.Close()
		}
		delay := time.Second
		if cur.hasRetry {
			delay = max(cur.retry, delay)
		}
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return
		}
	}
}
