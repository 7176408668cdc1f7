package testidp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the in-memory op.Storage of one IdP: users, clients,
// authorization requests and codes, issued access tokens and the signing
// keys. It also implements op.TokenExchangeStorage,
// op.CanSetUserinfoFromRequest and op.CanGetPrivateClaimsFromRequest.
type storage struct {
	issuer string
	ttl    time.Duration

	mu           sync.Mutex
	users        map[string]User
	clients      map[string]Client
	loginUser    string
	authRequests map[string]*authRequest
	codes        map[string]string // code -> auth request ID
	tokens       map[string]issuedToken
	keys         keyRing
}

var (
	_ op.Storage                        = (*storage)(nil)
	_ op.TokenExchangeStorage           = (*storage)(nil)
	_ op.CanSetUserinfoFromRequest      = (*storage)(nil)
	_ op.CanGetPrivateClaimsFromRequest = (*storage)(nil)
)

// issuedToken is an access token the OP issued, for userinfo,
// introspection and revocation.
type issuedToken struct {
	subject  string
	clientID string
	audience []string
	scopes   []string
	expires  time.Time
}

func newStorage(issuer string, ttl time.Duration, extra []User) (*storage, error) {
	key, err := newRSAKey()
	if err != nil {
		return nil, err
	}
	s := &storage{
		issuer:       issuer,
		ttl:          ttl,
		users:        map[string]User{},
		clients:      map[string]Client{},
		loginUser:    Alice,
		authRequests: map[string]*authRequest{},
		codes:        map[string]string{},
		tokens:       map[string]issuedToken{},
	}
	for _, u := range append([]User{{Name: Alice}, {Name: Bob}, {Name: Carol, Groups: []string{AdminGroup}}}, extra...) {
		u.Groups = slices.Clone(u.Groups)
		s.users[u.Name] = u
	}
	s.keys.add(key)
	return s, nil
}

func (s *storage) user(name string) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[name]
	return u, ok
}

func (s *storage) client(id string) (Client, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	return c, ok
}

func (s *storage) registerClient(c Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[c.ID] = c
}

func (s *storage) setLoginUser(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loginUser = name
}

// userClaims are the claims a user adds to tokens, userinfo and
// introspection: "groups" when the user has groups.
func (s *storage) userClaims(subject string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[subject]
	if !ok || len(u.Groups) == 0 {
		return nil
	}
	return map[string]any{"groups": slices.Clone(u.Groups)}
}

// completeLogin signs in the user of an authorization request: the one
// its login_hint names when known, else the login user.
func (s *storage) completeLogin(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	req, ok := s.authRequests[id]
	if !ok {
		return errors.New("unknown authorization request")
	}
	name := s.loginUser
	if _, known := s.users[req.loginHint]; known {
		name = req.loginHint
	}
	if _, known := s.users[name]; !known {
		return errors.New("unknown user " + name)
	}
	req.subject = name
	req.authTime = time.Now()
	req.done = true
	return nil
}

// resourcesOfCode are the resources the authorization request of an
// authorization code asked for.
func (s *storage) resourcesOfCode(code string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req, ok := s.authRequests[s.codes[code]]
	if !ok {
		return nil, false
	}
	return slices.Clone(req.resources), true
}

