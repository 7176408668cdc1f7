package testidp

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
)

// Default users and the group of the default admin user.
const (
	Alice      = "alice"
	Bob        = "bob"
	Carol      = "carol" // member of AdminGroup
	AdminGroup = "mcpflow-admins"
)

// Grant types a Client may be registered with.
const (
	GrantAuthorizationCode = string(oidc.GrantTypeCode)          // "authorization_code"
	GrantTokenExchange     = string(oidc.GrantTypeTokenExchange) // "urn:ietf:params:oauth:grant-type:token-exchange"
)

// DefaultAccessTokenTTL is the lifetime of access (and ID) tokens when
// Options.AccessTokenTTL is zero.
const DefaultAccessTokenTTL = 5 * time.Minute

// loginPath is the OP's login page: it signs the user in without a form.
const loginPath = "/login"

// User is an end user of the IdP.
type User struct {
	// Name is the login name and the subject (sub) of the user's tokens.
	Name string
	// Groups go to a "groups" claim of the user's access tokens, and of
	// userinfo and introspection answers; none when empty.
	Groups []string
}

// Options configures Start. The zero value is ready to use.
type Options struct {
	// Users the IdP knows besides the defaults ("alice", "bob", "carol");
	// a user named like a default one replaces it.
	Users []User
	// AccessTokenTTL is the lifetime of access and ID tokens;
	// DefaultAccessTokenTTL when zero.
	AccessTokenTTL time.Duration
}

// Client is an OAuth client of the IdP.
type Client struct {
	// ID is the client_id.
	ID string
	// Secret makes the client confidential: it authenticates with
	// client_secret_basic or client_secret_post. Empty: a public client
	// (token_endpoint_auth_method none) that must use PKCE.
	Secret string
	// RedirectURIs are matched exactly, except that a loopback http URI
	// (127.0.0.1, [::1], localhost) matches on any port (RFC 8252,
	// section 7.3), so one registered as http://127.0.0.1/callback allows
	// http://127.0.0.1:PORT/callback.
	RedirectURIs []string
	// GrantTypes the client may use: GrantAuthorizationCode and
	// GrantTokenExchange. Default: GrantAuthorizationCode.
	GrantTypes []string
}

// IdP is a running OpenID provider. Its methods may be called from several
// goroutines.
type IdP struct {
	issuer    string
	provider  *op.Provider
	store     *storage
	jwksHits  atomic.Int64
	keysCache atomic.Pointer[string] // the JWKS's Cache-Control, nil: none
	transport *http.Transport
	client    *http.Client            // does not follow redirects
	stranger  func() (*rsaKey, error) // the key of ForgeUnknownKID
}

// Start starts an IdP on 127.0.0.1 with a free port and stops it with
// t.Cleanup. It has one RS256 signing key, the default users and no
// clients.
func Start(t testing.TB, opts Options) *IdP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testidp: listen: %v", err)
	}
	p := &IdP{issuer: "http://" + ln.Addr().String()}
	ttl := opts.AccessTokenTTL
	if ttl <= 0 {
		ttl = DefaultAccessTokenTTL
	}
	p.store, err = newStorage(p.issuer, ttl, opts.Users)
	if err != nil {
		_ = ln.Close()
		t.Fatalf("testidp: %v", err)
	}
	p.stranger = sync.OnceValues(newRSAKey)

	config := &op.Config{
		CodeMethodS256:  true,
		AuthMethodPost:  true,
		SupportedClaims: append(slices.Clone(op.DefaultSupportedClaims), "scope", "groups", "jti", "nbf"),
	}
	// The key that encrypts authorization codes; tokens are signed with
	// the storage's keys.
	if _, err := rand.Read(config.CryptoKey[:]); err != nil {
		_ = ln.Close()
		t.Fatalf("testidp: %v", err)
	}
	p.provider, err = op.NewProvider(config, p.store, op.StaticIssuer(p.issuer), op.WithAllowInsecure())
	if err != nil {
		_ = ln.Close()
		t.Fatalf("testidp: new provider: %v", err)
	}

	issuerCtx := op.NewIssuerInterceptor(p.provider.IssuerFromRequest)
	mux := http.NewServeMux()
	mux.Handle(loginPath, issuerCtx.HandlerFunc(p.login))
	mux.Handle("/.well-known/oauth-authorization-server", issuerCtx.HandlerFunc(p.authorizationServerMetadata))
	mux.Handle("/", p.intercept(p.provider))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()

	p.transport = http.DefaultTransport.(*http.Transport).Clone()
	p.client = &http.Client{
		Transport: p.transport,
		Timeout:   30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
		p.transport.CloseIdleConnections()
	})
	return p
}

// Issuer is the issuer URL, "http://127.0.0.1:PORT" (no trailing slash);
// discovery is at Issuer()+"/.well-known/openid-configuration".
func (p *IdP) Issuer() string { return p.issuer }

