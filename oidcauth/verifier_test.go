package oidcauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// requireRefused asserts err refuses a token for reason and leaks none of
// secrets (the token, its parts, claim values).
func requireRefused(t *testing.T, err error, reason string, secrets ...string) {
	t.Helper()
	require.ErrorIs(t, err, mcpflow.ErrInvalidToken)
	require.NotErrorIs(t, err, mcpflow.ErrTokenProviderUnavailable)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, reason, e.Reason, "error: %v", err)
	requireNoSecret(t, err.Error(), secrets...)
}

// requireUnavailable asserts err says the provider cannot be reached.
func requireUnavailable(t *testing.T, err error, secrets ...string) {
	t.Helper()
	require.ErrorIs(t, err, mcpflow.ErrTokenProviderUnavailable)
	require.NotErrorIs(t, err, mcpflow.ErrInvalidToken)
	requireNoSecret(t, err.Error(), secrets...)
}

// requireNoSecret asserts text holds none of secrets, nor any part of a
// token among them.
func requireNoSecret(t *testing.T, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, part := range append(strings.Split(s, "."), s) {
			if len(part) >= 8 {
				require.NotContains(t, text, part)
			}
		}
	}
}

func randomKID(t *testing.T) string {
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

func TestVerifyAccessTokenMapsIdentity(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tok := b.key.sign(t, b.claims(func(c map[string]any) { c["scope"] = "openid mcp:tools mcpflow:admin" }))

	id, err := b.verify(tok, publicURL, resMine)
	require.NoError(t, err)
	// The token's claims come along for the tool policies, as it wrote them.
	require.JSONEq(t, `"`+testSub+`"`, string(id.Claims["sub"]))
	require.JSONEq(t, `"openid mcp:tools mcpflow:admin"`, string(id.Claims["scope"]))
	id.Claims = nil
	require.Equal(t, mcpflow.TokenIdentity{
		UserID:     testSub,
		Admin:      true,
		Provider:   "kc",
		Scopes:     []string{"openid", "mcp:tools", "mcpflow:admin"},
		AdminScope: "mcpflow:admin",
		Expiry:     b.clock.Now().Add(5 * time.Minute),
	}, id)
	require.NoError(t, mcpflow.ValidateID("user id", id.UserID))

	t.Run("no admin scope, missing required scope, scp array", func(t *testing.T) {
		tok := b.key.sign(t, b.claims(func(c map[string]any) {
			delete(c, "scope")
			c["scp"] = []string{"openid", "profile"}
		}))
		id, err := b.verify(tok, resMine)
		require.NoError(t, err)
		require.False(t, id.Admin)
		require.Equal(t, []string{"openid", "profile"}, id.Scopes)
		require.Equal(t, []string{"mcp:tools"}, id.MissingScopes)
	})

	t.Run("scope and scp string are joined", func(t *testing.T) {
		tok := b.key.sign(t, b.claims(func(c map[string]any) { c["scp"] = "mcp:tools extra" }))
		id, err := b.verify(tok, resMine)
		require.NoError(t, err)
		require.Equal(t, []string{"openid", "mcp:tools", "extra"}, id.Scopes)
		require.Empty(t, id.MissingScopes)
	})

	t.Run("aud array and configured audience", func(t *testing.T) {
		b := setup(t, func(p *Provider) { p.Audiences = []string{"api://mcpflow"} })
		tok := b.key.sign(t, b.claims(func(c map[string]any) { c["aud"] = []string{"account", "api://mcpflow"} }))
		_, err := b.verify(tok, resMine)
		require.NoError(t, err)
	})

	// An ID token of a client whose id is a configured audience, as
	// oidc-provider issues them (no at_hash, c_hash nor typ), is refused
	// as what it is (401), not as a token lacking a scope (403); an
	// access token for that audience names its scopes.
	t.Run("an ID token for a configured audience", func(t *testing.T) {
		b := setup(t, func(p *Provider) { p.Audiences = []string{"mcp-host"} })
		idt := b.key.signWith(t, b.claims(func(c map[string]any) {
			c["aud"] = "mcp-host"
			c["azp"] = "mcp-host"
			c["auth_time"] = b.clock.Now().Unix()
			delete(c, "scope")
		}), tokenOpts{})
		_, err := b.verify(idt, resMine)
		requireRefused(t, err, ReasonTokenType, idt)
		// A scope claim, even without the required scope, makes it an
		// access token (403 for the caller).
		at := b.key.sign(t, b.claims(func(c map[string]any) { c["aud"] = "mcp-host"; c["scp"] = []string{"other"}; delete(c, "scope") }))
		id, err := b.verify(at, resMine)
		require.NoError(t, err)
		require.Equal(t, []string{"mcp:tools"}, id.MissingScopes)
		// The resource's own audience needs no scope claim.
		res := b.key.sign(t, b.claims(func(c map[string]any) { delete(c, "scope") }))
		_, err = b.verify(res, resMine)
		require.NoError(t, err)
	})

	// Entra ID: the host asks for api://mcpflow/MCP.Use, the token's scp
	// says MCP.Use.
	t.Run("a qualified required scope", func(t *testing.T) {
		b := setup(t, func(p *Provider) {
			p.RequiredScopes = []string{"api://mcpflow/MCP.Use"}
			p.AdminScope = "api://mcpflow/MCP.Admin"
		})
		id, err := b.verify(b.key.sign(t, b.claims(func(c map[string]any) { delete(c, "scope"); c["scp"] = "MCP.Use MCP.Admin" })), resMine)
		require.NoError(t, err)
		require.Empty(t, id.MissingScopes)
		require.True(t, id.Admin)
		id, err = b.verify(b.key.sign(t, b.claims(func(c map[string]any) { delete(c, "scope"); c["scp"] = "Use" })), resMine)
		require.NoError(t, err)
		require.Equal(t, []string{"api://mcpflow/MCP.Use"}, id.MissingScopes)
		require.False(t, id.Admin)
	})

	t.Run("header types", func(t *testing.T) {
		for _, typ := range []string{"", "JWT", "at+jwt", "application/at+jwt", "AT+JWT"} {
			tok := b.key.signWith(t, b.claims(nil), tokenOpts{typ: typ})
			_, err := b.verify(tok, resMine)
			require.NoError(t, err, "typ %q", typ)
		}
	})

	t.Run("ES256 key", func(t *testing.T) {
		ec := &signingKey{kid: "e1", alg: jose.ES256, priv: ecKey()}
		b := setupIdP(t, newIdP(t, rsaKey(0, "a1"), ec), ec, nil)
		_, err := b.verify(ec.sign(t, b.claims(nil)), resMine)
		require.NoError(t, err)
	})

	t.Run("returned slices are copies", func(t *testing.T) {
		id1, err := b.verify(tok, resMine)
		require.NoError(t, err)
		id1.Scopes[0] = "changed"
		id2, err := b.verify(tok, resMine)
		require.NoError(t, err)
		require.Equal(t, "openid", id2.Scopes[0])
	})
}

func TestVerifyAccessTokenRefusesBadTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p *Provider) { p.Algorithms = []string{"RS256", "ES256"} })
	keyB := rsaKey(1, "b1")
	idpB := newIdP(t, keyB)
	b.provider.UserPrefix = "kc."
	b.v = b.newVerifier(t, b.provider, Provider{Name: "entra", Issuer: idpB.issuer, UserPrefix: "entra."})

	// A valid token first: it is cached, and must not help the forged
	// variants below.
	valid := b.key.sign(t, b.claims(nil))
	_, err := b.verify(valid, resMine)
	require.NoError(t, err)
	// Provider B's keys are fetched too.
	_, err = b.verify(keyB.sign(t, b.claims(func(c map[string]any) { c["iss"] = idpB.issuer })), resMine)
	require.NoError(t, err)

	pubDER, err := x509.MarshalPKIXPublicKey(b.key.priv.Public())
	require.NoError(t, err)
	enc := base64.RawURLEncoding.EncodeToString
	parts := strings.Split(valid, ".")

	tests := []struct {
		name      string
		token     func(t *testing.T) string
		resources []string // default resMine
		reason    string
	}{
		{"wrong audience", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["aud"] = "https://other.example.com" }))
		}, nil, ReasonAudience},
		{"token for another resource", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["aud"] = resOther }))
		}, nil, ReasonAudience},
		{"cached valid token reused for another resource", func(*testing.T) string { return valid }, []string{resOther}, ReasonAudience},
		{"an ID token (at_hash)", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["at_hash"] = "x3Ah"; c["nonce"] = "n" }))
		}, nil, ReasonTokenType},
		{"an ID token (c_hash)", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["c_hash"] = "x3Ah" }))
		}, nil, ReasonTokenType},
		{"a Keycloak ID token (typ ID)", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["typ"] = "ID" }))
		}, nil, ReasonTokenType},
		{"no audience", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { delete(c, "aud") }))
		}, nil, ReasonAudience},
		{"unknown issuer", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["iss"] = "https://evil.example.com" }))
		}, nil, ReasonIssuer},
		{"issuer with a trailing slash", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["iss"] = b.idp.issuer + "/" }))
		}, nil, ReasonIssuer},
		{"no issuer", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { delete(c, "iss") }))
		}, nil, ReasonIssuer},
		{"issuer A signed with provider B's key", func(t *testing.T) string {
			return keyB.sign(t, b.claims(nil))
		}, nil, ReasonSignature},
		{"issuer A signed with provider B's key under A's kid", func(t *testing.T) string {
			return keyB.signWith(t, b.claims(nil), tokenOpts{kid: "a1", typ: "at+jwt"})
		}, nil, ReasonSignature},
		{"expired beyond the skew", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["exp"] = b.clock.Now().Add(-2 * time.Minute).Unix() }))
		}, nil, ReasonExpired},
		{"no exp", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { delete(c, "exp") }))
		}, nil, ReasonMalformed},
		{"nbf in the future", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["nbf"] = b.clock.Now().Add(2 * time.Minute).Unix() }))
		}, nil, ReasonNotYetValid},
		{"nbf far in the future", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["nbf"] = b.clock.Now().Add(time.Hour).Unix() }))
		}, nil, ReasonNotYetValid},
		{"iat in the future", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["iat"] = b.clock.Now().Add(2 * time.Minute).Unix() }))
		}, nil, ReasonNotYetValid},
		{"alg none", func(t *testing.T) string { return unsigned(t, b.claims(nil)) }, nil, ReasonAlgorithm},
		{"HS256 signed with the RSA public key", func(t *testing.T) string {
			return b.key.signWith(t, b.claims(nil), tokenOpts{alg: jose.HS256, signer: pubDER, typ: "JWT"})
		}, nil, ReasonAlgorithm},
		{"RS512 when only RS256 is allowed", func(t *testing.T) string {
			return b.key.signWith(t, b.claims(nil), tokenOpts{alg: jose.RS512, typ: "at+jwt"})
		}, nil, ReasonAlgorithm},
		{"unknown kid", func(t *testing.T) string {
			return rsaKey(2, "c1").sign(t, b.claims(nil))
		}, nil, ReasonSignature},
		{"no kid, unknown key", func(t *testing.T) string {
			k := rsaKey(2, "")
			return k.sign(t, b.claims(nil))
		}, nil, ReasonSignature},
		{"tampered payload", func(t *testing.T) string {
			payload, err := json.Marshal(b.claims(func(c map[string]any) { c["scope"] = "openid mcp:tools mcpflow:admin" }))
			require.NoError(t, err)
			return parts[0] + "." + enc(payload) + "." + parts[2]
		}, nil, ReasonSignature},
		{"tampered signature", func(*testing.T) string {
			sig := []byte(parts[2])
			if sig[0] == 'A' {
				sig[0] = 'B'
			} else {
				sig[0] = 'A'
			}
			return parts[0] + "." + parts[1] + "." + string(sig)
		}, nil, ReasonSignature},
		{"signature dropped", func(*testing.T) string { return parts[0] + "." + parts[1] + "." }, nil, ReasonMalformed},
		{"missing user claim", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { delete(c, "sub") }))
		}, nil, ReasonUserClaim},
		{"empty user claim", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["sub"] = "" }))
		}, nil, ReasonUserClaim},
		{"user claim not a string", func(t *testing.T) string {
			return b.key.sign(t, b.claims(func(c map[string]any) { c["sub"] = 42 }))
		}, nil, ReasonUserClaim},
		{"logout token type", func(t *testing.T) string {
			return b.key.signWith(t, b.claims(nil), tokenOpts{typ: "logout+jwt"})
		}, nil, ReasonTokenType},
		{"not a JWT", func(*testing.T) string { return "not-a-token" }, nil, ReasonNotJWT},
		{"not a JWT nor a b64token", func(*testing.T) string { return "not a token" }, nil, ReasonMalformed},
		{"JWS JSON serialization", func(*testing.T) string {
			return `{"payload":"` + parts[1] + `","protected":"` + parts[0] + `","signature":"` + parts[2] + `"}`
		}, nil, ReasonMalformed},
		{"JWE-shaped", func(*testing.T) string { return valid + ".x.y" }, nil, ReasonMalformed},
	}
	var tokens []string
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.token(t)
			tokens = append(tokens, tok)
			res := tc.resources
			if res == nil {
				res = []string{publicURL, publicURL + "/", resMine}
			}
			id, err := b.verify(tok, res...)
			requireRefused(t, err, tc.reason, tok, testSub)
			require.Zero(t, id)
		})
	}
	// The debug log names provider and reason, never a token or claim.
	logs := b.logs.String()
	require.Contains(t, logs, "reason=signature")
	require.Contains(t, logs, "provider=kc")
	requireNoSecret(t, logs, append(tokens, valid, testSub)...)
}

