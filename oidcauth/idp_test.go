package oidcauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// testIdP is an identity provider on 127.0.0.1 serving a discovery
// document and a key set, counting the requests for each.
type testIdP struct {
	t      *testing.T
	addr   string
	issuer string
	srv    *httptest.Server

	mu           sync.Mutex
	published    []jose.JSONWebKey
	docIssuer    string // the issuer the discovery document names
	docJWKS      string // the jwks_uri it names ("": its own)
	cacheControl string // the key set's Cache-Control ("": none)
	// introspection answers by token, for the client introspectID with
	// introspectSecret; an unknown token is inactive.
	introspection map[string]map[string]any

	introspectHits atomic.Int64

	discoveryHits atomic.Int64
	jwksHits      atomic.Int64
}

// newIdP starts an identity provider publishing keys.
func newIdP(t *testing.T, keys ...*signingKey) *testIdP {
	i := reserveIdP(t, keys...)
	i.start()
	return i
}

// reserveIdP picks the address of an identity provider that is down until
// start.
func reserveIdP(t *testing.T, keys ...*signingKey) *testIdP {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	i := &testIdP{t: t, addr: addr, issuer: "http://" + addr + "/realms/test"}
	i.docIssuer = i.issuer
	i.publish(keys...)
	return i
}

func (i *testIdP) start() {
	i.t.Helper()
	l, err := net.Listen("tcp", i.addr)
	require.NoError(i.t, err)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /realms/test/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		i.discoveryHits.Add(1)
		i.mu.Lock()
		jwks := i.docJWKS
		if jwks == "" {
			jwks = i.jwksURL()
		}
		doc := map[string]any{"issuer": i.docIssuer, "jwks_uri": jwks,
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"introspection_endpoint":                "http://" + i.addr + introspectPath}
		i.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
	mux.HandleFunc("GET /realms/test/certs", func(w http.ResponseWriter, _ *http.Request) {
		i.jwksHits.Add(1)
		i.mu.Lock()
		set := jose.JSONWebKeySet{Keys: i.published}
		if i.cacheControl != "" {
			w.Header().Set("Cache-Control", i.cacheControl)
		}
		i.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	})
	mux.HandleFunc("POST "+introspectPath, func(w http.ResponseWriter, r *http.Request) {
		i.introspectHits.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok || id != introspectID || secret != introspectSecret {
			w.Header().Set("WWW-Authenticate", `Basic realm="introspection"`)
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		if r.PostFormValue("token_type_hint") != "access_token" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		i.mu.Lock()
		answer, known := i.introspection[r.PostFormValue("token")]
		i.mu.Unlock()
		if !known {
			answer = map[string]any{"active": false}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	})
	srv := httptest.NewUnstartedServer(mux)
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	i.srv = srv
	i.t.Cleanup(srv.Close)
}

// The introspection endpoint and the credentials it accepts (client ids
// and secrets are form-encoded in HTTP Basic: these need no encoding).
const (
	introspectPath   = "/realms/test/protocol/openid-connect/token/introspect"
	introspectID     = "mcpflow-rs"
	introspectSecret = "s3cret-introspection-9d2e"
)

// answer makes the introspection endpoint answer this for token.
func (i *testIdP) answer(token string, answer map[string]any) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.introspection == nil {
		i.introspection = map[string]map[string]any{}
	}
	i.introspection[token] = answer
}

// stop takes the identity provider down.
func (i *testIdP) stop() { i.srv.Close() }

func (i *testIdP) jwksURL() string { return "http://" + i.addr + "/realms/test/certs" }

// publish replaces the key set with the public halves of keys.
func (i *testIdP) publish(keys ...*signingKey) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.published = nil
	for _, k := range keys {
		i.published = append(i.published, jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
	}
}

// signingKey is a key of an identity provider.
type signingKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

var (
	rsaKeys = sync.OnceValue(func() []*rsa.PrivateKey {
		var keys []*rsa.PrivateKey
		for range 4 {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			keys = append(keys, k)
		}
		return keys
	})
	ecKey = sync.OnceValue(func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	})
)

