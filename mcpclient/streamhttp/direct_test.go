package streamhttp_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/mcpclient/streamhttp"
)

// directServer is an httptest server that counts the connections it
// accepted.
func directServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func newDirect(t *testing.T) *streamhttp.Direct {
	t.Helper()
	fb := http.DefaultTransport.(*http.Transport).Clone()
	fb.Proxy = nil
	d := streamhttp.NewDirect(fb)
	t.Cleanup(d.CloseIdleConnections)
	return d
}

func get(t *testing.T, c *http.Client, method, u, body string) (int, string, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, u, rd)
	require.NoError(t, err)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Sequential requests, answered with a length or in chunks, share one
// connection; the request reaches the server as written.
func TestDirectReusesConnection(t *testing.T) {
	srv, conns := directServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Query().Get("chunked") != "" {
			w.(http.Flusher).Flush() // no length: chunked
		}
		fmt.Fprintf(w, "%s %s %s %s", r.Method, r.URL.RequestURI(), r.Header.Get("X-Test"), b)
	})
	c := &http.Client{Transport: newDirect(t)}
	for i := 0; i < 6; i++ {
		q := ""
		if i%2 == 1 {
			q = "&chunked=1"
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp?i="+fmt.Sprint(i)+q, strings.NewReader("body"))
		req.Header.Set("X-Test", "h")
		resp, err := c.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		n, err := resp.Body.Read(make([]byte, 1))
		require.Equal(t, 0, n)
		require.ErrorIs(t, err, io.EOF, "a body at its end stays there")
		require.NoError(t, resp.Body.Close())
		require.Equal(t, fmt.Sprintf("POST /mcp?i=%d%s h body", i, q), string(b))
	}
	require.EqualValues(t, 1, conns.Load())
}

// A body closed before its end, an answer with Connection: close and a
// read after Close each end the connection.
func TestDirectDoesNotReuseUnfinishedConnection(t *testing.T) {
	srv, conns := directServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		_, _ = w.Write([]byte(strings.Repeat("x", 64<<10)))
	})
	c := &http.Client{Transport: newDirect(t)}
	resp, err := c.Get(srv.URL + "/part")
	require.NoError(t, err)
	_, err = resp.Body.Read(make([]byte, 10))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	_, err = resp.Body.Read(make([]byte, 10))
	require.ErrorIs(t, err, http.ErrBodyReadAfterClose)

	_, _, err = get(t, c, http.MethodGet, srv.URL+"/close", "")
	require.NoError(t, err)
	_, _, err = get(t, c, http.MethodGet, srv.URL+"/whole", "")
	require.NoError(t, err)
	_, _, err = get(t, c, http.MethodGet, srv.URL+"/whole", "")
	require.NoError(t, err)
	require.EqualValues(t, 3, conns.Load(), "the part-read and the close answers each took their connection with them")
}

// An idle connection the server closed is found before a request is
// written to it: a POST, which is never retried once written, succeeds on
// a new connection.
func TestDirectSkipsIdleConnectionClosedByServer(t *testing.T) {
	closed := make(chan struct{})
	u := scripted(t, func(br *bufio.Reader, conn net.Conn) {
		answer(br, conn, "first")
		_ = conn.Close()
		close(closed)
	}, func(br *bufio.Reader, conn net.Conn) { answer(br, conn, "second") })
	c := &http.Client{Transport: newDirect(t)}
	_, body, err := get(t, c, http.MethodPost, u, "a")
	require.NoError(t, err)
	require.Equal(t, "first", body)
	<-closed
	_, body, err = get(t, c, http.MethodPost, u, "b")
	require.NoError(t, err)
	require.Equal(t, "second", body)
}

// scripted is a raw HTTP/1.1 server whose n-th connection runs script n.
func scripted(t *testing.T, scripts ...func(br *bufio.Reader, conn net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, s := range scripts {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				s(bufio.NewReader(conn), conn)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func answer(br *bufio.Reader, conn net.Conn, text string) bool {
	req, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, req.Body)
	_, _ = fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(text), text)
	return true
}

// A reused connection the server drops after reading the request: an
// idempotent GET is sent again on a new connection, a POST is not (net/
// http's rule); a fresh connection is never retried.
func TestDirectRetryRule(t *testing.T) {
	dropSecond := func(br *bufio.Reader, conn net.Conn) {
		if !answer(br, conn, "first") {
			return
		}
		req, err := http.ReadRequest(br)
		if err == nil {
			_, _ = io.Copy(io.Discard, req.Body)
		}
		// closed without an answer
	}
	second := func(br *bufio.Reader, conn net.Conn) { answer(br, conn, "second") }

	u := scripted(t, dropSecond, second)
	c := &http.Client{Transport: newDirect(t)}
	_, body, err := get(t, c, http.MethodGet, u, "")
	require.NoError(t, err)
	require.Equal(t, "first", body)
	_, body, err = get(t, c, http.MethodGet, u, "")
	require.NoError(t, err)
	require.Equal(t, "second", body, "the GET was sent again on a new connection")

	u = scripted(t, dropSecond, second)
	c = &http.Client{Transport: newDirect(t)}
	_, _, err = get(t, c, http.MethodPost, u, "x")
	require.NoError(t, err)
	_, _, err = get(t, c, http.MethodPost, u, "y")
	require.Error(t, err, "a POST written to a connection is not sent twice")

	u = scripted(t, func(br *bufio.Reader, conn net.Conn) { _, _ = http.ReadRequest(br) }, second)
	c = &http.Client{Transport: newDirect(t)}
	_, _, err = get(t, c, http.MethodGet, u, "")
	require.Error(t, err, "a new connection's failure is the request's")
}

// Informational answers are skipped; a 101 is refused.
func TestDirectInformationalAnswers(t *testing.T) {
	u := scripted(t, func(br *bufio.Reader, conn net.Conn) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(conn, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nreal")
	}, func(br *bufio.Reader, conn net.Conn) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")
	})
	c := &http.Client{Transport: newDirect(t)}
	status, body, err := get(t, c, http.MethodGet, u, "")
	require.NoError(t, err)
	require.Equal(t, 200, status)
	require.Equal(t, "real", body)
	c = &http.Client{Transport: newDirect(t)}
	_, _, err = get(t, c, http.MethodGet, u, "")
	require.ErrorContains(t, err, "101")
}