func TestVerifyAccessTokenClockSkew(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	now := b.clock.Now()
	for name, mod := range map[string]func(map[string]any){
		"expired within the skew": func(c map[string]any) { c["exp"] = now.Add(-30 * time.Second).Unix() },
		"nbf within the skew":     func(c map[string]any) { c["nbf"] = now.Add(30 * time.Second).Unix() },
		"iat within the skew":     func(c map[string]any) { c["iat"] = now.Add(30 * time.Second).Unix() },
		"fractional exp":          func(c map[string]any) { c["exp"] = float64(now.Unix()) + 100.5 },
	} {
		_, err := b.verify(b.key.sign(t, b.claims(mod)), resMine)
		require.NoError(t, err, name)
	}

	t.Run("a skew of nearly five minutes on nbf", func(t *testing.T) {
		b := setup(t, func(p *Provider) { p.ClockSkew = 280 * time.Second })
		for _, ahead := range []time.Duration{30 * time.Second, 270 * time.Second} {
			_, err := b.verify(b.key.sign(t, b.claims(func(c map[string]any) { c["nbf"] = b.clock.Now().Add(ahead).Unix() })), resMine)
			require.NoError(t, err, ahead)
		}
		tok := b.key.sign(t, b.claims(func(c map[string]any) { c["nbf"] = b.clock.Now().Add(290 * time.Second).Unix() }))
		_, err := b.verify(tok, resMine)
		requireRefused(t, err, ReasonNotYetValid, tok)
	})

	t.Run("configured skew", func(t *testing.T) {
		b := setup(t, func(p *Provider) { p.ClockSkew = 5 * time.Second })
		tok := b.key.sign(t, b.claims(func(c map[string]any) { c["exp"] = b.clock.Now().Add(-30 * time.Second).Unix() }))
		_, err := b.verify(tok, resMine)
		requireRefused(t, err, ReasonExpired, tok)
	})
}

