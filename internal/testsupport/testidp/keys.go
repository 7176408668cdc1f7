package testidp

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// rsaKey is a signing key of the IdP (op.SigningKey).
type rsaKey struct {
	kid  string
	priv *rsa.PrivateKey
}

func newRSAKey() (*rsaKey, error) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &rsaKey{kid: rand.Text(), priv: priv}, nil
}

func (k *rsaKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *rsaKey) Key() any                                    { return k.priv }
func (k *rsaKey) ID() string                                  { return k.kid }

// publicKey is a key of the JWKS (op.Key).
type publicKey struct{ k *rsaKey }

func (k publicKey) ID() string                         { return k.k.kid }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.k.priv.PublicKey }

// keyRing holds the signing key and the keys the JWKS publishes; the
// storage's mutex guards it.
type keyRing struct {
	current   *rsaKey
	published []*rsaKey // oldest first
}

func (r *keyRing) add(k *rsaKey) {
	r.current = k
	r.published = append(r.published, k)
}

func (r *keyRing) signing() (op.SigningKey, error) {
	if r.current == nil {
		return nil, errors.New("no signing key")
	}
	return r.current, nil
}

func (r *keyRing) keySet() []op.Key {
	keys := make([]op.Key, len(r.published))
	for i, k := range r.published {
		keys[i] = publicKey{k}
	}
	return keys
}

// Rotate makes a new RS256 key the signing key and publishes it; the
// previous keys stay in the JWKS until retired, so tokens they signed still
// verify (a real rotation; a verifier that cached the old JWKS meets an
// unknown kid and must fetch it again).
func (p *IdP) Rotate() (newKID string) {
	k, err := newRSAKey()
	if err != nil {
		panic("testidp: Rotate: " + err.Error())
	}
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.keys.add(k)
	return k.kid
}

// Retire removes a key from the JWKS; tokens it signed no longer verify.
// Retiring the signing key leaves it the signing key: tokens are then
// signed with a key the JWKS does not have. An unknown kid is ignored.
func (p *IdP) Retire(kid string) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.keys.published = slices.DeleteFunc(p.store.keys.published, func(k *rsaKey) bool { return k.kid == kid })
}

// SigningKey is the key tokens are signed with now, and its kid.
func (p *IdP) SigningKey() (kid string, key *rsa.PrivateKey) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return p.store.keys.current.kid, p.store.keys.current.priv
}

// Claims are the claims of a valid access token of this IdP for user and
// the audiences, for Forge to sign as they are or changed: iss, sub, aud,
// iat, nbf, exp (the access token TTL from now), jti, and the user's
// "groups" when the user has groups. No scope.
func (p *IdP) Claims(user string, audience ...string) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss": p.issuer,
		"sub": user,
		"aud": slices.Clone(audience),
		"iat": now.Unix(),
		"nbf": now.Unix(),
		"exp": now.Add(p.store.ttl).Unix(),
		"jti": rand.Text(),
	}
	for k, v := range p.store.userClaims(user) {
		c[k] = v
	}
	return c
}

// ForgeKind is how Forge makes a token.
type ForgeKind int

const (
	// ForgeSigned: RS256 with the current signing key and its kid, a
	// genuine signature (for expired, not-yet-valid, wrong audience, wrong
	// issuer ... tokens made from Claims).
	ForgeSigned ForgeKind = iota
	// ForgeAlgNone: header alg "none" (with the signing key's kid) and an
	// empty signature.
	ForgeAlgNone
	// ForgeHS256PublicKeyPEM: HS256 whose HMAC key is the PEM ("PUBLIC
	// KEY", PKIX) of the signing key's public key, with its kid: the
	// RS256/HS256 key confusion attack.
	ForgeHS256PublicKeyPEM
	// ForgeHS256PublicKeyDER: the same with the DER (PKIX) bytes as the
	// HMAC key.
	ForgeHS256PublicKeyDER
	// ForgeUnknownKID: RS256 by a key the JWKS does not have (one per IdP,
	// never published) under a kid the JWKS does not have.
	ForgeUnknownKID
	// ForgeTamperedPayload: the claims as payload under the header and
	// signature of a genuine token (current key) of other claims: the
	// claims plus "testidp_original": true.
	ForgeTamperedPayload
	// ForgeTamperedSignature: a genuine token (current key) of the claims
	// whose signature has its first byte flipped.
	ForgeTamperedSignature
)