// RegisterClient adds a client, or replaces the one with its ID. It panics
// on an empty ID or an unsupported grant type.
func (p *IdP) RegisterClient(c Client) {
	if c.ID == "" {
		panic("testidp: RegisterClient: empty client ID")
	}
	if len(c.GrantTypes) == 0 {
		c.GrantTypes = []string{GrantAuthorizationCode}
	}
	for _, g := range c.GrantTypes {
		if g != GrantAuthorizationCode && g != GrantTokenExchange {
			panic("testidp: RegisterClient: unsupported grant type " + g)
		}
	}
	c.RedirectURIs = slices.Clone(c.RedirectURIs)
	c.GrantTypes = slices.Clone(c.GrantTypes)
	p.store.registerClient(c)
}

// SetLoginUser sets the user the login page signs in when the
// authorization request has no login_hint naming a known user (default
// "alice"). A login as an unknown user fails with 400 at the login page.
func (p *IdP) SetLoginUser(user string) { p.store.setLoginUser(user) }

// SetKeysCacheControl sets the Cache-Control header of the JWKS ("" for
// none, the default), e.g. "max-age=60", which tells a verifier how long it
// may use the keys before it fetches them again.
func (p *IdP) SetKeysCacheControl(v string) { p.keysCache.Store(&v) }

// JWKSHits is how many times the JWKS (GET Issuer()+"/keys") was fetched.
func (p *IdP) JWKSHits() int64 { return p.jwksHits.Load() }

// Login runs the authorization-code flow with PKCE (S256) over HTTP against
// this OP for the login user (SetLoginUser) and returns the access token:
// GET /authorize with resource (when not empty) and scopes (the IdP's
// default "openid" when none), the automatic login, the code taken from the
// redirect to redirectURI (nothing listens there), and POST /oauth/token
// with code_verifier and resource. A confidential client authenticates with
// its secret (HTTP Basic). Any failure fails t.
func (p *IdP) Login(t testing.TB, clientID, redirectURI, resource string, scopes ...string) (accessToken string) {
	t.Helper()
	return p.runLogin(t, "", clientID, redirectURI, resource, scopes)
}

// LoginAs is Login for the given known user (sent as login_hint), whatever
// SetLoginUser set.
func (p *IdP) LoginAs(t testing.TB, user, clientID, redirectURI, resource string, scopes ...string) (accessToken string) {
	t.Helper()
	if _, ok := p.store.user(user); !ok {
		t.Fatalf("testidp: LoginAs: unknown user %q", user)
	}
	return p.runLogin(t, user, clientID, redirectURI, resource, scopes)
}

func (p *IdP) runLogin(t testing.TB, user, clientID, redirectURI, resource string, scopes []string) string {
	t.Helper()
	client, ok := p.store.client(clientID)
	if !ok {
		t.Fatalf("testidp: Login: unknown client %q", clientID)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	verifier := oauth2.GenerateVerifier()
	state := rand.Text()
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {redirectURI},
		"state":                 {state},
		"code_challenge":        {oauth2.S256ChallengeFromVerifier(verifier)},
		"code_challenge_method": {"S256"},
	}
	if len(scopes) > 0 {
		q.Set("scope", strings.Join(scopes, " "))
	}
	if resource != "" {
		q.Set("resource", resource)
	}
	if user != "" {
		q.Set("login_hint", user)
	}
	code, err := p.followToRedirectURI(ctx, p.provider.AuthorizationEndpoint().Absolute(p.issuer)+"?"+q.Encode(), redirectURI, state)
	if err != nil {
		t.Fatalf("testidp: Login: %v", err)
	}

	cfg := oauth2.Config{
		ClientID:     clientID,
		ClientSecret: client.Secret,
		RedirectURL:  redirectURI,
		Endpoint: oauth2.Endpoint{
			AuthURL:   p.provider.AuthorizationEndpoint().Absolute(p.issuer),
			TokenURL:  p.provider.TokenEndpoint().Absolute(p.issuer),
			AuthStyle: oauth2.AuthStyleInParams,
		},
	}
	if client.Secret != "" {
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier)}
	if resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", resource))
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, p.client), code, opts...)
	if err != nil {
		t.Fatalf("testidp: Login: token request: %v", err)
	}
	if tok.AccessToken == "" {
		t.Fatal("testidp: Login: token response without access_token")
	}
	return tok.AccessToken
}