func TestVerifyAccessTokenAdminClaim(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p *Provider) {
		p.AdminScope = ""
		p.AdminClaim = "groups"
		p.AdminValues = []string{"mcpflow-admins"}
	})
	for _, tc := range []struct {
		groups any
		admin  bool
	}{
		{[]string{"dev", "mcpflow-admins"}, true},
		{"mcpflow-admins", true},
		{[]string{"dev"}, false},
		{nil, false},
		{42, false},
		{map[string]any{"mcpflow-admins": true}, false},
	} {
		tok := b.key.sign(t, b.claims(func(c map[string]any) {
			c["scope"] = "mcp:tools mcpflow-admins"
			if tc.groups != nil {
				c["groups"] = tc.groups
			}
		}))
		id, err := b.verify(tok, resMine)
		require.NoError(t, err)
		require.Equal(t, tc.admin, id.Admin, "groups %v", tc.groups)
		require.Empty(t, id.AdminScope)
	}

	t.Run("nested claim", func(t *testing.T) {
		b := setup(t, func(p *Provider) {
			p.AdminScope = ""
			p.AdminClaim = "realm_access.roles"
			p.AdminValues = []string{"admin"}
		})
		tok := b.key.sign(t, b.claims(func(c map[string]any) {
			c["realm_access"] = map[string]any{"roles": []string{"offline_access", "admin"}}
		}))
		id, err := b.verify(tok, resMine)
		require.NoError(t, err)
		require.True(t, id.Admin)

		tok = b.key.sign(t, b.claims(func(c map[string]any) {
			c["realm_access"] = map[string]any{"roles": []string{"user"}}
		}))
		id, err = b.verify(tok, resMine)
		require.NoError(t, err)
		require.False(t, id.Admin)
	})
}

