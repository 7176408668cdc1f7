package oidcauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"
)

const (
	// maxDocumentBytes bounds a discovery document or key set.
	maxDocumentBytes = 1 << 20
	// fetchTimeout bounds one refresh (discovery and key set) on top of
	// the HTTP client's own timeout.
	fetchTimeout = 30 * time.Second
	// maxRetryInterval is the most time between two attempts while the
	// provider fails (JWKSMinRefresh when shorter).
	maxRetryInterval = 5 * time.Second
)

// errUnknownKey is a signature no key of a fresh key set verifies.
var errUnknownKey = errors.New("no key of the provider verifies the signature")

// keySet is a provider's JSON Web Key Set, an oidc.KeySet. It is read
// lazily (discovery first, unless the key set URL is configured) and
// refreshed when a token names a key id it does not hold, at most once per
// minRefresh (once per retry while the provider fails), by one request at
// a time that every waiting verification shares.
type keySet struct {
	name       string
	issuer     string
	algs       []jose.SignatureAlgorithm
	client     *http.Client
	base       context.Context // for fetches: values only, never canceled
	now        func() time.Time
	log        *slog.Logger
	minRefresh time.Duration
	maxAge     time.Duration
	retry      time.Duration

	mu        sync.Mutex
	jwksURL   string // configured, or found by discovery
	keys      []jose.JSONWebKey
	thumbs    map[string]bool // the keys' JWK thumbprints (keyRef)
	expires   time.Time       // when keys go stale, zero before the first fetch
	attempted time.Time       // end of the last fetch, zero before the first
	err       error           // the last fetch's error, nil after a success

	flight singleflight.Group // the fetch in progress, shared by the verifications waiting on it
}

// fetched is what one fetch of the key set read.
type fetched struct {
	keys   []jose.JSONWebKey
	maxAge time.Duration // Cache-Control max-age less Age; -1 without
}

// stateKey carries a *verifyState through go-oidc's Verify to
// VerifySignature: go-oidc flattens the key set's error into text, so the
// outcome travels here instead.
type stateKey struct{}

// verifyState is what VerifySignature learned about one token.
type verifyState struct {
	verified    bool   // the signature verified
	key         string // then: the thumbprint of the key that verified it
	signature   bool   // the signature was refused
	unavailable error  // the key set could not be fetched
}

// VerifySignature implements oidc.KeySet: it verifies jwt's signature
// with a key of the set (refreshing it for an unknown key id) and returns
// the payload.
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	st, _ := ctx.Value(stateKey{}).(*verifyState)
	if st == nil {
		st = &verifyState{}
	}
	jws, err := jose.ParseSignedCompact(jwt, k.algs)
	if err != nil {
		return nil, fmt.Errorf("parse jws: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("want exactly one signature")
	}
	h := jws.Signatures[0].Header
	keys := k.fresh(ctx)
	if payload, key, ok := verifyWith(jws, keys, h); ok {
		st.verified, st.key = true, keyRef(key)
		return payload, nil
	}
	if h.KeyID != "" && slices.ContainsFunc(keys, func(k jose.JSONWebKey) bool { return k.KeyID == h.KeyID }) {
		// A known key that does not verify: a forged or damaged token,
		// not a rotation.
		st.signature = true
		return nil, errUnknownKey
	}
	keys, err = k.refresh(ctx)
	if payload, key, ok := verifyWith(jws, keys, h); ok {
		st.verified, st.key = true, keyRef(key)
		return payload, nil
	}
	if err != nil {
		st.unavailable = err
		return nil, err
	}
	st.signature = true
	return nil, errUnknownKey
}

// verifyWith tries the keys usable for h: its key id (any key when it
// names none), a signing key of a type and algorithm that fit h's.
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, h jose.Header) ([]byte, *jose.JSONWebKey, bool) {
	for i := range keys {
		key := &keys[i]
		if h.KeyID != "" && key.KeyID != h.KeyID {
			continue
		}
		if key.Use != "" && key.Use != "sig" {
			continue
		}
		if key.Algorithm != "" && key.Algorithm != h.Algorithm {
			continue
		}
		if payload, err := jws.Verify(key); err == nil {
			return payload, key, true
		}
	}
	return nil, nil, false
}

