package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TLS names of NewTLSFiles: the server certificate is valid for
// TLSServerName and 127.0.0.1, and the client certificate's subject CN is
// TLSClientCN.
const (
	TLSServerName = "temporal.test"
	TLSClientCN   = "mcpflow-test-client"
)

// TLSFiles are the paths of PEM files that NewTLSFiles wrote into a test's
// temporary directory.
type TLSFiles struct {
	CA         string // the CA certificate that signed both others
	ServerCert string // server certificate for TLSServerName and 127.0.0.1
	ServerKey  string // its private key (PKCS #8)
	ClientCert string // client certificate with CN TLSClientCN
	ClientKey  string // its private key (PKCS #8)
}

// NewTLSFiles makes a throwaway CA, a server certificate for 127.0.0.1 and
// the DNS name TLSServerName (subject alternative names) and a client
// certificate (CN TLSClientCN) signed by the same CA, all ECDSA P-256 and
// valid for a day, and writes them as PEM files into t.TempDir().
func NewTLSFiles(t testing.TB) *TLSFiles {
	t.Helper()
	dir := t.TempDir()
	f := &TLSFiles{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"),
		ServerKey:  filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey:  filepath.Join(dir, "client-key.pem"),
	}
	now := time.Now()
	serial := int64(1)
	template := func(cn string) *x509.Certificate {
		serial++
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn, Organization: []string{"mcpflow tests"}},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
		}
	}
	caTmpl := template("mcpflow test CA")
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	caKey, caDER := issue(t, caTmpl, nil, nil)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, f.CA, "CERTIFICATE", caDER)

	srvTmpl := template(TLSServerName)
	srvTmpl.DNSNames = []string{TLSServerName}
	srvTmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	srvTmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	srvKey, srvDER := issue(t, srvTmpl, ca, caKey)
	writePEM(t, f.ServerCert, "CERTIFICATE", srvDER)
	writeKey(t, f.ServerKey, srvKey)

	cliTmpl := template(TLSClientCN)
	cliTmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	cliKey, cliDER := issue(t, cliTmpl, ca, caKey)
	writePEM(t, f.ClientCert, "CERTIFICATE", cliDER)
	writeKey(t, f.ClientKey, cliKey)
	return f
}

// CertPool returns a pool holding f.CA, for tls.Config.RootCAs or
// ClientCAs.
func (f *TLSFiles) CertPool(t testing.TB) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("no certificate in %s", f.CA)
	}
	return pool
}

// issue makes a P-256 key and a certificate for it from tmpl, signed by
// parent and parentKey, or self-signed when parent is nil.
func issue(t testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}

func writeKey(t testing.TB, path string, key *ecdsa.PrivateKey) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "PRIVATE KEY", der)
}

func writePEM(t testing.TB, path, blockType string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TLSProxyOptions tune StartTLSProxy.
type TLSProxyOptions struct {
	// Backend is the host:port of the plaintext (HTTP/2 cleartext) gRPC
	// server to forward to, such as Temporal.HostPort.
	Backend string
	// Files are the certificates: the proxy serves Files.ServerCert and
	// verifies client certificates against Files.CA.
	Files *TLSFiles
	// RequireClientCert makes it mTLS: connections without a client
	// certificate signed by Files.CA fail the handshake. Without it a
	// client certificate is optional, and verified when given.
	RequireClientCert bool
	// RequireAPIKey, when set, refuses requests without the header
	// "authorization: Bearer <RequireAPIKey>" with gRPC status
	// UNAUTHENTICATED (16).
	RequireAPIKey string
}

// TLSProxy is a TLS-terminating gRPC reverse proxy on 127.0.0.1 in front of
// a plaintext gRPC server: tests point a client at Addr to prove it speaks
// TLS, mTLS or sends an API key. Its observations are safe for concurrent
// use.
type TLSProxy struct {
	// Addr is the 127.0.0.1:port the proxy listens on.
	Addr string

	srv       *http.Server
	transport *http.Transport
	served    chan struct{} // closed when Serve returned
	logs      *SyncBuffer
	closeOnce sync.Once

	mu       sync.Mutex
	conns    map[net.Conn]struct{} // open connections to the backend
	inflight int                   // handlers running
	closing  bool                  // Close began: refuse new requests
	requests int
	rejected int
	cns      []string
	auths    []string
}

// StartTLSProxy starts a proxy for o on a free 127.0.0.1 port. It speaks
// only HTTP/2 (ALPN "h2", as gRPC clients require) and forwards every
// request, trailers included, to o.Backend over HTTP/2 cleartext; long
// unary calls such as Temporal's long polls pass. Cleanup closes it (see
// Close) and, when t failed, logs the proxy's errors.
func StartTLSProxy(t testing.TB, o TLSProxyOptions) *TLSProxy {
	t.Helper()
	if o.Backend == "" || o.Files == nil {
		t.Fatal("testenv.StartTLSProxy: Backend and Files are required")
	}
	cert, err := tls.LoadX509KeyPair(o.Files.ServerCert, o.Files.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	tlsConf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    o.Files.CertPool(t),
		ClientAuth:   tls.VerifyClientCertIfGiven,
		NextProtos:   []string{"h2"},
		MinVersion:   tls.VersionTLS12,
	}
	if o.RequireClientCert {
		tlsConf.ClientAuth = tls.RequireAndVerifyClientCert
	}

	p := &TLSProxy{served: make(chan struct{}), logs: &SyncBuffer{}, conns: map[net.Conn]struct{}{}}

	// The backend leg: HTTP/2 with prior knowledge over plain TCP (h2c),
	// never HTTP/1.1, which gRPC servers do not speak.
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	transport := &http.Transport{
		Protocols:          h2c,
		DialContext:        p.dialBackend,
		DisableCompression: true, // pass grpc-encoding through untouched
	}
	backend := &url.URL{Scheme: "http", Host: o.Backend}

	p.transport = transport
	errLog := log.New(p.logs, "tlsproxy: ", log.LstdFlags|log.Lmicroseconds)
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			// Out has lost the hop-by-hop headers but for "te: trailers",
			// which ServeHTTP keeps and gRPC servers insist on.
			r.SetURL(backend)
		},
		Transport:     transport,
		FlushInterval: -1, // write every frame at once
		ErrorLog:      errLog,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client went away (a canceled poll): nobody to answer
			}
			errLog.Printf("%s: backend %s: %v", r.URL.Path, o.Backend, err)
			grpcError(w, 14, "tlsproxy: backend unavailable: "+err.Error()) // UNAVAILABLE
		},
	}

	var handler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		p.mu.Lock()
		if p.closing {
			p.mu.Unlock()
			grpcError(w, 14, "tlsproxy: closing") // UNAVAILABLE
			return
		}
		p.inflight++
		defer func() {
			p.mu.Lock()
			p.inflight--
			p.mu.Unlock()
		}()
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			p.cns = appendNew(p.cns, r.TLS.VerifiedChains[0][0].Subject.CommonName)
		}
		if auth != "" {
			p.auths = appendNew(p.auths, auth)
		}
		refuse := o.RequireAPIKey != "" &&
			subtle.ConstantTimeCompare([]byte(auth), []byte("Bearer "+o.RequireAPIKey)) != 1
		if refuse {
			p.rejected++
		} else {
			p.requests++
		}
		p.mu.Unlock()
		if refuse {
			grpcError(w, 16, "tlsproxy: missing or wrong API key") // UNAUTHENTICATED
			return
		}
		rp.ServeHTTP(w, r)
	})

	protocols := new(http.Protocols)
	protocols.SetHTTP2(true) // and no HTTP/1: ALPN offers only "h2"
	p.srv = &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConf,
		Protocols:         protocols,
		ReadHeaderTimeout: 10 * time.Second,
		// No read or write timeout: a long poll holds its request open for
		// over a minute.
		ErrorLog: errLog,
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = l.Addr().String()
	go func() {
		defer close(p.served)
		// Certificates come from TLSConfig.
		if err := p.srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errLog.Printf("serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		p.Close()
		if t.Failed() {
			if logs := p.logs.String(); logs != "" {
				t.Logf("TLS proxy %s log:\n%s", p.Addr, logs)
			}
		}
	})
	return p
}