func TestVerifyAccessTokenUserID(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p *Provider) { p.UserPrefix = "kc." })
	hashed := func(v string) string {
		sum := sha256.Sum256([]byte(v))
		return "kc.h-" + hex.EncodeToString(sum[:])[:32]
	}
	for _, tc := range []struct{ sub, want string }{
		{"alice", "kc.alice"},
		{"f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "kc.f81d4fae-7dec-11d0-a765-00a0c91e6bf6"},
		{"auth0|abc", hashed("auth0|abc")},
		{"John Doe", hashed("John Doe")},
		{"../etc", hashed("../etc")},
		{strings.Repeat("a", 62), hashed(strings.Repeat("a", 62))},
		{strings.Repeat("a", 61), "kc." + strings.Repeat("a", 61)},
		// A value that reads as a hashed id is hashed too.
		{"h-0123456789abcdef0123456789abcdef", hashed("h-0123456789abcdef0123456789abcdef")},
	} {
		tok := b.key.sign(t, b.claims(func(c map[string]any) { c["sub"] = tc.sub }))
		id, err := b.verify(tok, resMine)
		require.NoError(t, err, tc.sub)
		require.Equal(t, tc.want, id.UserID, tc.sub)
		require.NoError(t, mcpflow.ValidateID("user id", id.UserID))
	}

	t.Run("other user claim", func(t *testing.T) {
		b := setup(t, func(p *Provider) { p.UserClaim = "preferred_username" })
		tok := b.key.sign(t, b.claims(func(c map[string]any) { c["preferred_username"] = "bob" }))
		id, err := b.verify(tok, resMine)
		require.NoError(t, err)
		require.Equal(t, "bob", id.UserID)

		tok = b.key.sign(t, b.claims(nil))
		_, err = b.verify(tok, resMine)
		requireRefused(t, err, ReasonUserClaim, tok, testSub)
	})
}

func TestVerifyAccessTokenCache(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tok := b.key.sign(t, b.claims(nil))

	t.Run("audience is checked on every use", func(t *testing.T) {
		_, err := b.verify(tok, resMine)
		require.NoError(t, err)
		require.Equal(t, 1, b.v.cache.len())
		_, err = b.verify(tok, resOther)
		requireRefused(t, err, ReasonAudience, tok)
		_, err = b.verify(tok)
		requireRefused(t, err, ReasonAudience, tok)
		_, err = b.verify(tok, resMine)
		require.NoError(t, err)
	})

	t.Run("refused tokens are not cached", func(t *testing.T) {
		n := b.v.cache.len()
		forged := rsaKey(2, "a1").sign(t, b.claims(nil))
		for range 2 {
			_, err := b.verify(forged, resMine)
			requireRefused(t, err, ReasonSignature, forged)
		}
		require.Equal(t, n, b.v.cache.len())
	})

	// The cache keeps a token until its exp at most, not the whole
	// cacheTTL: with a skew of a second, the token is refused within
	// cacheTTL of its first use (with the default skew of 60s, cacheTTL
	// would hide a cache that ignored exp).
	t.Run("a cached token still expires", func(t *testing.T) {
		b := setup(t, func(p *Provider) { p.ClockSkew = time.Second })
		short := b.key.sign(t, b.claims(func(c map[string]any) { c["exp"] = b.clock.Now().Add(20 * time.Second).Unix() }))
		_, err := b.verify(short, resMine)
		require.NoError(t, err)
		b.clock.Advance(20*time.Second + 2*time.Second)
		require.Less(t, 22*time.Second, cacheTTL)
		_, err = b.verify(short, resMine)
		requireRefused(t, err, ReasonExpired, short)
	})

	t.Run("bounded", func(t *testing.T) {
		c := newTokenCache(3)
		now := time.Unix(0, 0)
		for i := range 5 {
			c.put(sha256.Sum256([]byte{byte(i)}), verifiedToken{}, now.Add(time.Minute))
		}
		require.Equal(t, 3, c.len())
		_, ok := c.get(sha256.Sum256([]byte{0}), now)
		require.False(t, ok)
		_, ok = c.get(sha256.Sum256([]byte{4}), now)
		require.True(t, ok)
		_, ok = c.get(sha256.Sum256([]byte{4}), now.Add(time.Minute))
		require.False(t, ok)
	})
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, err := b.verify(b.key.sign(t, b.claims(nil)), resMine)
	require.NoError(t, err)
	require.EqualValues(t, 1, b.idp.jwksHits.Load())
	require.EqualValues(t, 1, b.idp.discoveryHits.Load())

	next := rsaKey(1, "a2")
	b.idp.publish(b.key, next)

	// Within JWKSMinRefresh of the last fetch the new key is not known yet.
	tok := next.sign(t, b.claims(nil))
	_, err = b.verify(tok, resMine)
	requireRefused(t, err, ReasonSignature, tok)
	require.EqualValues(t, 1, b.idp.jwksHits.Load())

	b.clock.Advance(DefaultJWKSMinRefresh)
	tok = next.sign(t, b.claims(nil))
	_, err = b.verify(tok, resMine)
	require.NoError(t, err)
	require.EqualValues(t, 2, b.idp.jwksHits.Load(), "one refetch")
	require.EqualValues(t, 1, b.idp.discoveryHits.Load(), "discovery is not repeated")

	// The old key still verifies; a known key costs no fetch.
	_, err = b.verify(b.key.sign(t, b.claims(func(c map[string]any) { c["jti"] = "2" })), resMine)
	require.NoError(t, err)
	require.EqualValues(t, 2, b.idp.jwksHits.Load())
}

func TestUnknownKIDFloodIsRateLimited(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	flood := func(n int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, n)
		toks := make([]string, n)
		for i := range n {
			toks[i] = b.key.signWith(t, b.claims(nil), tokenOpts{kid: randomKID(t), typ: "at+jwt"})
		}
		for i := range n {
			wg.Go(func() { _, errs[i] = b.verify(toks[i], resMine) })
		}
		wg.Wait()
		for i, err := range errs {
			requireRefused(t, err, ReasonSignature, toks[i])
		}
	}

	flood(100) // concurrent, before any fetch: one shared fetch
	require.EqualValues(t, 1, b.idp.jwksHits.Load())
	flood(100)
	require.EqualValues(t, 1, b.idp.jwksHits.Load())

	b.clock.Advance(DefaultJWKSMinRefresh / 2)
	flood(50)
	require.EqualValues(t, 1, b.idp.jwksHits.Load())

	b.clock.Advance(DefaultJWKSMinRefresh / 2)
	flood(100)
	require.EqualValues(t, 2, b.idp.jwksHits.Load(), "at most one fetch per JWKSMinRefresh")
	require.EqualValues(t, 1, b.idp.discoveryHits.Load())

	_, err := b.verify(b.key.sign(t, b.claims(nil)), resMine)
	require.NoError(t, err)
}

