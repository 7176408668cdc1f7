package streamhttp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countingServer is a raw keep-alive HTTP/1.1 server on 127.0.0.1 that
// answers every request with "ok" and records the request lines it saw.
func countingServer(t *testing.T) (string, func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		lines []string
		wg    sync.WaitGroup
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					mu.Lock()
					lines = append(lines, req.Method+" "+req.URL.RequestURI())
					mu.Unlock()
					_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// eachRT runs fn against net/http's Transport (the reference, expected to
// pass) and against Direct over an equally configured Fallback.
func eachRT(t *testing.T, configure func(*http.Transport), fn func(t *testing.T, rt http.RoundTripper)) {
	t.Run("Transport", func(t *testing.T) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		if configure != nil {
			configure(tr)
		}
		t.Cleanup(tr.CloseIdleConnections)
		fn(t, tr)
	})
	t.Run("Direct", func(t *testing.T) {
		d := newDirect(t)
		if configure != nil {
			configure(d.Fallback)
		}
		fn(t, d)
	})
}

// Defect 1: a request whose context is already done is still written to a
// pooled connection (the AfterFunc that poisons the deadline runs on its own
// goroutine, after the caller has written the request). net/http's
// Transport checks ctx.Done() before it sends anything: a cancelled
// tools/call must never reach the server.
func TestReviewCancelledRequestIsNotSent(t *testing.T) {
	eachRT(t, nil, func(t *testing.T, rt http.RoundTripper) {
		u, seen := countingServer(t)
		c := &http.Client{Transport: rt}
		_, body, err := get(t, c, http.MethodGet, u+"/warm", "")
		require.NoError(t, err)
		require.Equal(t, "ok", body)

		for i := 0; i < 20; i++ {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/cancelled/%d", u, i), strings.NewReader("{}"))
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			require.Error(t, err)
			// Warm the pool again (the cancelled request took its connection).
			_, _, err = get(t, c, http.MethodGet, u+"/warm", "")
			require.NoError(t, err)
		}
		time.Sleep(100 * time.Millisecond)
		var sent []string
		for _, l := range seen() {
			if strings.HasPrefix(l, "POST /cancelled/") {
				sent = append(sent, l)
			}
		}
		require.Empty(t, sent, "requests whose context was done before RoundTrip reached the server")
	})
}

