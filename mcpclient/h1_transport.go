package mcpclient

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// h1Transport is the http.RoundTripper of SSE and streamable HTTP sessions.
// For plain http:// upstreams without a proxy it runs each HTTP/1.1
// exchange on the calling goroutine over a pool of keep-alive connections:
// the request is written with http.Request.Write and the answer read with
// http.ReadResponse, both from the standard library. Go's own Transport
// hands every exchange to a writer and a reader goroutine per connection;
// on small machines those hand-offs (goroutine wake-ups across threads) were
// the largest cost of a proxied tool call after the upstream itself
// (README, Benchmarks). Everything else (https, proxies from the
// environment, requests a server may upgrade) goes to fallback, Go's
// standard Transport.
//
// A pooled connection is checked before reuse with a non-blocking peek, so
// one the server closed while idle is dropped instead of failing a call.
// A request whose context ends interrupts its connection, which is then
// closed, never reused.
type h1Transport struct {
	fallback http.RoundTripper
	proxy    func(*http.Request) (*url.URL, error) // a proxied request goes to fallback
	dialer   net.Dialer
	maxIdle  int           // idle connections kept per host
	idleFor  time.Duration // an idle connection older than this is closed

	mu   sync.Mutex
	idle map[string][]*h1Conn // by host:port, most recently used last
}

// h1Conn is one keep-alive connection.
type h1Conn struct {
	c      net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time
}

func newH1Transport(fallback http.RoundTripper) *h1Transport {
	return &h1Transport{
		fallback: fallback,
		proxy:    http.ProxyFromEnvironment,
		dialer:   net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:  64,
		idleFor:  90 * time.Second,
		idle:     map[string][]*h1Conn{},
	}
}

// RoundTrip implements http.RoundTripper.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.direct(req) {
		return t.fallback.RoundTrip(req)
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		pc, reused, err := t.conn(ctx, addr)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := t.exchange(ctx, req, pc, addr)
		if err == nil {
			return resp, nil
		}
		// A reused connection the server dropped between the peek and the
		// write: a request without a body (GET, DELETE) is safe to send
		// again on a new connection, as Go's Transport does. A POST is not
		// replayed: the server may have acted on it.
		if reused && attempt == 0 && ctx.Err() == nil && (req.Body == nil || req.Body == http.NoBody) && errors.Is(err, io.EOF) {
			continue
		}
		return nil, err
	}
}

// direct reports whether req takes the on-goroutine path.
func (t *h1Transport) direct(req *http.Request) bool {
	if req.URL.Scheme != "http" || req.URL.Host == "" || req.Header.Get("Upgrade") != "" {
		return false
	}
	if p, err := t.proxy(req); err != nil || p != nil {
		return false
	}
	return true
}

// exchange writes req on pc and reads the answer's head. The body stays on
// pc until it is read to the end (pc goes back to the pool) or closed.
func (t *h1Transport) exchange(ctx context.Context, req *http.Request, pc *h1Conn, addr string) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { _ = pc.c.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = pc.c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := req.Write(pc.bw); err != nil {
		return fail(err)
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(err)
	}
	var resp *http.Response
	for {
		var err error
		resp, err = http.ReadResponse(pc.br, req)
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) && pc.br.Buffered() == 0 {
				err = io.EOF // nothing of an answer arrived
			}
			return fail(err)
		}
		// 1xx answers (103 Early Hints, 100 Continue) precede the real
		// one; 101 is not expected since upgrades go to fallback.
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("unexpected 101 Switching Protocols"))
	}
	reuse := !resp.Close && !req.Close
	if resp.Body == http.NoBody { // 202 to a notification, 204, HEAD
		if stop() && reuse {
			t.put(addr, pc)
		} else {
			_ = pc.c.Close()
		}
		return resp, nil
	}
	resp.Body = &h1Body{rc: resp.Body, t: t, pc: pc, addr: addr, ctx: ctx, stop: stop, reuse: reuse}
	return resp, nil
}

