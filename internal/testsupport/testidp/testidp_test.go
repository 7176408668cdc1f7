package testidp_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpflow/mcpflow/internal/testsupport/testidp"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

const (
	publicClient = "mcp-client"
	resourceMCP  = "http://127.0.0.1:8080/mcp"
	upstream     = "https://upstream.example/mcp"
	tokenTypeAT  = "urn:ietf:params:oauth:token-type:access_token"
)

// httpClient is the tests' own client; its idle connections are closed
// before the goroutine leak check.
func httpClient(t *testing.T) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func getJSON(t *testing.T, c *http.Client, u string) map[string]any {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, u)
	var m map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	return m
}

// postForm posts form to u, with HTTP Basic when user is not empty, and
// returns the status and the decoded JSON answer.
func postForm(t *testing.T, c *http.Client, u string, form url.Values, user, password string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(password))
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var m map[string]any
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(body, &m), string(body))
	return resp.StatusCode, m
}

func discovery(t *testing.T, c *http.Client, p *testidp.IdP) map[string]any {
	t.Helper()
	return getJSON(t, c, p.Issuer()+"/.well-known/openid-configuration")
}

// fetchJWKS fetches the key set at the discovery document's jwks_uri.
func fetchJWKS(t *testing.T, c *http.Client, p *testidp.IdP) *jose.JSONWebKeySet {
	t.Helper()
	resp, err := c.Get(discovery(t, c, p)["jwks_uri"].(string))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var set jose.JSONWebKeySet
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&set))
	return &set
}

func kids(set *jose.JSONWebKeySet) []string {
	var k []string
	for _, key := range set.Keys {
		k = append(k, key.KeyID)
	}
	return k
}

// verify checks token's RS256 signature against the JWKS fetched over
// HTTP and returns its claims and kid.
func verify(t *testing.T, c *http.Client, p *testidp.IdP, token string) (map[string]any, string) {
	t.Helper()
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	require.Len(t, jws.Signatures, 1)
	h := jws.Signatures[0].Header
	assert.Equal(t, "JWT", h.ExtraHeaders[jose.HeaderType])
	keys := fetchJWKS(t, c, p).Key(h.KeyID)
	require.Len(t, keys, 1, "kid %s in the JWKS", h.KeyID)
	payload, err := jws.Verify(keys[0])
	require.NoError(t, err)
	var claims map[string]any
	require.NoError(t, json.Unmarshal(payload, &claims))
	return claims, h.KeyID
}

func header(t *testing.T, token string) map[string]any {
	h, _ := testidp.Decode(t, token)
	return h
}

func payload(t *testing.T, token string) map[string]any {
	_, c := testidp.Decode(t, token)
	return c
}

func audience(claims map[string]any) []string {
	switch aud := claims["aud"].(type) {
	case string:
		return []string{aud}
	case []any:
		var s []string
		for _, a := range aud {
			s = append(s, a.(string))
		}
		return s
	}
	return nil
}

func TestDiscovery(t *testing.T) {
	p := testidp.Start(t, testidp.Options{})
	c := httpClient(t)
	assert.True(t, strings.HasPrefix(p.Issuer(), "http://127.0.0.1:"), p.Issuer())

	d := discovery(t, c, p)
	assert.Equal(t, p.Issuer(), d["issuer"])
	assert.Equal(t, p.Issuer()+"/authorize", d["authorization_endpoint"])
	assert.Equal(t, p.Issuer()+"/oauth/token", d["token_endpoint"])
	assert.Equal(t, p.Issuer()+"/keys", d["jwks_uri"])
	assert.Equal(t, []any{"S256"}, d["code_challenge_methods_supported"])
	assert.Subset(t, d["grant_types_supported"], []any{"authorization_code", "urn:ietf:params:oauth:grant-type:token-exchange"})
	assert.Subset(t, d["token_endpoint_auth_methods_supported"], []any{"none", "client_secret_basic", "client_secret_post"})

	// RFC 8414's well-known path answers the same document.
	assert.Equal(t, d, getJSON(t, c, p.Issuer()+"/.well-known/oauth-authorization-server"))
}