// Defect 2: the server answers before reading the whole request body
// (401/413 on a large upload, or a handler that starts its answer first)
// and does not read the rest. net/http's Transport writes the body on its
// own goroutine and returns the answer; Direct blocks in Write until the
// server closes the connection, and then fails with a write error instead
// of returning the answer.
func TestReviewAnswerBeforeBodyRead(t *testing.T) {
	var release chan struct{} // each subtest's, closed when it ends
	earlyAnswer := func(br *bufio.Reader, conn net.Conn) {
		if _, err := http.ReadRequest(br); err != nil { // header only; the body is never read
			return
		}
		_, _ = io.WriteString(conn, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbig")
		<-release // keeps the connection open without reading it
	}
	for _, tc := range []struct {
		name string
		rt   func(t *testing.T) http.RoundTripper
	}{
		{"Transport", func(t *testing.T) http.RoundTripper {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.Proxy = nil
			t.Cleanup(tr.CloseIdleConnections)
			return tr
		}},
		{"Direct", func(t *testing.T) http.RoundTripper { return newDirect(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release = make(chan struct{})
			u := scripted(t, earlyAnswer)
			rel := release
			t.Cleanup(func() { close(rel) }) // before scripted's wait, which runs after it
			const size = 64 << 20            // far more than the socket buffers hold
			req, _ := http.NewRequest(http.MethodPost, u, io.LimitReader(zeroReader{}, size))
			req.ContentLength = size
			type result struct {
				resp *http.Response
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := tc.rt(t).RoundTrip(req)
				done <- result{resp, err}
			}()
			select {
			case r := <-done:
				require.NoError(t, r.err, "the server's answer is lost")
				defer r.resp.Body.Close()
				require.Equal(t, http.StatusRequestEntityTooLarge, r.resp.StatusCode)
			case <-time.After(hangGuard):
				t.Fatal("RoundTrip is blocked writing a body the server will not read, though its answer has arrived")
			}
		})
	}
}

// hangGuard ends a test that would otherwise block for ever; it is not a
// timing claim (an answer that comes at all is in time).
const hangGuard = time.Minute

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Defect 3: the Fallback's IdleConnTimeout is only applied when a
// connection to the same host is taken again; an idle connection is never
// closed by time (Transport arms a timer per idle connection). Sessions to
// a server that is not called again keep their sockets (and the server's)
// open until CloseIdleConnections.
func TestReviewIdleConnTimeoutClosesIdleConnection(t *testing.T) {
	eachRT(t, func(tr *http.Transport) { tr.IdleConnTimeout = 100 * time.Millisecond }, func(t *testing.T, rt http.RoundTripper) {
		var closed atomic.Int32
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed {
				closed.Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		_, body, err := get(t, &http.Client{Transport: rt}, http.MethodGet, srv.URL, "")
		require.NoError(t, err)
		require.Equal(t, "ok", body)
		require.Eventually(t, func() bool { return closed.Load() == 1 }, 2*time.Second, 20*time.Millisecond,
			"the connection idle longer than IdleConnTimeout is still open")
	})
}

// Defect 4: an IPv6 literal without a port (http://[::1]/) is dialled as
// "[[::1]]:80": net.SplitHostPort fails on "[::1]" and JoinHostPort adds a
// second pair of brackets. Transport dials "[::1]:80" (canonicalAddr uses
// URL.Hostname and URL.Port).
func TestReviewIPv6HostWithoutPort(t *testing.T) {
	var addr atomic.Value
	errStop := errors.New("stop")
	eachRT(t, func(tr *http.Transport) {
		tr.DialContext = func(_ context.Context, _, a string) (net.Conn, error) {
			addr.Store(a)
			return nil, errStop
		}
	}, func(t *testing.T, rt http.RoundTripper) {
		addr.Store("")
		req, _ := http.NewRequest(http.MethodGet, "http://[::1]/mcp", nil)
		_, err := rt.RoundTrip(req)
		require.ErrorIs(t, err, errStop)
		require.Equal(t, "[::1]:80", addr.Load())
	})
}

// Defect 5: Transport refuses a request with an invalid method ("net/http:
// invalid method"); Direct writes it as given, so a method carrying CRLF
// smuggles a second request onto the connection.
func TestReviewInvalidMethodRefused(t *testing.T) {
	eachRT(t, nil, func(t *testing.T, rt http.RoundTripper) {
		u, seen := countingServer(t)
		req, _ := http.NewRequest(http.MethodGet, u+"/real", nil)
		req.Method = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\nGET"
		resp, err := rt.RoundTrip(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		time.Sleep(100 * time.Millisecond)
		require.NotContains(t, seen(), "GET /smuggled")
		require.Error(t, err, "an invalid method is refused, as net/http's Transport does")
	})
}

// dropSecond answers the first request of its connection and closes the
// connection after reading the second one.
func dropSecond(br *bufio.Reader, conn net.Conn) {
	if !answer(br, conn, "first") {
		return
	}
	if req, err := http.ReadRequest(br); err == nil {
		_, _ = io.Copy(io.Discard, req.Body)
	}
}

// Defect 6: after a retry with a rewound body, resp.Request is Direct's
// private copy, not the caller's request (Transport sets resp.Request =
// origReq).
func TestReviewRetryKeepsResponseRequest(t *testing.T) {
	eachRT(t, nil, func(t *testing.T, rt http.RoundTripper) {
		u := scripted(t, dropSecond, func(br *bufio.Reader, conn net.Conn) { answer(br, conn, "second") })
		_, body, err := get(t, &http.Client{Transport: rt}, http.MethodGet, u, "")
		require.NoError(t, err)
		require.Equal(t, "first", body)
		req, _ := http.NewRequest(http.MethodPut, u, strings.NewReader("x"))
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err, "an idempotent PUT with GetBody is retried")
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		require.Equal(t, "second", string(b))
		require.Same(t, req, resp.Request, "resp.Request is the caller's request")
	})
}

// Defect 7: an empty Method means GET (and Request.Write sends GET), and
// Transport's isReplayable treats it as GET; Direct's retry rule switches
// on the raw field, so such a GET is not sent again after a reused
// connection is dropped.
func TestReviewEmptyMethodIsRetriedAsGet(t *testing.T) {
	eachRT(t, nil, func(t *testing.T, rt http.RoundTripper) {
		u := scripted(t, dropSecond, func(br *bufio.Reader, conn net.Conn) { answer(br, conn, "second") })
		_, body, err := get(t, &http.Client{Transport: rt}, http.MethodGet, u, "")
		require.NoError(t, err)
		require.Equal(t, "first", body)
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Method = ""
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err, "a GET (empty Method) is sent again on a new connection")
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		require.Equal(t, "second", string(b))
	})
}

// Sanity (expected to pass): trailers of a chunked answer reach
// resp.Trailer and the connection is reused afterwards; a Close while a
// Read blocks ends the Read (run with -race).
func TestReviewTrailersAndConcurrentClose(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	srv, conns := directServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			w.(http.Flusher).Flush()
			select {
			case <-block:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Trailer", "X-T")
		_, _ = io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		w.Header().Set("X-T", "tv")
	})
	d := newDirect(t)
	c := &http.Client{Transport: d}
	for i := 0; i < 3; i++ {
		resp, err := c.Get(srv.URL)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, "body", string(b))
		require.Equal(t, "tv", resp.Trailer.Get("X-T"))
		resp.Body.Close()
	}
	require.EqualValues(t, 1, conns.Load())

	resp, err := c.Get(srv.URL + "/stream")
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 10))
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, resp.Body.Close())
	select {
	case err := <-errc:
		require.Error(t, err)
	case <-time.After(hangGuard):
		t.Fatal("Read not unblocked by Close")
	}
}

