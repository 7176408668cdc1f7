package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
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
)

// h1Server is an httptest server that counts the connections it accepted.
type h1Server struct {
	*httptest.Server
	conns atomic.Int32
}

func newH1Server(t *testing.T, h http.HandlerFunc, configure ...func(*http.Server)) *h1Server {
	t.Helper()
	s := &h1Server{}
	s.Server = httptest.NewUnstartedServer(h)
	for _, f := range configure {
		f(s.Config)
	}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func newTestH1(t *testing.T) (*h1Transport, *http.Client) {
	t.Helper()
	tr := newH1Transport(http.DefaultTransport.(*http.Transport).Clone())
	t.Cleanup(tr.CloseIdleConnections)
	return tr, &http.Client{Transport: tr}
}

func h1Post(t *testing.T, c *http.Client, url, body string) (int, string) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestH1TransportReusesConnections(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"echo":%s}`, b)
	})
	_, c := newTestH1(t)
	for i := 0; i < 20; i++ {
		code, body := h1Post(t, c, srv.URL, fmt.Sprintf(`{"i":%d}`, i))
		require.Equal(t, 200, code)
		require.Equal(t, fmt.Sprintf(`{"echo":{"i":%d}}`, i), body)
	}
	require.EqualValues(t, 1, srv.conns.Load(), "sequential calls share one keep-alive connection")
}

func TestH1TransportEmptyAndPartlyReadBodiesKeepTheConnection(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/notify" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		// A value followed by padding: a decoder stops reading after the
		// value, so Close finds the rest of the body unread.
		body := `{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("x", 1000) + `"}}` + strings.Repeat(" ", 2000)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		_, _ = io.WriteString(w, body)
	})
	_, c := newTestH1(t)
	for i := 0; i < 5; i++ {
		resp, err := c.Post(srv.URL+"/notify", "application/json", strings.NewReader(`{}`))
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		require.NoError(t, resp.Body.Close()) // never read, as mcp-go does for a 202

		resp, err = c.Post(srv.URL+"/call", "application/json", strings.NewReader(`{}`))
		require.NoError(t, err)
		var v map[string]any // a decoder stops after the value, before EOF
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
		require.NoError(t, resp.Body.Close())
		require.Equal(t, "2.0", v["jsonrpc"])
	}
	require.EqualValues(t, 1, srv.conns.Load())
}

func TestH1TransportConnectionCloseIsHonoured(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "ok")
	})
	_, c := newTestH1(t)
	for i := 0; i < 3; i++ {
		code, body := h1Post(t, c, srv.URL, "{}")
		require.Equal(t, 200, code)
		require.Equal(t, "ok", body)
	}
	require.EqualValues(t, 3, srv.conns.Load())
}

// A server that drops a keep-alive connection after answering, without
// saying so: the next call must not fail on the dead connection.
func TestH1TransportDropsConnectionsTheServerClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer conn.Close()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	_, c := newTestH1(t)
	u := "http://" + ln.Addr().String() + "/"
	for i := 0; i < 5; i++ {
		code, body := h1Post(t, c, u, "{}")
		require.Equal(t, 200, code)
		require.Equal(t, "ok", body)
		// Let the close reach this side before the next call peeks.
		require.Eventually(t, func() bool { return accepted.Load() == int32(i+1) }, 5*time.Second, time.Millisecond)
		time.Sleep(5 * time.Millisecond)
	}
	require.EqualValues(t, 5, accepted.Load())
}

func TestH1TransportServerIdleTimeout(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") },
		func(s *http.Server) { s.IdleTimeout = 20 * time.Millisecond })
	_, c := newTestH1(t)
	for i := 0; i < 3; i++ {
		code, _ := h1Post(t, c, srv.URL, "{}")
		require.Equal(t, 200, code)
		time.Sleep(100 * time.Millisecond) // the server closes the idle connection
	}
	require.EqualValues(t, 3, srv.conns.Load())
}

func TestH1TransportContextCancelsAWaitingCall(t *testing.T) {
	release := make(chan struct{})
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		_, _ = io.WriteString(w, "ok")
	})
	defer close(release)
	_, c := newTestH1(t)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/slow", strings.NewReader("{}"))
	require.NoError(t, err)
	_, err = c.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	code, body := h1Post(t, c, srv.URL+"/fast", "{}")
	require.Equal(t, 200, code)
	require.Equal(t, "ok", body)
	require.EqualValues(t, 2, srv.conns.Load(), "the interrupted connection is not reused")
}

func TestH1TransportStreamClosedWhileReading(t *testing.T) {
	stop := make(chan struct{})
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	})
	defer close(stop)
	_, c := newTestH1(t)
	req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/stream", nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "data: one\n", line)

	readDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, br) // blocks: the stream stays open
		readDone <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, resp.Body.Close())
	select {
	case <-readDone:
	case <-time.After(10 * time.Second):
		t.Fatal("closing the body did not end the blocked read")
	}

	code, body := h1Post(t, c, srv.URL+"/call", "{}")
	require.Equal(t, 200, code)
	require.Equal(t, "ok", body)
}

func TestH1TransportConcurrentCalls(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	})
	_, c := newTestH1(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16*50)
	for g := 0; g < 16; g++ {
		wg.Go(func() {
			for i := 0; i < 50; i++ {
				want := fmt.Sprintf("%d-%d", g, i)
				resp, err := c.Post(srv.URL, "text/plain", strings.NewReader(want))
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || string(b) != want {
					errs <- fmt.Errorf("got %q, %v; want %q", b, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.LessOrEqual(t, srv.conns.Load(), int32(16))
}

func TestH1TransportFallbacks(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "tls")
	}))
	t.Cleanup(tlsSrv.Close)
	var viaProxy atomic.Int32
	proxy := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		viaProxy.Add(1)
		_, _ = io.WriteString(w, "proxied "+r.URL.String())
	})
	fallback := tlsSrv.Client().Transport.(*http.Transport).Clone()
	proxyURL, err := url.Parse(proxy.URL)
	require.NoError(t, err)
	fallback.Proxy = http.ProxyURL(proxyURL)
	tr := newH1Transport(fallback)
	tr.proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == "proxied.example" {
			return proxyURL, nil
		}
		return nil, nil
	}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}

	// https goes through Go's Transport (which here trusts the test CA and
	// would use the proxy only for plain http).
	fallback.Proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Scheme == "https" {
			return nil, nil
		}
		return proxyURL, nil
	}
	code, body := h1Post(t, c, tlsSrv.URL, "{}")
	require.Equal(t, 200, code)
	require.Equal(t, "tls", body)

	// A proxied http URL goes through Go's Transport and its proxy.
	code, body = h1Post(t, c, "http://proxied.example/mcp", "{}")
	require.Equal(t, 200, code)
	require.Equal(t, "proxied http://proxied.example/mcp", body)
	require.EqualValues(t, 1, viaProxy.Load())
}

func TestH1TransportDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, c := newTestH1(t)
	_, err = c.Post("http://"+addr+"/", "application/json", strings.NewReader("{}"))
	require.Error(t, err)
	var op *net.OpError
	require.True(t, errors.As(err, &op), "a refused connection surfaces as the dial error: %v", err)
}