// keyRef names a key by its RFC 7638 thumbprint (its key id can be
// reused for another key).
func keyRef(key *jose.JSONWebKey) string {
	tp, err := key.Thumbprint(crypto.SHA256)
	if err != nil { // a key go-jose parsed always has one
		return "kid:" + key.KeyID
	}
	return string(tp)
}

// fresh returns the keys to verify with: the held ones until they go stale
// (maxAge, or the key set's Cache-Control max-age bounded by minRefresh
// and maxAge, after the fetch that read them), then the key set fetched
// again, so that a key the provider withdrew is not trusted for longer.
// The caller waits for that fetch while the provider answered the last
// one; while it fails, the held keys are used and fetches are retried in
// the background (at most once per retry).
func (k *keySet) fresh(ctx context.Context) []jose.JSONWebKey {
	k.mu.Lock()
	keys := k.keys
	stale := !k.expires.IsZero() && !k.now().Before(k.expires)
	failing := k.err != nil
	k.mu.Unlock()
	switch {
	case !stale:
		return keys
	case failing:
		k.start()
		return keys
	}
	keys, _ = k.refresh(ctx)
	return keys
}

// trusted reports whether the key named by ref (keyRef) is in the key set,
// fetched again first when stale: a verification remembered for a token
// signed by a key that left the set must not outlive it.
func (k *keySet) trusted(ctx context.Context, ref string) bool {
	k.fresh(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.thumbs[ref]
}

func (k *keySet) cached() []jose.JSONWebKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys
}

// refresh fetches the key set unless the last attempt is too recent (then
// it returns the keys held and that attempt's error), or joins the fetch
// in progress. The fetch runs on its own so a canceled verification does
// not fail it for the others.
func (k *keySet) refresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	select {
	case r := <-k.start():
		keys, _ := r.Val.([]jose.JSONWebKey)
		return keys, r.Err
	case <-ctx.Done():
		return k.cached(), fmt.Errorf("wait for key set: %w", ctx.Err())
	}
}

// start starts a fetch (run) in a goroutine of its own, or joins the one in
// progress.
func (k *keySet) start() <-chan singleflight.Result {
	return k.flight.DoChan("", func() (any, error) { return k.run() })
}

// run fetches the key set and records the outcome, unless the last attempt
// is too recent (minRefresh after a success, retry after a failure): then
// it returns the keys held and that attempt's error.
func (k *keySet) run() ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	if !k.attempted.IsZero() {
		wait := k.minRefresh
		if k.err != nil {
			wait = k.retry
		}
		if k.now().Sub(k.attempted) < wait {
			defer k.mu.Unlock()
			return k.keys, k.err
		}
	}
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(k.base, fetchTimeout)
	defer cancel()
	got, err := k.fetch(ctx)

	k.mu.Lock()
	failing := k.err != nil
	k.attempted = k.now()
	k.err = err
	var keys []jose.JSONWebKey
	var fresh time.Duration
	if err == nil {
		keys = got.keys
		k.keys = keys
		k.thumbs = make(map[string]bool, len(keys))
		for i := range keys {
			k.thumbs[keyRef(&keys[i])] = true
		}
		fresh = k.maxAge
		if got.maxAge >= 0 {
			fresh = max(k.minRefresh, min(got.maxAge, k.maxAge))
		}
		k.expires = k.attempted.Add(fresh)
	} else {
		keys = k.keys
	}
	k.mu.Unlock()

	// Logged before the waiters wake, so that what they do next comes
	// after it in the log.
	var mismatch *issuerMismatch
	switch {
	case errors.As(err, &mismatch) && !failing:
		k.log.LogAttrs(ctx, slog.LevelError, "identity provider misconfigured: its discovery document names another issuer; every token of it is refused",
			slog.String("provider", k.name), slog.String("configured_issuer", mismatch.configured),
			slog.String("discovered_issuer", mismatch.discovered), slog.String("error", err.Error()))
	case err != nil && !failing:
		k.log.LogAttrs(ctx, slog.LevelWarn, "identity provider keys cannot be fetched",
			slog.String("provider", k.name), slog.String("error", err.Error()))
	case err == nil && failing:
		k.log.LogAttrs(ctx, slog.LevelInfo, "identity provider keys fetched again",
			slog.String("provider", k.name), slog.Int("keys", len(keys)))
	case err == nil:
		k.log.LogAttrs(ctx, slog.LevelDebug, "identity provider keys fetched",
			slog.String("provider", k.name), slog.Int("keys", len(keys)), slog.Duration("fresh_for", fresh))
	}
	return keys, err
}