// authRequest is an authorization request; the OP gets copies, so it never
// sees one change.
type authRequest struct {
	id            string
	clientID      string
	redirectURI   string
	state         string
	nonce         string
	loginHint     string
	scopes        []string
	responseType  oidc.ResponseType
	responseMode  oidc.ResponseMode
	codeChallenge *oidc.CodeChallenge
	resources     []string // RFC 8707: audiences besides the client

	subject  string
	authTime time.Time
	done     bool
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string    { return a.id }
func (a *authRequest) GetACR() string   { return "" }
func (a *authRequest) GetAMR() []string { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string {
	aud := []string{a.clientID}
	for _, r := range a.resources {
		if !slices.Contains(aud, r) {
			aud = append(aud, r)
		}
	}
	return aud
}
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.codeChallenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

func (a *authRequest) copy() *authRequest {
	c := *a
	c.scopes = slices.Clone(a.scopes)
	c.resources = slices.Clone(a.resources)
	if a.codeChallenge != nil {
		cc := *a.codeChallenge
		c.codeChallenge = &cc
	}
	return &c
}

// CreateAuthRequest stores a validated authorization request with the
// resources the request context carries.
func (s *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if len(req.Prompt) == 1 && req.Prompt[0] == oidc.PromptNone {
		return nil, oidc.ErrLoginRequired() // there are no sessions
	}
	a := &authRequest{
		id:           rand.Text(),
		clientID:     req.ClientID,
		redirectURI:  req.RedirectURI,
		state:        req.State,
		nonce:        req.Nonce,
		loginHint:    req.LoginHint,
		scopes:       slices.Clone([]string(req.Scopes)),
		responseType: req.ResponseType,
		responseMode: req.ResponseMode,
		resources:    slices.Clone(resourcesFrom(ctx)),
	}
	if req.CodeChallenge != "" {
		a.codeChallenge = &oidc.CodeChallenge{Challenge: req.CodeChallenge, Method: req.CodeChallengeMethod}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authRequests[a.id] = a
	return a.copy(), nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authRequests[id]
	if !ok {
		return nil, errors.New("unknown authorization request")
	}
	return a.copy(), nil
}

// AuthRequestByCode returns the request of a code; resources in the
// context (those of the token request) replace the request's own, so the
// token's audience is the client and the resources asked for at the token
// endpoint.
func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authRequests[s.codes[code]]
	if !ok {
		return nil, errors.New("unknown or used code")
	}
	c := a.copy()
	if res := resourcesFrom(ctx); len(res) > 0 {
		c.resources = slices.Clone(res)
	}
	return c, nil
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.authRequests[id]; !ok {
		return errors.New("unknown authorization request")
	}
	s.codes[code] = id
	return nil
}

func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.authRequests, id)
	for code, reqID := range s.codes {
		if reqID == id {
			delete(s.codes, code)
		}
	}
	return nil
}

// CreateAccessToken records an access token; the OP makes the JWT with the
// returned ID as jti.
func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	var clientID string
	if c, ok := req.(interface{ GetClientID() string }); ok {
		clientID = c.GetClientID()
	}
	id := rand.Text()
	exp := time.Now().Add(s.ttl)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[id] = issuedToken{
		subject:  req.GetSubject(),
		clientID: clientID,
		audience: slices.Clone(req.GetAudience()),
		scopes:   slices.Clone(req.GetScopes()),
		expires:  exp,
	}
	return id, exp, nil
}

var errNoRefreshTokens = errors.New("testidp issues no refresh tokens")

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errNoRefreshTokens
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errNoRefreshTokens
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

// RevokeToken forgets an access token (userinfo and introspection then
// refuse it; its JWT stays valid until it expires).
func (s *storage) RevokeToken(_ context.Context, tokenOrID, _, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, ok := s.tokens[tokenOrID]
	if !ok {
		return nil
	}
	if tok.clientID != clientID {
		return oidc.ErrInvalidClient().WithDescription("token was not issued to this client")
	}
	delete(s.tokens, tokenOrID)
	return nil
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys.signing()
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys.keySet(), nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	c, ok := s.client(id)
	if !ok {
		return nil, errors.New("unknown client " + id)
	}
	return &opClient{c: c, issuer: s.issuer, ttl: s.ttl}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	c, ok := s.client(id)
	if !ok || c.Secret == "" || subtle.ConstantTimeCompare([]byte(c.Secret), []byte(secret)) != 1 {
		return errors.New("invalid client_id or client_secret")
	}
	return nil
}

// SetUserinfoFromScopes is deprecated in op; SetUserinfoFromRequest does
// the work.
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest fills the ID token's user claims.
func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	s.setUserinfo(info, req.GetSubject(), scopes)
	return nil
}

func (s *storage) setUserinfo(info *oidc.UserInfo, subject string, scopes []string) {
	info.Subject = subject
	if slices.Contains(scopes, oidc.ScopeProfile) {
		info.PreferredUsername = subject
	}
	for k, v := range s.userClaims(subject) {
		info.AppendClaims(k, v)
	}
}

// token is an issued access token that is still valid.
func (s *storage) token(id string) (issuedToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, ok := s.tokens[id]
	if !ok || time.Now().After(tok.expires) {
		return issuedToken{}, errors.New("token is unknown, revoked or expired")
	}
	return tok, nil
}

func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, _, _ string) error {
	tok, err := s.token(tokenID)
	if err != nil {
		return err
	}
	s.setUserinfo(info, tok.subject, tok.scopes)
	return nil
}

func (s *storage) SetIntrospectionFromToken(_ context.Context, resp *oidc.IntrospectionResponse, tokenID, _, _ string) error {
	tok, err := s.token(tokenID)
	if err != nil {
		return err
	}
	info := new(oidc.UserInfo)
	s.setUserinfo(info, tok.subject, tok.scopes)
	resp.SetUserInfo(info)
	resp.Username = tok.subject
	resp.Scope = tok.scopes
	resp.ClientID = tok.clientID
	resp.Audience = tok.audience
	resp.Expiration = oidc.FromTime(tok.expires)
	resp.Issuer = s.issuer
	resp.JWTID = tokenID
	resp.TokenType = oidc.BearerToken
	return nil
}