var forgeKindNames = [...]string{
	ForgeSigned:            "Signed",
	ForgeAlgNone:           "AlgNone",
	ForgeHS256PublicKeyPEM: "HS256PublicKeyPEM",
	ForgeHS256PublicKeyDER: "HS256PublicKeyDER",
	ForgeUnknownKID:        "UnknownKID",
	ForgeTamperedPayload:   "TamperedPayload",
	ForgeTamperedSignature: "TamperedSignature",
}

func (k ForgeKind) String() string {
	if k >= 0 && int(k) < len(forgeKindNames) {
		return forgeKindNames[k]
	}
	return "ForgeKind(" + strconv.Itoa(int(k)) + ")"
}

// Forge makes a compact JWS of claims the way kind says, for bad-token
// tests; see ForgeKind. The header's typ is "JWT", as in the OP's tokens.
func (p *IdP) Forge(t testing.TB, kind ForgeKind, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatalf("testidp: Forge: claims: %v", err)
	}
	kid, key := p.SigningKey()
	switch kind {
	case ForgeSigned:
		return signRS256(kid, key, payload)
	case ForgeAlgNone:
		return segment(jwsHeader{Alg: "none", Kid: kid, Typ: "JWT"}) + "." + b64(payload) + "."
	case ForgeHS256PublicKeyPEM, ForgeHS256PublicKeyDER:
		der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			t.Fatalf("testidp: Forge: %v", err)
		}
		secret := der
		if kind == ForgeHS256PublicKeyPEM {
			secret = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		}
		signingInput := segment(jwsHeader{Alg: "HS256", Kid: kid, Typ: "JWT"}) + "." + b64(payload)
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(signingInput))
		return signingInput + "." + b64(mac.Sum(nil))
	case ForgeUnknownKID:
		k, err := p.stranger()
		if err != nil {
			t.Fatalf("testidp: Forge: %v", err)
		}
		return signRS256(k.kid, k.priv, payload)
	case ForgeTamperedPayload:
		original := make(map[string]any, len(claims)+1)
		for k, v := range claims {
			original[k] = v
		}
		original["testidp_original"] = true
		signed, err := json.Marshal(original)
		if err != nil {
			t.Fatalf("testidp: Forge: claims: %v", err)
		}
		parts := splitJWS(signRS256(kid, key, signed))
		return parts[0] + "." + b64(payload) + "." + parts[2]
	case ForgeTamperedSignature:
		parts := splitJWS(signRS256(kid, key, payload))
		sig, err := base64.RawURLEncoding.DecodeString(parts[2])
		if err != nil {
			t.Fatalf("testidp: Forge: %v", err)
		}
		sig[0] ^= 0xff
		return parts[0] + "." + parts[1] + "." + b64(sig)
	default:
		t.Fatalf("testidp: Forge: unknown kind %v", kind)
		return ""
	}
}

type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid,omitempty"`
	Typ string `json:"typ,omitempty"`
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func segment(h jwsHeader) string {
	b, _ := json.Marshal(h) // a struct of strings always marshals
	return b64(b)
}

func signRS256(kid string, key *rsa.PrivateKey, payload []byte) string {
	signingInput := segment(jwsHeader{Alg: "RS256", Kid: kid, Typ: "JWT"}) + "." + b64(payload)
	digest := sha256.Sum256([]byte(signingInput))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, digest[:])
	if err != nil {
		panic("testidp: RS256: " + err.Error()) // only for a broken key
	}
	return signingInput + "." + b64(sig)
}

// splitJWS splits a compact JWS signRS256 made into its three parts.
func splitJWS(s string) []string { return strings.SplitN(s, ".", 3) }

// Decode returns the header and the claims of a compact JWS without
// verifying it, failing t when token is not one: what a test reads of a
// token it got (kid, aud, sub …).
func Decode(t testing.TB, token string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %d parts", len(parts))
	}
	part := func(s string) map[string]any {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("a JWS part is not base64url: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("a JWS part is not a JSON object: %v", err)
		}
		return m
	}
	return part(parts[0]), part(parts[1])
}