// fetch reads the key set, running discovery first when its URL is not
// known yet.
func (k *keySet) fetch(ctx context.Context) (fetched, error) {
	k.mu.Lock()
	u := k.jwksURL
	k.mu.Unlock()
	if u == "" {
		doc, err := discover(ctx, k.client, k.issuer)
		if err != nil {
			return fetched{}, err
		}
		if err := checkURL(doc.JWKSURI); err != nil {
			return fetched{}, fmt.Errorf("discovery: jwks_uri: %w", err)
		}
		u = doc.JWKSURI
		k.mu.Lock()
		k.jwksURL = u
		k.mu.Unlock()
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	header, err := getJSON(ctx, k.client, u, &doc)
	if err != nil {
		return fetched{}, fmt.Errorf("fetch key set: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range doc.Keys {
		var key jose.JSONWebKey
		// Keys of a type go-jose does not know, private or symmetric keys
		// are skipped, as RFC 7517 §5 asks.
		if json.Unmarshal(raw, &key) != nil || !key.Valid() || !key.IsPublic() {
			continue
		}
		switch key.Key.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return fetched{}, errors.New("fetch key set: no usable signing key")
	}
	return fetched{keys: keys, maxAge: cacheMaxAge(header)}, nil
}

// cacheMaxAge is how long a response may be used by its Cache-Control
// max-age, less its Age (RFC 9111); 0 for no-store or no-cache, -1 when
// it says nothing.
func cacheMaxAge(h http.Header) time.Duration {
	maxAge := time.Duration(-1)
	for _, v := range h.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(name) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && n >= 0 && n < 1<<31 {
					maxAge = time.Duration(n) * time.Second
				}
			}
		}
	}
	if maxAge > 0 {
		if age, err := strconv.ParseInt(h.Get("Age"), 10, 64); err == nil && age > 0 && age < 1<<31 {
			maxAge = max(0, maxAge-time.Duration(age)*time.Second)
		}
	}
	return maxAge
}

// discoveryDoc is what mcpflow reads of an issuer's OpenID discovery
// document.
type discoveryDoc struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// discover reads issuer's discovery document, which must name issuer
// exactly.
func discover(ctx context.Context, client *http.Client, issuer string) (*discoveryDoc, error) {
	var doc discoveryDoc
	if _, err := getJSON(ctx, client, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration", &doc); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	if doc.Issuer != issuer {
		return nil, &issuerMismatch{configured: issuer, discovered: doc.Issuer}
	}
	return &doc, nil
}

// issuerMismatch is a discovery document naming another issuer than the
// configured one: a misconfiguration (often a trailing slash) that refuses
// every token of the provider.
type issuerMismatch struct {
	configured, discovered string
}

func (e *issuerMismatch) Error() string {
	return fmt.Sprintf("discovery: the document names issuer %q, but the configured issuer is %q%s", e.discovered, e.configured, issuerHint(e.configured, e.discovered))
}

// issuerHint says how two issuers that should be one differ, when they
// differ only by a trailing slash or case ("" otherwise).
func issuerHint(configured, other string) string {
	switch {
	case strings.TrimSuffix(configured, "/") == strings.TrimSuffix(other, "/"):
		return " (only a trailing slash differs: write the issuer exactly as the provider does)"
	case strings.EqualFold(configured, other):
		return " (only the case differs: write the issuer exactly as the provider does)"
	}
	return ""
}

// getJSON reads the JSON document at u into v and returns the response's
// header.
func getJSON(ctx context.Context, client *http.Client, u string, v any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocumentBytes))
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if len(body) > maxDocumentBytes {
		return nil, fmt.Errorf("GET %s: document larger than %d bytes", u, maxDocumentBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("GET %s: decode: %w", u, err)
	}
	return resp.Header, nil
}