func TestLoginIssuesJWTAccessToken(t *testing.T) {
	p := testidp.Start(t, testidp.Options{AccessTokenTTL: 2 * time.Minute})
	c := httpClient(t)
	// Registered without a port: the loopback redirect matches on any.
	p.RegisterClient(testidp.Client{ID: publicClient, RedirectURIs: []string{"http://127.0.0.1/callback"}})

	tok := p.LoginAs(t, testidp.Carol, publicClient, "http://127.0.0.1:53682/callback", resourceMCP, "openid", "mcp:tools")
	claims, kid := verify(t, c, p, tok)
	currentKID, _ := p.SigningKey()
	assert.Equal(t, currentKID, kid)
	assert.Equal(t, p.Issuer(), claims["iss"])
	assert.Equal(t, testidp.Carol, claims["sub"])
	assert.ElementsMatch(t, []string{publicClient, resourceMCP}, audience(claims))
	assert.Equal(t, "openid mcp:tools", claims["scope"])
	assert.Equal(t, []any{testidp.AdminGroup}, claims["groups"])
	assert.Equal(t, publicClient, claims["client_id"])
	assert.NotEmpty(t, claims["jti"])
	iat, exp := claims["iat"].(float64), claims["exp"].(float64)
	assert.InDelta(t, 120, exp-iat, 2)
	assert.InDelta(t, float64(time.Now().Unix()), iat, 10)

	// The login user by default is alice, who has no groups; without
	// resource the audience is the client, without scopes "openid".
	tok = p.Login(t, publicClient, "http://127.0.0.1:1/callback", "")
	claims, _ = verify(t, c, p, tok)
	assert.Equal(t, testidp.Alice, claims["sub"])
	assert.Equal(t, []string{publicClient}, audience(claims))
	assert.Equal(t, "openid", claims["scope"])
	assert.NotContains(t, claims, "groups")

	p.SetLoginUser(testidp.Bob)
	claims, _ = verify(t, c, p, p.Login(t, publicClient, "http://127.0.0.1:2/callback", resourceMCP, "mcp:tools"))
	assert.Equal(t, testidp.Bob, claims["sub"])
	assert.Equal(t, "mcp:tools", claims["scope"])

	// Extra users and a confidential client (exact redirect URI, secret).
	p2 := testidp.Start(t, testidp.Options{Users: []testidp.User{{Name: "dave", Groups: []string{"ops", "dev"}}}})
	p2.RegisterClient(testidp.Client{ID: "web", Secret: "s3cret", RedirectURIs: []string{"http://localhost:9999/cb"}})
	claims, _ = verify(t, c, p2, p2.LoginAs(t, "dave", "web", "http://localhost:9999/cb", resourceMCP, "openid"))
	assert.Equal(t, "dave", claims["sub"])
	assert.Equal(t, []any{"ops", "dev"}, claims["groups"])
	assert.ElementsMatch(t, []string{"web", resourceMCP}, audience(claims))
	assert.Equal(t, p2.Issuer(), claims["iss"])
}