// conn returns a live idle connection to addr, or dials one.
func (t *h1Transport) conn(ctx context.Context, addr string) (*h1Conn, bool, error) {
	now := time.Now()
	for {
		t.mu.Lock()
		l := t.idle[addr]
		if len(l) == 0 {
			t.mu.Unlock()
			break
		}
		pc := l[len(l)-1]
		l[len(l)-1] = nil
		t.idle[addr] = l[:len(l)-1]
		t.mu.Unlock()
		if now.Sub(pc.idleAt) < t.idleFor && h1Alive(pc) {
			return pc, true, nil
		}
		_ = pc.c.Close()
	}
	c, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	return &h1Conn{c: c, br: bufio.NewReaderSize(c, 16<<10), bw: bufio.NewWriterSize(c, 8<<10)}, false, nil
}

// put returns pc to the idle pool, closing the oldest connections beyond
// maxIdle and those idle for longer than idleFor.
func (t *h1Transport) put(addr string, pc *h1Conn) {
	if err := pc.c.SetDeadline(time.Time{}); err != nil {
		_ = pc.c.Close()
		return
	}
	now := time.Now()
	pc.idleAt = now
	var drop []*h1Conn
	t.mu.Lock()
	l := append(t.idle[addr], pc)
	for len(l) > 0 && (len(l) > t.maxIdle || now.Sub(l[0].idleAt) >= t.idleFor) {
		drop = append(drop, l[0])
		l = l[1:]
	}
	t.idle[addr] = l
	t.mu.Unlock()
	for _, c := range drop {
		_ = c.c.Close()
	}
}

// CloseIdleConnections closes every idle connection (http.Client calls it).
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*h1Conn{}
	t.mu.Unlock()
	for _, l := range idle {
		for _, pc := range l {
			_ = pc.c.Close()
		}
	}
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// h1Alive reports whether an idle connection is still open with nothing
// unread on it: one non-blocking peek at the socket.
func h1Alive(pc *h1Conn) bool {
	if pc.br.Buffered() > 0 {
		return false
	}
	sc, ok := pc.c.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var b [1]byte
	err = raw.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = n < 0 && (errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK))
		return true // never wait: this is a probe
	})
	return err == nil && alive
}

// h1Body is a response body that hands its connection back when read to
// the end. Close may be called from another goroutine while a Read is
// blocked (a stream being stopped): it closes the connection, which ends
// that Read.
type h1Body struct {
	rc    io.ReadCloser
	t     *h1Transport
	pc    *h1Conn
	addr  string
	ctx   context.Context
	stop  func() bool
	reuse bool

	mu   sync.Mutex // held by Read while it reads rc
	done atomic.Bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done.Load() {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.release(true)
	case err != nil:
		b.release(false)
		if b.ctx.Err() != nil {
			err = b.ctx.Err()
		}
	}
	return n, err
}

// Close releases the body. What is left of it is read if it has arrived
// (a JSON decoder stops short of the end of a body); a body still
// streaming, or being read by another goroutine, closes its connection.
func (b *h1Body) Close() error {
	if !b.mu.TryLock() {
		b.release(false) // a Read is blocked: closing the connection ends it
		return nil
	}
	defer b.mu.Unlock()
	if b.done.Load() {
		return nil
	}
	// The rest is read only if it is there already or about to be: a
	// short deadline and a size bound keep Close from waiting on a stream.
	_ = b.pc.c.SetReadDeadline(time.Now().Add(h1DrainWait))
	n, err := io.CopyN(io.Discard, b.rc, h1DrainMax)
	b.release(errors.Is(err, io.EOF) && n < h1DrainMax)
	return nil
}

// Bounds of the drain in h1Body.Close.
const (
	h1DrainWait = 2 * time.Millisecond
	h1DrainMax  = 256 << 10
)

// release gives the connection back to the pool (the body ended cleanly and
// the connection may be kept) or closes it; only the first call acts.
func (b *h1Body) release(ended bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	if b.stop() && ended && b.reuse {
		b.t.put(b.addr, b.pc)
		return
	}
	_ = b.pc.c.Close()
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