// Close stops the proxy: it stops accepting, gives in-flight requests a
// second to finish, then closes every connection (a client's pending long
// poll fails) and waits for its handlers and connections to the backend to
// end. It is safe to call more than once; cleanup calls it.
func (p *TLSProxy) Close() {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closing = true
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := p.srv.Shutdown(ctx); err != nil {
			_ = p.srv.Close()
		}
		<-p.served
		// Closing the client connections canceled the requests of the
		// handlers still running, and so their backend requests.
		for deadline := time.Now().Add(10 * time.Second); p.running() > 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				_, _ = p.logs.Write([]byte("tlsproxy: handlers still running 10s after Close\n"))
				break
			}
		}
		// A backend connection whose last stream was canceled just now
		// may not count as idle yet: close every one.
		p.transport.CloseIdleConnections()
		p.mu.Lock()
		conns := slices.Collect(maps.Keys(p.conns))
		p.mu.Unlock()
		for _, c := range conns {
			_ = c.Close() // trackedConn.Close takes p.mu
		}
	})
}

func (p *TLSProxy) running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inflight
}

// dialBackend dials the backend and tracks the connection for Close.
func (p *TLSProxy) dialBackend(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, p: p}
	p.mu.Lock()
	p.conns[tc] = struct{}{}
	p.mu.Unlock()
	return tc, nil
}

// trackedConn is a backend connection that leaves TLSProxy.conns when
// closed.
type trackedConn struct {
	net.Conn
	p *TLSProxy
}

func (c *trackedConn) Close() error {
	c.p.mu.Lock()
	delete(c.p.conns, c)
	c.p.mu.Unlock()
	return c.Conn.Close()
}

// Requests returns how many requests the proxy forwarded to the backend.
func (p *TLSProxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests
}

// Rejected returns how many requests it refused for a missing or wrong API
// key.
func (p *TLSProxy) Rejected() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rejected
}

// ClientCNs returns the distinct subject CNs of the verified client
// certificates seen, in order of first appearance.
func (p *TLSProxy) ClientCNs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.cns)
}

// Authorizations returns the distinct values of the authorization header
// seen (forwarded or refused), in order of first appearance.
func (p *TLSProxy) Authorizations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.auths)
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// grpcError answers with a gRPC "trailers-only" response: HTTP 200, one
// HEADERS frame that ends the stream and holds the status. msg must be
// any text.
func grpcError(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", strconv.Itoa(code))
	h.Set("Grpc-Message", grpcPercentEncode(msg))
	w.WriteHeader(http.StatusOK)
}

// grpcPercentEncode encodes a grpc-message value as the gRPC HTTP/2
// protocol says: bytes outside printable ASCII, and '%', as %XX.
func grpcPercentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c <= 0x7e && c != '%' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