// TestBrowserless runs the flow as an MCP client would: a plain HTTP
// client follows the redirects from /authorize to the redirect URI,
// nothing listening there.
func TestBrowserless(t *testing.T) {
	p := testidp.Start(t, testidp.Options{})
	c := httpClient(t)
	const redirect = "http://127.0.0.1:1/cb"
	p.RegisterClient(testidp.Client{ID: publicClient, RedirectURIs: []string{redirect}})
	d := discovery(t, c, p)

	var hops []string
	var final *url.URL
	c.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		hops = append(hops, req.URL.Path)
		if req.URL.Host == "127.0.0.1:1" {
			final = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}
	verifier := oauth2.GenerateVerifier()
	q := url.Values{
		"response_type": {"code"}, "client_id": {publicClient}, "redirect_uri": {redirect},
		"state": {"xyz"}, "scope": {"mcp:tools"}, "resource": {resourceMCP, upstream},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"},
	}
	resp, err := c.Get(d["authorization_endpoint"].(string) + "?" + q.Encode())
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.NotNil(t, final, "hops %v", hops)
	assert.Equal(t, []string{"/login", "/authorize/callback", "/cb"}, hops)
	assert.Equal(t, "xyz", final.Query().Get("state"))
	code := final.Query().Get("code")
	require.NotEmpty(t, code)
	c.CheckRedirect = nil

	token := d["token_endpoint"].(string)
	form := url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"client_id": {publicClient}, "code_verifier": {verifier},
	}
	// A resource not asked for at /authorize is refused (RFC 8707).
	form.Set("resource", "https://other.example/")
	status, body := postForm(t, c, token, form, "", "")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "invalid_target", body["error"])

	// A wrong code_verifier is refused.
	form.Set("resource", upstream)
	form.Set("code_verifier", oauth2.GenerateVerifier())
	status, body = postForm(t, c, token, form, "", "")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "invalid_grant", body["error"])

	// One of them narrows the audience to it.
	form.Set("code_verifier", verifier)
	status, body = postForm(t, c, token, form, "", "")
	require.Equal(t, http.StatusOK, status, body)
	claims, _ := verify(t, c, p, body["access_token"].(string))
	assert.ElementsMatch(t, []string{publicClient, upstream}, audience(claims))

	// A resource that is not an absolute URI is refused at /authorize.
	q.Set("resource", "/relative")
	resp, err = c.Get(d["authorization_endpoint"].(string) + "?" + q.Encode())
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(b), "invalid_target")

	// An unregistered redirect URI (path differs) is refused.
	q.Set("resource", resourceMCP)
	q.Set("redirect_uri", "http://127.0.0.1:1/elsewhere")
	resp, err = c.Get(d["authorization_endpoint"].(string) + "?" + q.Encode())
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestRotateRetireJWKSHits(t *testing.T) {
	p := testidp.Start(t, testidp.Options{})
	c := httpClient(t)
	p.RegisterClient(testidp.Client{ID: publicClient, RedirectURIs: []string{"http://127.0.0.1/cb"}})
	const redirect = "http://127.0.0.1:5000/cb"

	hits := p.JWKSHits()
	assert.Equal(t, int64(0), hits)
	old := p.Login(t, publicClient, redirect, resourceMCP)
	_, kid1 := verify(t, c, p, old)
	assert.Equal(t, hits+1, p.JWKSHits(), "one fetch per verify")
	assert.Equal(t, []string{kid1}, kids(fetchJWKS(t, c, p)))
	assert.Equal(t, hits+2, p.JWKSHits())

	kid2 := p.Rotate()
	assert.NotEqual(t, kid1, kid2)
	current, key := p.SigningKey()
	assert.Equal(t, kid2, current)
	set := fetchJWKS(t, c, p)
	assert.Equal(t, []string{kid1, kid2}, kids(set))
	assert.True(t, key.PublicKey.Equal(set.Key(kid2)[0].Key), "SigningKey is the published key")

	_, kid := verify(t, c, p, p.Login(t, publicClient, redirect, resourceMCP))
	assert.Equal(t, kid2, kid, "new tokens are signed with the new key")
	_, kid = verify(t, c, p, old)
	assert.Equal(t, kid1, kid, "old tokens still verify")

	p.Retire(kid1)
	assert.Equal(t, []string{kid2}, kids(fetchJWKS(t, c, p)))
	jws, err := jose.ParseSignedCompact(old, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	_, err = jws.Verify(fetchJWKS(t, c, p).Key(kid2)[0])
	assert.Error(t, err)
	p.Retire("no-such-kid")
	assert.Equal(t, []string{kid2}, kids(fetchJWKS(t, c, p)))
	assert.Equal(t, hits+8, p.JWKSHits())

	// The JWKS says how long it may be used.
	jwksHeader := func() http.Header {
		resp, err := c.Get(p.Issuer() + "/keys")
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.Header
	}
	assert.Empty(t, jwksHeader().Get("Cache-Control"))
	p.SetKeysCacheControl("public, max-age=60")
	assert.Equal(t, "public, max-age=60", jwksHeader().Get("Cache-Control"))
	p.SetKeysCacheControl("")
	assert.Empty(t, jwksHeader().Get("Cache-Control"))
}

// exchange posts a token exchange with the client's credentials in the
// form, as mcpflow does, or HTTP Basic when basic is set.
func exchange(t *testing.T, c *http.Client, p *testidp.IdP, clientID, secret string, basic bool, form url.Values) (int, map[string]any) {
	t.Helper()
	form.Set("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange")
	if form.Get("subject_token_type") == "" {
		form.Set("subject_token_type", tokenTypeAT)
	}
	if basic {
		return postForm(t, c, p.Issuer()+"/oauth/token", form, clientID, secret)
	}
	form.Set("client_id", clientID)
	form.Set("client_secret", secret)
	return postForm(t, c, p.Issuer()+"/oauth/token", form, "", "")
}

func TestTokenExchange(t *testing.T) {
	p := testidp.Start(t, testidp.Options{})
	c := httpClient(t)
	p.RegisterClient(testidp.Client{ID: publicClient, RedirectURIs: []string{"http://127.0.0.1/cb"}})
	p.RegisterClient(testidp.Client{ID: "gateway", Secret: "gw-secret", GrantTypes: []string{testidp.GrantTokenExchange}})
	p.RegisterClient(testidp.Client{ID: "no-te", Secret: "secret"})
	subject := p.LoginAs(t, testidp.Carol, publicClient, "http://127.0.0.1:7/cb", resourceMCP, "openid", "mcp:tools")

	// As mcpflow's mcpclient asks: x/oauth2 clientcredentials with the
	// grant overridden and the client's credentials in the form.
	cc := clientcredentials.Config{
		ClientID: "gateway", ClientSecret: "gw-secret", TokenURL: p.Issuer() + "/oauth/token",
		AuthStyle: oauth2.AuthStyleInParams,
		EndpointParams: url.Values{
			"grant_type":           {"urn:ietf:params:oauth:grant-type:token-exchange"},
			"subject_token":        {subject},
			"subject_token_type":   {tokenTypeAT},
			"requested_token_type": {tokenTypeAT},
			"audience":             {upstream},
		},
	}
	tok, err := cc.Token(context.WithValue(t.Context(), oauth2.HTTPClient, c))
	require.NoError(t, err)
	assert.Equal(t, "Bearer", tok.TokenType)
	assert.Equal(t, tokenTypeAT, tok.Extra("issued_token_type"))
	assert.NotEqual(t, subject, tok.AccessToken)
	claims, _ := verify(t, c, p, tok.AccessToken)
	assert.Equal(t, p.Issuer(), claims["iss"])
	assert.Equal(t, testidp.Carol, claims["sub"])
	assert.Equal(t, []string{upstream}, audience(claims))
	assert.Equal(t, "gateway", claims["client_id"])
	assert.Equal(t, "openid mcp:tools", claims["scope"], "the subject token's scopes")
	assert.Equal(t, []any{testidp.AdminGroup}, claims["groups"])

	// HTTP Basic, resource instead of audience, a narrower scope.
	status, body := exchange(t, c, p, "gateway", "gw-secret", true, url.Values{
		"subject_token": {subject}, "resource": {upstream}, "scope": {"mcp:tools"},
	})
	require.Equal(t, http.StatusOK, status, body)
	claims, _ = verify(t, c, p, body["access_token"].(string))
	assert.Equal(t, []string{upstream}, audience(claims))
	assert.Equal(t, testidp.Carol, claims["sub"])
	assert.Equal(t, "mcp:tools", claims["scope"])

	// Refusals.
	for name, tc := range map[string]struct {
		client, secret string
		form           url.Values
		status         int
		err            string
	}{
		"scope not in subject token": {"gateway", "gw-secret", url.Values{"subject_token": {subject}, "audience": {upstream}, "scope": {"admin"}}, 400, "invalid_scope"},
		"client without the grant":   {"no-te", "secret", url.Values{"subject_token": {subject}, "audience": {upstream}}, 400, "unauthorized_client"},
		"wrong secret":               {"gateway", "nope", url.Values{"subject_token": {subject}, "audience": {upstream}}, 401, "invalid_client"},
		"public client":              {publicClient, "", url.Values{"subject_token": {subject}, "audience": {upstream}}, 401, "invalid_client"},
		"not a token":                {"gateway", "gw-secret", url.Values{"subject_token": {"garbage"}, "audience": {upstream}}, 400, "invalid_request"},
		"relative resource":          {"gateway", "gw-secret", url.Values{"subject_token": {subject}, "resource": {"upstream"}}, 400, "invalid_target"},
		"refresh token requested":    {"gateway", "gw-secret", url.Values{"subject_token": {subject}, "requested_token_type": {"urn:ietf:params:oauth:token-type:refresh_token"}}, 400, "invalid_request"},
	} {
		t.Run(name, func(t *testing.T) {
			status, body := exchange(t, c, p, tc.client, tc.secret, false, tc.form)
			assert.Equal(t, tc.status, status, body)
			assert.Equal(t, tc.err, body["error"])
		})
	}

	// Forged subject tokens: only a genuine signature of a valid token
	// of this issuer is exchanged.
	valid := p.Claims(testidp.Bob, resourceMCP)
	expired := p.Claims(testidp.Bob, resourceMCP)
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	otherIssuer := p.Claims(testidp.Bob, resourceMCP)
	otherIssuer["iss"] = "http://127.0.0.1:1"
	for _, tc := range []struct {
		kind   testidp.ForgeKind
		claims map[string]any
		ok     bool
	}{
		{testidp.ForgeSigned, valid, true},
		{testidp.ForgeSigned, expired, false},
		{testidp.ForgeSigned, otherIssuer, false},
		{testidp.ForgeAlgNone, valid, false},
		{testidp.ForgeHS256PublicKeyPEM, valid, false},
		{testidp.ForgeHS256PublicKeyDER, valid, false},
		{testidp.ForgeUnknownKID, valid, false},
		{testidp.ForgeTamperedPayload, valid, false},
		{testidp.ForgeTamperedSignature, valid, false},
	} {
		status, body := exchange(t, c, p, "gateway", "gw-secret", false, url.Values{
			"subject_token": {p.Forge(t, tc.kind, tc.claims)}, "audience": {upstream},
		})
		if tc.ok {
			require.Equal(t, http.StatusOK, status, "%v: %v", tc.kind, body)
			claims, _ := verify(t, c, p, body["access_token"].(string))
			assert.Equal(t, testidp.Bob, claims["sub"])
		} else {
			assert.Equal(t, http.StatusBadRequest, status, "%v: %v", tc.kind, body)
		}
	}

	// A token whose key was retired is no longer exchanged.
	_, kid := verify(t, c, p, subject)
	p.Rotate()
	p.Retire(kid)
	status, body = exchange(t, c, p, "gateway", "gw-secret", false, url.Values{"subject_token": {subject}, "audience": {upstream}})
	assert.Equal(t, http.StatusBadRequest, status, body)
}

func TestForge(t *testing.T) {
	p := testidp.Start(t, testidp.Options{})
	c := httpClient(t)
	kid, key := p.SigningKey()
	set := fetchJWKS(t, c, p)
	claims := p.Claims(testidp.Carol, resourceMCP)
	assert.Equal(t, p.Issuer(), claims["iss"])
	assert.Equal(t, []string{testidp.AdminGroup}, claims["groups"])
	want := payload(t, p.Forge(t, testidp.ForgeSigned, claims)) // claims as JSON gives them back

	rs256 := []jose.SignatureAlgorithm{jose.RS256}
	verifies := func(token string) bool {
		jws, err := jose.ParseSignedCompact(token, rs256)
		if err != nil {
			return false
		}
		for _, k := range set.Keys {
			if _, err := jws.Verify(k); err == nil {
				return true
			}
		}
		return false
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	hs256 := func(token string, secret []byte) bool {
		i := strings.LastIndexByte(token, '.')
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(token[:i]))
		return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)) == token[i+1:]
	}

	for _, tc := range []struct {
		kind  testidp.ForgeKind
		check func(t *testing.T, token string)
	}{
		{testidp.ForgeSigned, func(t *testing.T, token string) {
			assert.True(t, verifies(token))
			assert.Equal(t, kid, header(t, token)["kid"])
		}},
		{testidp.ForgeAlgNone, func(t *testing.T, token string) {
			assert.Equal(t, "none", header(t, token)["alg"])
			assert.True(t, strings.HasSuffix(token, "."), "empty signature")
			_, err := jose.ParseSignedCompact(token, rs256)
			assert.Error(t, err)
		}},
		{testidp.ForgeHS256PublicKeyPEM, func(t *testing.T, token string) {
			assert.Equal(t, "HS256", header(t, token)["alg"])
			assert.Equal(t, kid, header(t, token)["kid"])
			assert.True(t, hs256(token, pemKey))
			assert.False(t, verifies(token))
			// A verifier that took the key's PEM as an HMAC secret would
			// accept it.
			jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.HS256})
			require.NoError(t, err)
			_, err = jws.Verify(pemKey)
			assert.NoError(t, err)
		}},
		{testidp.ForgeHS256PublicKeyDER, func(t *testing.T, token string) {
			assert.Equal(t, "HS256", header(t, token)["alg"])
			assert.True(t, hs256(token, der))
			assert.False(t, verifies(token))
		}},
		{testidp.ForgeUnknownKID, func(t *testing.T, token string) {
			h := header(t, token)
			assert.Equal(t, "RS256", h["alg"])
			assert.NotContains(t, kids(fetchJWKS(t, c, p)), h["kid"])
			assert.False(t, verifies(token))
			assert.Equal(t, h["kid"], header(t, p.Forge(t, testidp.ForgeUnknownKID, claims))["kid"], "one stranger key")
		}},
		{testidp.ForgeTamperedPayload, func(t *testing.T, token string) {
			assert.Equal(t, kid, header(t, token)["kid"])
			assert.False(t, verifies(token))
			// The signature is a genuine one of the claims plus
			// "testidp_original": true.
			original := maps.Clone(claims)
			original["testidp_original"] = true
			b, err := json.Marshal(original)
			require.NoError(t, err)
			parts := strings.Split(token, ".")
			assert.True(t, verifies(parts[0]+"."+base64.RawURLEncoding.EncodeToString(b)+"."+parts[2]))
		}},
		{testidp.ForgeTamperedSignature, func(t *testing.T, token string) {
			assert.Equal(t, kid, header(t, token)["kid"])
			assert.False(t, verifies(token))
		}},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			token := p.Forge(t, tc.kind, claims)
			assert.Len(t, strings.Split(token, "."), 3)
			assert.Equal(t, want, payload(t, token), "the payload is the claims")
			tc.check(t, token)
		})
	}
}