// An answer's header over the Fallback's limit fails the request.
func TestDirectHeaderLimit(t *testing.T) {
	srv, _ := directServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("b", 8<<10))
		_, _ = io.WriteString(w, "ok")
	})
	d := newDirect(t)
	d.Fallback.MaxResponseHeaderBytes = 4 << 10
	_, _, err := get(t, &http.Client{Transport: d}, http.MethodGet, srv.URL, "")
	require.ErrorContains(t, err, "exceeded the size limit")
	d.Fallback.MaxResponseHeaderBytes = 64 << 10
	_, body, err := get(t, &http.Client{Transport: d}, http.MethodGet, srv.URL, "")
	require.NoError(t, err)
	require.Equal(t, "ok", body)
}

// A context ended while the answer streams ends the read at once with the
// context's error, and the connection with it.
func TestDirectContextEndsStream(t *testing.T) {
	release := make(chan struct{})
	srv, conns := directServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := &http.Client{Transport: newDirect(t)}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/stream", nil)
	resp, err := c.Do(req)
	require.NoError(t, err)
	buf := make([]byte, 64)
	n, err := resp.Body.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "data: one\n\n", string(buf[:n]))
	// Nothing else ends the stream (the handler waits for release or the
	// connection's end): a Direct that ignored the context would block here.
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = io.ReadAll(resp.Body)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, resp.Body.Close())

	_, body, err := get(t, c, http.MethodGet, srv.URL+"/ok", "")
	require.NoError(t, err)
	require.Equal(t, "ok", body)
	require.EqualValues(t, 2, conns.Load(), "the cancelled stream's connection was not reused")

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/ok", nil)
	_, err = c.Do(req)
	require.ErrorIs(t, err, context.Canceled)
}

// https and proxied requests go to the Fallback, which speaks TLS and to
// the proxy.
func TestDirectFallback(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "tls")
	}))
	t.Cleanup(tlsSrv.Close)
	d := newDirect(t)
	d.Fallback.TLSClientConfig = &tls.Config{RootCAs: tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	_, body, err := get(t, &http.Client{Transport: d}, http.MethodGet, tlsSrv.URL, "")
	require.NoError(t, err)
	require.Equal(t, "tls", body)

	var proxied atomic.Int32
	proxy, _ := directServer(t, func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		_, _ = io.WriteString(w, "via proxy to "+r.URL.Host)
	})
	pu, _ := url.Parse(proxy.URL)
	d = newDirect(t)
	d.Fallback.Proxy = http.ProxyURL(pu)
	_, body, err = get(t, &http.Client{Transport: d}, http.MethodGet, "http://upstream.invalid/x", "")
	require.NoError(t, err)
	require.Equal(t, "via proxy to upstream.invalid", body)
	require.EqualValues(t, 1, proxied.Load())

	d = newDirect(t)
	d.Fallback.Proxy = func(*http.Request) (*url.URL, error) { return nil, errors.New("no proxy for you") }
	_, _, err = get(t, &http.Client{Transport: d}, http.MethodGet, "http://upstream.invalid/x", "")
	require.ErrorContains(t, err, "no proxy for you")
}

// Concurrent callers each get a whole answer; idle connections are kept up
// to the Fallback's limit per host.
func TestDirectConcurrentCallers(t *testing.T) {
	srv, conns := directServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	})
	d := newDirect(t)
	d.Fallback.MaxIdleConnsPerHost = 4
	c := &http.Client{Transport: d}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				want := fmt.Sprintf("%d-%d-%s", g, i, strings.Repeat("p", i*100))
				resp, err := c.Post(srv.URL, "text/plain", strings.NewReader(want))
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || string(b) != want {
					errs <- fmt.Errorf("got %q, %v", b, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	before := conns.Load()
	for i := 0; i < 10; i++ {
		_, _, err := get(t, c, http.MethodPost, srv.URL, "z")
		require.NoError(t, err)
	}
	require.Equal(t, before, conns.Load(), "sequential calls after the burst reuse a kept connection")
	require.Less(t, before, int32(16*50), "connections were reused during the burst")
}

// countingConn counts the writes to a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A request, header and body, goes out in one write (one system call).
func TestDirectWritesRequestOnce(t *testing.T) {
	srv, _ := directServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	})
	d := newDirect(t)
	var writes atomic.Int32
	var dialer net.Dialer
	d.Fallback.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		return countingConn{c, &writes}, err
	}
	c := &http.Client{Transport: d}
	for i := 0; i < 3; i++ {
		body := []byte(strings.Repeat("b", 100*i+1))
		req, _ := http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(bytes.NewReader(body)))
		req.ContentLength = int64(len(body))
		resp, err := c.Do(req)
		require.NoError(t, err)
		got, _ := io.ReadAll(resp.Body)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, body, got)
		require.EqualValues(t, i+1, writes.Load())
	}
}