// Defect 8: net/http's Transport reports context.Cause(ctx) when a
// request's context ends (transport.go: "return nil, context.Cause(ctx)",
// pc.cancelRequest(context.Cause(req.ctx))); Direct reports ctx.Err(), so a
// cause given with context.WithCancelCause / WithTimeoutCause is lost.
func TestReviewContextCauseReported(t *testing.T) {
	errWhy := errors.New("session closed by user")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv, _ := directServer(t, func(w http.ResponseWriter, r *http.Request) {
		select { // no answer until released
		case <-release:
		case <-r.Context().Done():
		}
	})
	for _, tc := range []struct {
		name string
		rt   func(t *testing.T) http.RoundTripper
	}{
		{"Transport", func(t *testing.T) http.RoundTripper {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.Proxy = nil
			t.Cleanup(tr.CloseIdleConnections)
			return tr
		}},
		{"Direct", func(t *testing.T) http.RoundTripper { return newDirect(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(50*time.Millisecond, func() { cancel(errWhy) })
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			_, err := (&http.Client{Transport: tc.rt(t)}).Do(req)
			require.ErrorIs(t, err, errWhy)
		})
	}
}

// errBodyReader fails its first Read.
type errBodyReader struct{ err error }

func (r errBodyReader) Read([]byte) (int, error) { return 0, r.err }
func (errBodyReader) Close() error               { return nil }

// Defect 9 (minor): a failure reading the caller's request body is the
// request's error in net/http ("Errors reading from the user's
// Request.Body are high priority", never retried). On a reused connection
// Direct sees "nothing written" (the header is still in its bufio.Writer),
// discards the good pooled connection and sends the request again with
// GetBody, swallowing the body's error.
func TestReviewRequestBodyErrorNotRetried(t *testing.T) {
	u, _ := countingServer(t)
	errBody := errors.New("body source failed")
	for _, tc := range []struct {
		name string
		rt   func(t *testing.T) http.RoundTripper
	}{
		{"Transport", func(t *testing.T) http.RoundTripper {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.Proxy = nil
			t.Cleanup(tr.CloseIdleConnections)
			return tr
		}},
		{"Direct", func(t *testing.T) http.RoundTripper { return newDirect(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &http.Client{Transport: tc.rt(t)}
			_, _, err := get(t, c, http.MethodGet, u+"/warm", "")
			require.NoError(t, err)
			req, _ := http.NewRequest(http.MethodPost, u+"/post", nil)
			req.Body = errBodyReader{errBody}
			req.ContentLength = 5
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("fresh")), nil }
			resp, err := c.Transport.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			require.ErrorIs(t, err, errBody)
		})
	}
}

// Sanity (expected to pass): HEAD, 204 and 304 answers carry no body, even
// with a Content-Length, and leave the connection reusable.
func TestReviewBodilessAnswersReuse(t *testing.T) {
	srv, conns := directServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.Header().Set("Content-Length", "5")
			w.WriteHeader(http.StatusNotModified)
		default:
			w.Header().Set("Content-Length", "5")
			_, _ = io.WriteString(w, "hello")
		}
	})
	c := &http.Client{Transport: newDirect(t)}
	for _, m := range []struct{ method, path string }{{"HEAD", "/"}, {"GET", "/204"}, {"GET", "/304"}, {"GET", "/"}, {"HEAD", "/"}} {
		status, body, err := get(t, c, m.method, srv.URL+m.path, "")
		require.NoError(t, err)
		require.NotZero(t, status)
		if m.method == "HEAD" || m.path != "/" {
			require.Empty(t, body)
		} else {
			require.Equal(t, "hello", body)
		}
	}
	require.EqualValues(t, 1, conns.Load())
}