func TestUserinfoAndIntrospection(t *testing.T) {
	p := testidp.Start(t, testidp.Options{})
	c := httpClient(t)
	p.RegisterClient(testidp.Client{ID: publicClient, RedirectURIs: []string{"http://127.0.0.1/cb"}})
	p.RegisterClient(testidp.Client{ID: "rs", Secret: "rs-secret"})
	tok := p.LoginAs(t, testidp.Carol, publicClient, "http://127.0.0.1:9/cb", resourceMCP, "openid", "profile", "mcp:tools")

	req, err := http.NewRequest(http.MethodGet, p.Issuer()+"/userinfo", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := c.Do(req)
	require.NoError(t, err)
	var info map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, info)
	assert.Equal(t, testidp.Carol, info["sub"])
	assert.Equal(t, testidp.Carol, info["preferred_username"])
	assert.Equal(t, []any{testidp.AdminGroup}, info["groups"])

	status, body := postForm(t, c, p.Issuer()+"/oauth/introspect", url.Values{"token": {tok}}, "rs", "rs-secret")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, true, body["active"])
	assert.Equal(t, testidp.Carol, body["sub"])
	assert.Equal(t, "openid profile mcp:tools", body["scope"])
	assert.Equal(t, publicClient, body["client_id"])
	assert.ElementsMatch(t, []string{publicClient, resourceMCP}, audience(body))

	status, body = postForm(t, c, p.Issuer()+"/oauth/introspect", url.Values{"token": {p.Forge(t, testidp.ForgeTamperedSignature, p.Claims(testidp.Carol))}}, "rs", "rs-secret")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, false, body["active"])
}