func TestProviderDownAtStart(t *testing.T) {
	t.Parallel()
	key := rsaKey(0, "a1")
	b := setupIdP(t, reserveIdP(t, key), key, nil) // NewVerifier succeeds while the IdP is down

	tok := b.key.sign(t, b.claims(nil))
	_, err := b.verify(tok, resMine)
	requireUnavailable(t, err, tok, testSub)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "kc", e.Provider)
	require.Error(t, e.Cause)

	// Up again, but the last attempt is too recent: no request yet.
	b.idp.start()
	_, err = b.verify(tok, resMine)
	requireUnavailable(t, err, tok, testSub)
	require.EqualValues(t, 0, b.idp.discoveryHits.Load()+b.idp.jwksHits.Load())

	b.clock.Advance(maxRetryInterval)
	id, err := b.verify(tok, resMine)
	require.NoError(t, err)
	require.Equal(t, testSub, id.UserID)
	require.EqualValues(t, 1, b.idp.discoveryHits.Load())
	require.EqualValues(t, 1, b.idp.jwksHits.Load())
	require.Contains(t, b.logs.String(), "identity provider keys fetched again")
}

func TestProviderDownWithKeysCached(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, err := b.verify(b.key.sign(t, b.claims(func(c map[string]any) { c["jti"] = "1" })), resMine)
	require.NoError(t, err)
	require.EqualValues(t, 1, b.idp.jwksHits.Load())

	b.idp.stop()
	// Tokens signed with a held key still verify, cached or not.
	_, err = b.verify(b.key.sign(t, b.claims(nil)), resMine)
	require.NoError(t, err)

	// A token whose key is not held cannot be checked.
	b.clock.Advance(DefaultJWKSMinRefresh)
	tok := rsaKey(1, "a2").sign(t, b.claims(nil))
	_, err = b.verify(tok, resMine)
	requireUnavailable(t, err, tok, testSub)

	_, err = b.verify(b.key.sign(t, b.claims(func(c map[string]any) { c["jti"] = "2" })), resMine)
	require.NoError(t, err)
}

func TestConfiguredJWKSURLSkipsDiscovery(t *testing.T) {
	t.Parallel()
	key := rsaKey(0, "a1")
	idp := newIdP(t, key)
	b := setupIdP(t, idp, key, func(p *Provider) { p.JWKSURL = idp.jwksURL() })
	_, err := b.verify(b.key.sign(t, b.claims(nil)), resMine)
	require.NoError(t, err)
	require.EqualValues(t, 0, idp.discoveryHits.Load())
	require.EqualValues(t, 1, idp.jwksHits.Load())

	tok := b.key.sign(t, b.claims(func(c map[string]any) { c["iss"] = "http://elsewhere.example.com" }))
	_, err = b.verify(tok, resMine)
	requireRefused(t, err, ReasonIssuer, tok)
}

// A discovery document that names another issuer, or keys over plain http
// off loopback (keys that could be swapped on the way), makes the provider
// unavailable; no key is fetched.
func TestDiscoveryDocumentRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, issuer, jwks, want string
	}{
		{"another issuer", "http://elsewhere.example.com", "", "issuer"},
		{"keys over plain http", "", "http://keys.example.com/certs", "jwks_uri"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := rsaKey(0, "a1")
			idp := newIdP(t, key)
			if tc.issuer != "" {
				idp.docIssuer = tc.issuer
			}
			idp.docJWKS = tc.jwks
			b := setupIdP(t, idp, key, nil)
			_, err := b.verify(b.key.sign(t, b.claims(nil)), resMine)
			requireUnavailable(t, err)
			require.ErrorContains(t, err, tc.want)
			require.EqualValues(t, 0, idp.jwksHits.Load())
		})
	}
}