// followToRedirectURI GETs start and follows redirects until one goes to
// redirectURI, and returns that redirect's code after checking its state.
func (p *IdP) followToRedirectURI(ctx context.Context, start, redirectURI, state string) (string, error) {
	target, err := url.Parse(redirectURI)
	if err != nil {
		return "", err
	}
	next := start
	for range 10 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
		if err != nil {
			return "", err
		}
		resp, err := p.client.Do(req)
		if err != nil {
			return "", err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			return "", errors.New("GET " + req.URL.Path + ": " + resp.Status + ": " + strings.TrimSpace(string(body)))
		}
		if loc.Scheme == target.Scheme && loc.Host == target.Host && loc.Path == target.Path {
			got := loc.Query()
			if e := got.Get("error"); e != "" {
				return "", errors.New("authorization error " + e + ": " + got.Get("error_description"))
			}
			if got.Get("state") != state {
				return "", errors.New("redirect with state " + got.Get("state") + ", want " + state)
			}
			if got.Get("code") == "" {
				return "", errors.New("redirect without code: " + loc.String())
			}
			return got.Get("code"), nil
		}
		next = loc.String()
	}
	return "", errors.New("too many redirects")
}

// resourcesKey is the context key of the RFC 8707 resources of a request.
type resourcesKey struct{}

func resourcesFrom(ctx context.Context) []string {
	r, _ := ctx.Value(resourcesKey{}).([]string)
	return r
}

// intercept adds to the OP what it does not do itself: it counts JWKS
// fetches and sets their Cache-Control, gives an authorization request without scope the scope "openid",
// carries RFC 8707 resources of /authorize and of an authorization_code
// grant to the storage in the request context, makes the resources of a
// token exchange audiences, and lets a token exchange client authenticate
// in the form.
func (p *IdP) intercept(next http.Handler) http.Handler {
	keysPath := p.provider.KeysEndpoint().Relative()
	authorizePath := p.provider.AuthorizationEndpoint().Relative()
	tokenPath := p.provider.TokenEndpoint().Relative()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case keysPath:
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				p.jwksHits.Add(1)
			}
			if cc := p.keysCache.Load(); cc != nil && *cc != "" {
				w.Header().Set("Cache-Control", *cc)
			}
		case authorizePath:
			if r.ParseForm() != nil {
				break // the OP answers it
			}
			if r.Form.Get("scope") == "" && r.Form.Get("request") == "" {
				r.Form.Set("scope", oidc.ScopeOpenID)
			}
			resources := r.Form["resource"]
			if err := checkResources(resources); err != nil {
				op.RequestError(w, r, oidc.ErrInvalidTarget().WithDescription("%s", err.Error()), nil)
				return
			}
			if len(resources) > 0 {
				r = r.WithContext(context.WithValue(r.Context(), resourcesKey{}, slices.Clone(resources)))
			}
		case tokenPath:
			if r.Method != http.MethodPost || r.ParseForm() != nil {
				break
			}
			resources := r.PostForm["resource"]
			if err := checkResources(resources); err != nil {
				op.RequestError(w, r, oidc.ErrInvalidTarget().WithDescription("%s", err.Error()), nil)
				return
			}
			switch oidc.GrantType(r.PostForm.Get("grant_type")) {
			case oidc.GrantTypeCode:
				if len(resources) == 0 {
					break
				}
				if granted, ok := p.store.resourcesOfCode(r.PostForm.Get("code")); ok && len(granted) > 0 {
					for _, res := range resources {
						if !slices.Contains(granted, res) {
							op.RequestError(w, r, oidc.ErrInvalidTarget().WithDescription("resource %s was not requested at the authorization endpoint", res), nil)
							return
						}
					}
				}
				r = r.WithContext(context.WithValue(r.Context(), resourcesKey{}, slices.Clone(resources)))
			case oidc.GrantTypeTokenExchange:
				for _, res := range resources {
					if !slices.Contains(r.PostForm["audience"], res) {
						r.PostForm.Add("audience", res)
						r.Form.Add("audience", res)
					}
				}
				// zitadel's token exchange reads client credentials from
				// HTTP Basic only.
				if _, _, basic := r.BasicAuth(); !basic && r.PostForm.Get("client_id") != "" {
					r.SetBasicAuth(url.QueryEscape(r.PostForm.Get("client_id")), url.QueryEscape(r.PostForm.Get("client_secret")))
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkResources checks RFC 8707 resource indicators: absolute URIs
// without fragment.
func checkResources(resources []string) error {
	for _, res := range resources {
		u, err := url.Parse(res)
		if err != nil || !u.IsAbs() || u.Fragment != "" || strings.Contains(res, "#") {
			return errors.New("resource " + res + " is not an absolute URI without fragment")
		}
	}
	return nil
}

// login is the OP's login page: it signs in the user named by the
// request's login_hint when that is a known user, else the login user,
// and redirects to the OP's callback, which redirects to the client.
func (p *IdP) login(w http.ResponseWriter, r *http.Request) {
	id := r.FormValue("authRequestID")
	if err := p.store.completeLogin(id); err != nil {
		http.Error(w, "testidp login: "+err.Error(), http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, op.AuthCallbackURL(p.provider)(r.Context(), id), http.StatusFound)
}

// authorizationServerMetadata serves the OP's discovery document as RFC
// 8414 authorization server metadata.
func (p *IdP) authorizationServerMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	op.Discover(w, op.CreateDiscoveryConfig(r.Context(), p.provider, p.store))
}