// accessTokenClaims are the private claims of an access token: scope
// (space delimited, all granted scopes) and the user's claims.
func (s *storage) accessTokenClaims(subject string, scopes []string) map[string]any {
	claims := s.userClaims(subject)
	if claims == nil {
		claims = map[string]any{}
	}
	if len(scopes) > 0 {
		claims["scope"] = strings.Join(scopes, " ")
	}
	return claims
}

func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, userID, _ string, scopes []string) (map[string]any, error) {
	return s.accessTokenClaims(userID, scopes), nil
}

func (s *storage) GetPrivateClaimsFromRequest(_ context.Context, req op.TokenRequest, _ []string) (map[string]any, error) {
	return s.accessTokenClaims(req.GetSubject(), req.GetScopes()), nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("testidp has no JWT profile clients")
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("testidp has no JWT profile clients")
}

func (s *storage) Health(context.Context) error { return nil }

// ValidateTokenExchangeRequest lets a client registered with
// GrantTokenExchange exchange a token of this OP for an access token. The
// scopes default to the subject token's; asked-for scopes must be among
// them.
func (s *storage) ValidateTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) error {
	c, ok := s.client(req.GetClientID())
	if !ok || !slices.Contains(c.GrantTypes, GrantTokenExchange) {
		return oidc.ErrUnauthorizedClient().WithDescription("client is not allowed the token exchange grant")
	}
	switch req.GetRequestedTokenType() {
	case "":
		req.SetRequestedTokenType(oidc.AccessTokenType)
	case oidc.AccessTokenType:
	default:
		return oidc.ErrInvalidRequest().WithDescription("only access tokens are issued by token exchange")
	}
	var have []string
	if sc, ok := req.GetExchangeSubjectTokenClaims()["scope"].(string); ok {
		have = strings.Fields(sc)
	}
	want := req.GetScopes()
	if len(want) == 0 {
		req.SetCurrentScopes(have)
		return nil
	}
	if have != nil {
		for _, sc := range want {
			if !slices.Contains(have, sc) {
				return oidc.ErrInvalidScope().WithDescription("scope %s is not in the subject token", sc)
			}
		}
	}
	return nil
}

func (s *storage) CreateTokenExchangeRequest(context.Context, op.TokenExchangeRequest) error {
	return nil
}

// GetPrivateClaimsFromTokenExchangeRequest: scope and the user's claims as
// for any access token, and "act" naming the actor when there was an actor
// token.
func (s *storage) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) (map[string]any, error) {
	claims := s.accessTokenClaims(req.GetSubject(), req.GetScopes())
	if actor := req.GetExchangeActor(); actor != "" {
		claims["act"] = map[string]any{"sub": actor}
	}
	return claims, nil
}

func (s *storage) SetUserinfoFromTokenExchangeRequest(_ context.Context, info *oidc.UserInfo, req op.TokenExchangeRequest) error {
	s.setUserinfo(info, req.GetSubject(), req.GetScopes())
	return nil
}

// opClient is a Client as op sees it: native (so loopback redirect URIs
// match on any port), JWT access tokens, every scope allowed.
type opClient struct {
	c      Client
	issuer string
	ttl    time.Duration
}

var _ op.Client = (*opClient)(nil)

func (c *opClient) GetID() string                    { return c.c.ID }
func (c *opClient) RedirectURIs() []string           { return c.c.RedirectURIs }
func (c *opClient) PostLogoutRedirectURIs() []string { return nil }
func (c *opClient) ApplicationType() op.ApplicationType {
	return op.ApplicationTypeNative
}
func (c *opClient) AuthMethod() oidc.AuthMethod {
	if c.c.Secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic // op then also accepts the secret in the form
}
func (c *opClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *opClient) GrantTypes() []oidc.GrantType {
	g := make([]oidc.GrantType, len(c.c.GrantTypes))
	for i, t := range c.c.GrantTypes {
		g[i] = oidc.GrantType(t)
	}
	return g
}
func (c *opClient) LoginURL(id string) string {
	return c.issuer + loginPath + "?authRequestID=" + url.QueryEscape(id)
}
func (c *opClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (c *opClient) IDTokenLifetime() time.Duration      { return c.ttl }
func (c *opClient) DevMode() bool                       { return false }
func (c *opClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *opClient) IsScopeAllowed(string) bool           { return true }
func (c *opClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *opClient) ClockSkew() time.Duration             { return 0 }