func TestNewVerifierValidatesConfig(t *testing.T) {
	t.Parallel()
	ok := Provider{Name: "kc", Issuer: "https://idp.example.com/realms/x"}
	with := func(mod func(*Provider)) []Provider {
		p := ok
		mod(&p)
		return []Provider{p}
	}
	for _, tc := range []struct {
		name      string
		providers []Provider
		want      string
	}{
		{"none", nil, "none configured"},
		{"empty name", with(func(p *Provider) { p.Name = " " }), "name must not be empty"},
		{"duplicate name", []Provider{ok, {Name: "kc", Issuer: "https://other.example.com"}}, "name is used twice"},
		{"duplicate issuer", []Provider{ok, {Name: "kc2", Issuer: ok.Issuer}}, "used by another provider"},
		{"relative issuer", with(func(p *Provider) { p.Issuer = "idp.example.com" }), "issuer"},
		{"issuer scheme", with(func(p *Provider) { p.Issuer = "ftp://idp.example.com" }), "issuer"},
		{"jwks url", with(func(p *Provider) { p.JWKSURL = "/certs" }), "jwks_url"},
		{"HS256", with(func(p *Provider) { p.Algorithms = []string{"RS256", "HS256"} }), "refused"},
		{"none alg", with(func(p *Provider) { p.Algorithms = []string{"none"} }), "refused"},
		{"unknown alg", with(func(p *Provider) { p.Algorithms = []string{"rs256"} }), "unknown algorithm"},
		{"negative skew", with(func(p *Provider) { p.ClockSkew = -time.Second }), "clock_skew"},
		{"huge skew", with(func(p *Provider) { p.ClockSkew = time.Hour }), "clock_skew"},
		{"negative refresh", with(func(p *Provider) { p.JWKSMinRefresh = -time.Second }), "jwks_min_refresh"},
		{"admin scope and claim", with(func(p *Provider) {
			p.AdminScope, p.AdminClaim, p.AdminValues = "admin", "groups", []string{"a"}
		}), "exclusive"},
		{"admin claim without values", with(func(p *Provider) { p.AdminClaim = "groups" }), "admin_values"},
		{"admin values without claim", with(func(p *Provider) { p.AdminValues = []string{"a"} }), "admin_claim"},
		{"long user prefix", with(func(p *Provider) { p.UserPrefix = strings.Repeat("k", 31) }), "user_prefix"},
		{"bad user prefix", with(func(p *Provider) { p.UserPrefix = "kc/" }), "user_prefix"},
		{"dot user prefix", with(func(p *Provider) { p.UserPrefix = ".kc" }), "user_prefix"},
		{"scope with space", with(func(p *Provider) { p.RequiredScopes = []string{"a b"} }), "scope"},
		{"empty audience", with(func(p *Provider) { p.Audiences = []string{""}; p.RequiredScopes = []string{"s"} }), "audiences"},
		{"audiences without required scopes", with(func(p *Provider) { p.Audiences = []string{"mcp-host"} }), "audiences need required_scopes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewVerifier(context.Background(), tc.providers, Options{})
			require.ErrorContains(t, err, tc.want)
		})
	}

	t.Run("defaults", func(t *testing.T) {
		v, err := NewVerifier(context.Background(), []Provider{ok}, Options{})
		require.NoError(t, err)
		cfg := v.providers[0].cfg
		require.Equal(t, DefaultAlgorithms, cfg.Algorithms)
		require.Equal(t, DefaultClockSkew, cfg.ClockSkew)
		require.Equal(t, "sub", cfg.UserClaim)
		require.Equal(t, DefaultJWKSMinRefresh, cfg.JWKSMinRefresh)
		require.Equal(t, maxRetryInterval, v.providers[0].keys.retry)
	})

	t.Run("overlapping user prefixes are refused", func(t *testing.T) {
		auth0 := Provider{Name: "auth0", Issuer: "https://tenant.auth0.com/", UserPrefix: "a0."}
		for _, tc := range []struct {
			name   string
			a, b   Provider
			refuse bool
		}{
			{"empty starts every prefix", ok, auth0, true},
			{"a prefix of another", Provider{Name: "kc", Issuer: ok.Issuer, UserPrefix: "a"}, auth0, true},
			{"the same prefix", Provider{Name: "kc", Issuer: ok.Issuer, UserPrefix: "a0."}, auth0, true},
			{"only one shares", Provider{Name: "kc", Issuer: ok.Issuer, ShareUserIDs: true}, auth0, true},
			{"both share", Provider{Name: "kc", Issuer: ok.Issuer, ShareUserIDs: true}, Provider{Name: "auth0", Issuer: auth0.Issuer, ShareUserIDs: true}, false},
			{"disjoint", Provider{Name: "kc", Issuer: ok.Issuer, UserPrefix: "kc."}, auth0, false},
		} {
			_, err := NewVerifier(context.Background(), []Provider{tc.a, tc.b}, Options{})
			if tc.refuse {
				require.ErrorContains(t, err, "so their users can have the same id", tc.name)
			} else {
				require.NoError(t, err, tc.name)
			}
		}
	})

	t.Run("longest user prefix", func(t *testing.T) {
		_, err := NewVerifier(context.Background(), with(func(p *Provider) { p.UserPrefix = strings.Repeat("k", 30) }), Options{})
		require.NoError(t, err)
	})
}

// The provider client follows a redirect only to where keys may come
// from, and not forever; NewVerifier puts that rule on a client that has
// none.
func TestSecureRedirect(t *testing.T) {
	t.Parallel()
	req := func(u string) *http.Request {
		r, err := http.NewRequest("GET", u, nil)
		require.NoError(t, err)
		return r
	}
	require.NoError(t, secureRedirect(req("https://idp.example.com/keys"), nil))
	require.NoError(t, secureRedirect(req("http://127.0.0.1:5556/keys"), nil))
	require.Error(t, secureRedirect(req("http://idp.example.com/keys"), nil))
	require.Error(t, secureRedirect(req("https://idp.example.com/keys"), make([]*http.Request, 5)))

	client := &http.Client{}
	v, err := NewVerifier(context.Background(), []Provider{{Name: "kc", Issuer: "https://idp.example.com"}}, Options{HTTPClient: client})
	require.NoError(t, err)
	require.Nil(t, client.CheckRedirect, "the caller's client is not changed")
	require.NotNil(t, v.providers[0].keys.client.CheckRedirect)
}

// Keys the provider publishes for something else than signing this kind
// of token never verify one; a token over 16 KiB is not even parsed.
func TestKeysAndSizeRefused(t *testing.T) {
	t.Parallel()
	for name, mod := range map[string]func(*jose.JSONWebKey){
		"a key for encryption":        func(k *jose.JSONWebKey) { k.Use = "enc" },
		"a key for another algorithm": func(k *jose.JSONWebKey) { k.Algorithm = "RS512" },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			b.idp.mu.Lock()
			mod(&b.idp.published[0])
			b.idp.mu.Unlock()
			tok := b.key.sign(t, b.claims(nil))
			_, err := b.verify(tok, resMine)
			requireRefused(t, err, ReasonSignature, tok)
		})
	}
	t.Run("over 16 KiB", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tok := b.key.sign(t, b.claims(func(c map[string]any) { c["pad"] = strings.Repeat("x", maxTokenBytes) }))
		_, err := b.verify(tok, resMine)
		requireRefused(t, err, ReasonMalformed)
		require.EqualValues(t, 0, b.idp.jwksHits.Load(), "refused before any key is fetched")
	})
}