// rsaKey returns the n-th test RSA key (0..3) under kid.
func rsaKey(n int, kid string) *signingKey {
	return &signingKey{kid: kid, alg: jose.RS256, priv: rsaKeys()[n]}
}

// tokenOpts shape a signed token's header.
type tokenOpts struct {
	typ    string                  // "" for no "typ"
	alg    jose.SignatureAlgorithm // default the key's
	kid    string                  // default the key's
	signer any                     // default the key's private key
}

// sign signs claims with k as an "at+jwt".
func (k *signingKey) sign(t *testing.T, claims map[string]any) string {
	return k.signWith(t, claims, tokenOpts{typ: "at+jwt"})
}

func (k *signingKey) signWith(t *testing.T, claims map[string]any, o tokenOpts) string {
	t.Helper()
	if o.alg == "" {
		o.alg = k.alg
	}
	if o.kid == "" {
		o.kid = k.kid
	}
	if o.signer == nil {
		o.signer = k.priv
	}
	so := &jose.SignerOptions{}
	if o.typ != "" {
		so = so.WithType(jose.ContentType(o.typ))
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: o.alg, Key: jose.JSONWebKey{Key: o.signer, KeyID: o.kid}}, so)
	require.NoError(t, err)
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	jws, err := s.Sign(payload)
	require.NoError(t, err)
	tok, err := jws.CompactSerialize()
	require.NoError(t, err)
	return tok
}

// unsigned builds an "alg": "none" token.
func unsigned(t *testing.T, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(payload) + "."
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const (
	publicURL = "https://mcpflow.example.com"
	resMine   = publicURL + "/mcp/threads/mine"
	resOther  = publicURL + "/mcp/threads/other"
	testSub   = "alice-7f3a9c"
)

// testBundle is a verifier of one identity provider (Name "kc") on a fake
// clock, its debug log captured.
type testBundle struct {
	idp      *testIdP
	key      *signingKey // published by idp
	clock    *fakeClock
	logs     *testenv.SyncBuffer
	v        *Verifier
	provider Provider // v's provider
	client   *http.Client
}

// setup builds a testBundle around a running identity provider; mod
// adjusts the provider's configuration.
func setup(t *testing.T, mod func(*Provider)) *testBundle {
	key := rsaKey(0, "a1")
	return setupIdP(t, newIdP(t, key), key, mod)
}

// setupIdP builds a testBundle around idp, publishing key.
func setupIdP(t *testing.T, idp *testIdP, key *signingKey, mod func(*Provider)) *testBundle {
	t.Helper()
	b := &testBundle{
		idp:   idp,
		key:   key,
		clock: &fakeClock{t: time.Unix(1_800_000_000, 0)},
		logs:  &testenv.SyncBuffer{},
		// No idle connections left behind for the leak check.
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second},
	}
	b.provider = Provider{Name: "kc", Issuer: idp.issuer, AdminScope: "mcpflow:admin", RequiredScopes: []string{"mcp:tools"}}
	if mod != nil {
		mod(&b.provider)
	}
	b.v = b.newVerifier(t, b.provider)
	return b
}

// newVerifier builds a verifier of providers on b's clock, client and log.
func (b *testBundle) newVerifier(t *testing.T, providers ...Provider) *Verifier {
	t.Helper()
	v, err := NewVerifier(context.Background(), providers, Options{
		HTTPClient: b.client,
		Logger:     slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:        b.clock.Now,
	})
	require.NoError(t, err)
	return v
}

// claims are valid claims for resMine, changed by mod.
func (b *testBundle) claims(mod func(map[string]any)) map[string]any {
	now := b.clock.Now()
	c := map[string]any{
		"iss":   b.idp.issuer,
		"sub":   testSub,
		"aud":   resMine,
		"exp":   now.Add(5 * time.Minute).Unix(),
		"iat":   now.Unix(),
		"nbf":   now.Unix(),
		"scope": "openid mcp:tools",
	}
	if mod != nil {
		mod(c)
	}
	return c
}

func (b *testBundle) verify(tok string, resources ...string) (mcpflow.TokenIdentity, error) {
	return b.v.VerifyAccessToken(context.Background(), tok, resources)
}