// TestIndependentIdPs: two IdPs in one process share nothing.
func TestIndependentIdPs(t *testing.T) {
	a := testidp.Start(t, testidp.Options{})
	b := testidp.Start(t, testidp.Options{})
	c := httpClient(t)
	require.NotEqual(t, a.Issuer(), b.Issuer())
	a.RegisterClient(testidp.Client{ID: publicClient, RedirectURIs: []string{"http://127.0.0.1/a"}})
	b.RegisterClient(testidp.Client{ID: publicClient, RedirectURIs: []string{"http://127.0.0.1/b"}})
	b.SetLoginUser(testidp.Bob)

	ta := a.Login(t, publicClient, "http://127.0.0.1:3/a", "")
	tb := b.Login(t, publicClient, "http://127.0.0.1:3/b", "")
	ca, _ := verify(t, c, a, ta)
	cb, _ := verify(t, c, b, tb)
	assert.Equal(t, testidp.Alice, ca["sub"])
	assert.Equal(t, testidp.Bob, cb["sub"])
	assert.Equal(t, a.Issuer(), ca["iss"])
	assert.Equal(t, b.Issuer(), cb["iss"])
	kidA, _ := a.SigningKey()
	assert.NotContains(t, kids(fetchJWKS(t, c, b)), kidA)
	assert.True(t, slices.Contains(kids(fetchJWKS(t, c, a)), kidA))
	assert.Equal(t, int64(2), a.JWKSHits())
	assert.Equal(t, int64(2), b.JWKSHits())
}