// A misconfigured issuer (a trailing slash the provider does not write)
// shows at start: Start logs each provider and reads its discovery
// document in the background, and a document naming another issuer is an
// error naming both. A token of that provider is then refused with a
// reason naming its issuer and the configured one (issue 30, point 10).
func TestStartFindsIssuerMismatch(t *testing.T) {
	t.Parallel()
	key := rsaKey(0, "a1")
	idp := newIdP(t, key)
	b := setupIdP(t, idp, key, func(p *Provider) { p.Issuer = idp.issuer + "/"; p.UserPrefix = "kc." })
	b.v.Start(context.Background())
	// Start reads the discovery document by itself; refresh then joins
	// that fetch (or, when it is over, returns its error) without another.
	require.Eventually(t, func() bool { return idp.discoveryHits.Load() > 0 }, 10*time.Second, 5*time.Millisecond)
	_, err := b.v.providers[0].keys.refresh(context.Background())
	require.Error(t, err)
	logs := b.logs.String()
	require.Contains(t, logs, `level=INFO msg="identity provider configured" provider=kc issuer=`+idp.issuer+`/ audiences=[] user_prefix=kc. share_user_ids=false required_scopes=[mcp:tools] keys=discovery`)
	require.Contains(t, logs, `level=ERROR msg="identity provider misconfigured: its discovery document names another issuer; every token of it is refused" provider=kc configured_issuer=`+idp.issuer+`/ discovered_issuer=`+idp.issuer+` `)
	require.Contains(t, logs, "only a trailing slash differs")
	require.EqualValues(t, 1, idp.discoveryHits.Load())

	tok := b.key.sign(t, b.claims(nil))
	_, err = b.verify(tok, resMine)
	requireRefused(t, err, ReasonIssuer, tok)
	require.ErrorContains(t, err, fmt.Sprintf(`invalid access token: issuer (provider kc): the token names issuer %q, the provider's configured issuer is %q (only a trailing slash differs`, idp.issuer, idp.issuer+"/"))

	// An issuer no provider is near is named with the configured ones.
	other := b.key.sign(t, b.claims(func(c map[string]any) { c["iss"] = "https://elsewhere.example.com" }))
	_, err = b.verify(other, resMine)
	require.ErrorContains(t, err, fmt.Sprintf(`invalid access token: issuer: the token names "https://elsewhere.example.com", none of the configured issuers %q`, idp.issuer+"/"))
}

// A key the provider withdrew from its key set stops verifying tokens
// within JWKSMaxAge of the fetch that last held it, tokens whose
// verification is cached included: the key set is fetched again once
// stale, and a cached verification holds only while its key is in the set
// (issue 30, point 6).
func TestWithdrawnKeyStopsVerifying(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p *Provider) { p.JWKSMaxAge = 30 * time.Second })
	tok := b.key.sign(t, b.claims(nil))
	_, err := b.verify(tok, resMine)
	require.NoError(t, err)
	require.EqualValues(t, 1, b.idp.jwksHits.Load())

	next := rsaKey(1, "a2")
	b.idp.publish(next) // a1 withdrawn
	b.clock.Advance(29 * time.Second)
	_, err = b.verify(tok, resMine)
	require.NoError(t, err, "within the bound the held key set is used")
	require.EqualValues(t, 1, b.idp.jwksHits.Load())

	b.clock.Advance(2 * time.Second) // past JWKSMaxAge, within cacheTTL
	require.Less(t, 31*time.Second, cacheTTL)
	_, err = b.verify(tok, resMine)
	requireRefused(t, err, ReasonSignature, tok)
	require.EqualValues(t, 2, b.idp.jwksHits.Load())
	_, err = b.verify(b.key.sign(t, b.claims(nil)), resMine)
	requireRefused(t, err, ReasonSignature)
	id, err := b.verify(next.sign(t, b.claims(nil)), resMine)
	require.NoError(t, err, "the key that stayed verifies")
	require.Equal(t, testSub, id.UserID)
}

// The key set's Cache-Control max-age says when it is fetched again,
// bounded by JWKSMinRefresh below and JWKSMaxAge above; without one,
// JWKSMaxAge.
func TestKeySetCacheControl(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, header string
		stale        time.Duration // fetched again after this long, not before
	}{
		{"max-age", "public, max-age=15", 15 * time.Second},
		{"a longer max-age", "max-age=40", 40 * time.Second},
		{"above the bound", "max-age=86400", time.Minute},
		{"below jwks_min_refresh", "max-age=1", DefaultJWKSMinRefresh},
		{"no-cache", "no-cache", DefaultJWKSMinRefresh},
		{"none", "", time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(p *Provider) { p.JWKSMaxAge = time.Minute })
			b.idp.mu.Lock()
			b.idp.cacheControl = tc.header
			b.idp.mu.Unlock()
			tok := b.key.sign(t, b.claims(nil))
			_, err := b.verify(tok, resMine)
			require.NoError(t, err)
			b.clock.Advance(tc.stale - time.Second)
			_, err = b.verify(b.key.sign(t, b.claims(nil)), resMine)
			require.NoError(t, err)
			require.EqualValues(t, 1, b.idp.jwksHits.Load(), "fresh until %s", tc.stale)
			b.clock.Advance(time.Second)
			_, err = b.verify(tok, resMine)
			require.NoError(t, err)
			require.EqualValues(t, 2, b.idp.jwksHits.Load(), "stale at %s", tc.stale)
		})
	}
	h := http.Header{}
	h.Set("Cache-Control", "max-age=40")
	h.Set("Age", "15")
	require.Equal(t, 25*time.Second, cacheMaxAge(h))
}

// Opaque access tokens are checked at the provider's introspection
// endpoint (RFC 7662), found by discovery, with mcpflow's own client
// credentials; the answer passes the checks a JWT's claims do, and is
// remembered until the token's exp at most and IntrospectionCacheTTL
// (issue 30, point 9).
func TestIntrospection(t *testing.T) {
	t.Parallel()
	withIntrospection := func(p *Provider) {
		p.IntrospectionClientID, p.IntrospectionClientSecret = introspectID, introspectSecret
		p.IntrospectionCacheTTL = 30 * time.Second
		p.ClockSkew = time.Second
	}
	b := setup(t, withIntrospection)
	activeAt := func(b *testBundle, mod func(map[string]any)) map[string]any {
		a := b.claims(func(c map[string]any) {
			c["active"] = true
			c["client_id"] = "mcp-host"
			c["token_type"] = "Bearer"
			c["sub"] = "bob"
		})
		if mod != nil {
			mod(a)
		}
		return a
	}
	active := func(mod func(map[string]any)) map[string]any { return activeAt(b, mod) }

	t.Run("active", func(t *testing.T) {
		const tok = "opaque-Active_token.1"
		b.idp.answer(tok, active(nil))
		hits := b.idp.introspectHits.Load()
		id, err := b.verify(tok, resMine)
		require.NoError(t, err)
		require.Equal(t, "bob", id.UserID)
		require.Equal(t, []string{"openid", "mcp:tools"}, id.Scopes)
		require.Empty(t, id.MissingScopes)
		_, err = b.verify(tok, resMine)
		require.NoError(t, err)
		require.Equal(t, hits+1, b.idp.introspectHits.Load(), "the answer is cached")
		_, err = b.verify(tok, resOther)
		requireRefused(t, err, ReasonAudience, tok)

		b.idp.answer(tok, map[string]any{"active": false}) // revoked
		b.clock.Advance(29 * time.Second)
		_, err = b.verify(tok, resMine)
		require.NoError(t, err, "within IntrospectionCacheTTL")
		b.clock.Advance(time.Second)
		_, err = b.verify(tok, resMine)
		requireRefused(t, err, ReasonInactive, tok, introspectSecret)
		require.Equal(t, hits+2, b.idp.introspectHits.Load())
	})

	t.Run("the cache ends at exp", func(t *testing.T) {
		const tok = "opaque-short-lived"
		b.idp.answer(tok, active(func(a map[string]any) { a["exp"] = b.clock.Now().Add(5 * time.Second).Unix() }))
		_, err := b.verify(tok, resMine)
		require.NoError(t, err)
		b.clock.Advance(7 * time.Second) // past exp and the skew, within IntrospectionCacheTTL
		_, err = b.verify(tok, resMine)
		requireRefused(t, err, ReasonExpired, tok)
	})

	for _, tc := range []struct {
		name   string
		mod    func(map[string]any)
		reason string
	}{
		{"inactive", func(a map[string]any) { clear(a); a["active"] = false }, ReasonInactive},
		{"a refresh token", func(a map[string]any) { a["token_type"] = "refresh_token" }, ReasonTokenType},
		{"Hydra's refresh token", func(a map[string]any) { a["token_use"] = "refresh_token" }, ReasonTokenType},
		{"Keycloak's refresh token", func(a map[string]any) { a["typ"] = "Refresh" }, ReasonTokenType},
		{"another issuer", func(a map[string]any) { a["iss"] = "https://elsewhere.example.com" }, ReasonIssuer},
		{"another audience", func(a map[string]any) { a["aud"] = []string{resOther} }, ReasonAudience},
		{"no audience", func(a map[string]any) { delete(a, "aud") }, ReasonAudience},
		{"no user", func(a map[string]any) { delete(a, "sub") }, ReasonUserClaim},
		{"expired", func(a map[string]any) { a["exp"] = b.clock.Now().Add(-time.Minute).Unix() }, ReasonExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := "opaque-" + strings.Map(func(r rune) rune {
				if r == ' ' || r == '\'' {
					return '-'
				}
				return r
			}, tc.name)
			b.idp.answer(tok, active(tc.mod))
			_, err := b.verify(tok, resMine)
			requireRefused(t, err, tc.reason, tok, introspectSecret)
		})
	}

	t.Run("no exp, no iss; Keycloak's typ", func(t *testing.T) {
		const tok = "opaque-minimal"
		b.idp.answer(tok, active(func(a map[string]any) { delete(a, "exp"); delete(a, "iss"); a["typ"] = "Bearer" }))
		_, err := b.verify(tok, resMine)
		require.NoError(t, err)
	})

	t.Run("wrong credentials", func(t *testing.T) {
		c := setup(t, func(p *Provider) { withIntrospection(p); p.IntrospectionClientSecret = "wrong-secret-7" })
		const tok = "opaque-any"
		c.idp.answer(tok, active(nil))
		_, err := c.verify(tok, resMine)
		requireUnavailable(t, err, tok, "wrong-secret-7")
		require.ErrorContains(t, err, "401 Unauthorized")
	})

	t.Run("configured endpoint, JWTs introspected", func(t *testing.T) {
		c := setup(t, func(p *Provider) {
			withIntrospection(p)
			p.IntrospectionURL = "http://" + p.Issuer[len("http://"):len(p.Issuer)-len("/realms/test")] + introspectPath
			p.IntrospectJWTs = true
		})
		// Signed with a key the provider does not publish (Okta's org
		// authorization server), yet active for the provider.
		tok := rsaKey(3, "org").sign(t, c.claims(nil))
		c.idp.answer(tok, activeAt(c, nil))
		id, err := c.verify(tok, resMine)
		require.NoError(t, err)
		require.Equal(t, "bob", id.UserID, "the answer's claims, not the token's")
		require.EqualValues(t, 0, c.idp.discoveryHits.Load())
		require.EqualValues(t, 0, c.idp.jwksHits.Load())
	})

	t.Run("the start log names the client, not the secret", func(t *testing.T) {
		c := setup(t, withIntrospection)
		c.v.Start(context.Background())
		_, _ = c.v.providers[0].keys.refresh(context.Background()) // the background fetch ends
		require.Contains(t, c.logs.String(), "introspection=discovery introspection_client_id="+introspectID+" introspect_jwts=false")
		require.NotContains(t, c.logs.String(), introspectSecret)
	})

	t.Run("one provider only", func(t *testing.T) {
		_, err := NewVerifier(context.Background(), []Provider{
			{Name: "a", Issuer: "https://a.example.com", UserPrefix: "a.", IntrospectionClientID: "x", IntrospectionClientSecret: "y"},
			{Name: "b", Issuer: "https://b.example.com", UserPrefix: "b.", IntrospectionClientID: "x", IntrospectionClientSecret: "y"},
		}, Options{})
		require.ErrorContains(t, err, "at most one provider may introspect tokens")
	})
}
