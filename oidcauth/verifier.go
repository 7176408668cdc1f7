package oidcauth

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpflow/mcpflow"
)

// defaultHTTPTimeout bounds a request to an identity provider when
// Options.HTTPClient is nil.
const defaultHTTPTimeout = 10 * time.Second

// Options are a Verifier's dependencies; zero fields take defaults.
type Options struct {
	// HTTPClient fetches discovery documents and key sets (default: a
	// client with a 10s timeout).
	HTTPClient *http.Client
	// Logger receives key-set failures and recoveries (warn/info) and
	// refused tokens (debug, provider and reason only). Default: discard.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Verifier checks access tokens of the configured identity providers; it
// implements mcpflow.TokenVerifier and is safe for concurrent use.
type Verifier struct {
	providers []*provider
	byIssuer  map[string]*provider
	opaque    *introspector // the provider opaque tokens are introspected at, nil: none
	cache     *tokenCache
	now       func() time.Time
	log       *slog.Logger
}

var _ mcpflow.TokenVerifier = (*Verifier)(nil)

// provider is a configured Provider ready to verify.
type provider struct {
	cfg          Provider
	keys         *keySet
	verifier     *oidc.IDTokenVerifier
	introspector *introspector // nil without introspection
}

// NewVerifier checks the providers' configuration and returns their
// Verifier. It does no I/O: each provider's discovery document and key set
// are read on first use, so a provider that is down does not stop
// mcpflow from starting (its tokens are unavailable until it is back).
// ctx only supplies values to those later requests; its cancellation is
// ignored.
func NewVerifier(ctx context.Context, providers []Provider, opts Options) (*Verifier, error) {
	if len(providers) == 0 {
		return nil, errors.New("oidc providers: none configured")
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: defaultHTTPTimeout}
	}
	if opts.HTTPClient.CheckRedirect == nil {
		c := *opts.HTTPClient
		c.CheckRedirect = secureRedirect
		opts.HTTPClient = &c
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	v := &Verifier{
		byIssuer: make(map[string]*provider),
		cache:    newTokenCache(cacheSize),
		now:      opts.Now,
		log:      opts.Logger,
	}
	names := make(map[string]bool)
	for i, cfg := range providers {
		cfg = cfg.withDefaults()
		if err := cfg.validate(); err != nil {
			if cfg.Name != "" {
				return nil, fmt.Errorf("oidc provider %q: %w", cfg.Name, err)
			}
			return nil, fmt.Errorf("oidc provider %d: %w", i, err)
		}
		if names[cfg.Name] {
			return nil, fmt.Errorf("oidc provider %q: name is used twice", cfg.Name)
		}
		if _, dup := v.byIssuer[cfg.Issuer]; dup {
			return nil, fmt.Errorf("oidc provider %q: issuer %q is used by another provider", cfg.Name, cfg.Issuer)
		}
		names[cfg.Name] = true
		p := newProvider(ctx, cfg, opts)
		v.providers = append(v.providers, p)
		v.byIssuer[cfg.Issuer] = p
		if p.introspector != nil {
			if v.opaque != nil {
				// An opaque token names no issuer: it would go to both.
				return nil, fmt.Errorf("oidc provider %q: introspection is configured for provider %q too: at most one provider may introspect tokens, since an opaque token does not say whose it is",
					cfg.Name, v.opaque.p.cfg.Name)
			}
			v.opaque = p.introspector
		}
	}
	for i, a := range v.providers {
		for j, b := range v.providers {
			if i != j && strings.HasPrefix(b.cfg.UserPrefix, a.cfg.UserPrefix) && !(a.cfg.ShareUserIDs && b.cfg.ShareUserIDs) &&
				(i > j || a.cfg.UserPrefix != b.cfg.UserPrefix) {
				return nil, fmt.Errorf("oidc provider %q: user prefix %q starts the user prefix %q of provider %q, so their users can have the same id: "+
					"give each a prefix that does not start another's, or set ShareUserIDs on both", a.cfg.Name, a.cfg.UserPrefix, b.cfg.UserPrefix, b.cfg.Name)
			}
		}
	}
	return v, nil
}

// Start logs each provider (name, issuer, audiences, user prefix, scopes,
// where its keys come from) and reads, in the background, its discovery
// document and key set, so a misconfiguration shows in the log at start,
// not at the first token: an issuer the discovery document does not name
// exactly (a trailing slash) is logged as an error naming both, an
// unreachable provider as a warning. It returns at once; the keys read are
// kept for the first tokens.
func (v *Verifier) Start(ctx context.Context) {
	for _, p := range v.providers {
		cfg := &p.cfg
		attrs := []slog.Attr{slog.String("provider", cfg.Name), slog.String("issuer", cfg.Issuer),
			slog.Any("audiences", cfg.Audiences), slog.String("user_prefix", cfg.UserPrefix),
			slog.Bool("share_user_ids", cfg.ShareUserIDs), slog.Any("required_scopes", cfg.RequiredScopes),
			slog.String("keys", cmp.Or(cfg.JWKSURL, "discovery")), slog.Duration("jwks_max_age", cfg.JWKSMaxAge)}
		if p.introspector != nil {
			// The client id, never the secret.
			attrs = append(attrs, slog.String("introspection", cmp.Or(cfg.IntrospectionURL, "discovery")), slog.String("introspection_client_id", cfg.IntrospectionClientID),
				slog.Bool("introspect_jwts", cfg.IntrospectJWTs))
		}
		v.log.LogAttrs(ctx, slog.LevelInfo, "identity provider configured", attrs...)
		go func() { _, _ = p.keys.refresh(context.WithoutCancel(ctx)) }()
	}
}

func newProvider(ctx context.Context, cfg Provider, opts Options) *provider {
	algs := make([]jose.SignatureAlgorithm, len(cfg.Algorithms))
	for i, a := range cfg.Algorithms {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	ks := &keySet{
		name:       cfg.Name,
		issuer:     cfg.Issuer,
		algs:       algs,
		client:     opts.HTTPClient,
		base:       context.WithoutCancel(ctx),
		now:        opts.Now,
		log:        opts.Logger,
		minRefresh: cfg.JWKSMinRefresh,
		maxAge:     cfg.JWKSMaxAge,
		retry:      min(cfg.JWKSMinRefresh, maxRetryInterval),
		jwksURL:    cfg.JWKSURL,
	}
	p := &provider{
		cfg:  cfg,
		keys: ks,
		verifier: oidc.NewVerifier(cfg.Issuer, ks, &oidc.Config{
			SkipClientIDCheck:    true, // the audience is checked per request
			SupportedSigningAlgs: slices.Clone(cfg.Algorithms),
			// go-oidc has no leeway on "exp" and a fixed one on "nbf":
			// check() checks both with the provider's skew.
			SkipExpiryCheck: true,
		}),
	}
	if cfg.IntrospectionClientID != "" {
		p.introspector = &introspector{p: p, client: opts.HTTPClient,
			clientID: cfg.IntrospectionClientID, secret: cfg.IntrospectionClientSecret, url: cfg.IntrospectionURL}
	}
	return p
}

// VerifyAccessToken implements mcpflow.TokenVerifier. It routes token to
// its provider by its (unverified) "iss", then checks its header type and
// algorithm, its signature with go-oidc against the provider's key set,
// its issuer, "exp", "nbf" and "iat" (with the provider's clock skew), its
// user claim, and last its audience: one of resources or of the
// provider's Audiences. Errors are *Error.
func (v *Verifier) VerifyAccessToken(ctx context.Context, token string, resources []string) (mcpflow.TokenIdentity, error) {
	key := sha256.Sum256([]byte(token))
	now := v.now()
	tok, ok := v.cache.get(key, now)
	if ok && tok.key != "" && !tok.provider.keys.trusted(ctx, tok.key) {
		// The key that verified it left the provider's key set (fetched
		// again once stale): verify again, which refuses it.
		v.cache.remove(key)
		ok = false
	}
	if !ok {
		var err error
		if tok, err = v.verify(ctx, token, now); err != nil {
			var e *Error
			if errors.As(err, &e) && e.Reason != "" {
				v.log.LogAttrs(ctx, slog.LevelDebug, "access token refused",
					slog.String("provider", e.Provider), slog.String("reason", e.Reason))
			}
			return mcpflow.TokenIdentity{}, err
		}
		until := now.Add(cacheTTL)
		if tok.introspected {
			until = now.Add(tok.provider.cfg.IntrospectionCacheTTL)
		}
		if exp := tok.identity.Expiry; !exp.IsZero() && exp.Before(until) {
			until = exp
		}
		if until.After(now) {
			v.cache.put(key, tok, until) // get drops it at until, before exp
		}
	}
	ok, viaResource := audienceAccepted(tok.audiences, resources, tok.provider.cfg.Audiences)
	reason := ""
	switch {
	case !ok:
		reason = ReasonAudience
	case !viaResource && !tok.scopeClaim:
		// An audience of Audiences may be a client id, which an ID token
		// of that client carries too (oidc-provider's have no at_hash,
		// c_hash or typ). An access token names its scopes; an ID token
		// never does.
		reason = ReasonTokenType
	}
	if reason != "" {
		v.log.LogAttrs(ctx, slog.LevelDebug, "access token refused",
			slog.String("provider", tok.provider.cfg.Name), slog.String("reason", reason))
		return mcpflow.TokenIdentity{}, invalid(tok.provider.cfg.Name, reason)
	}
	id := tok.identity
	id.Scopes = slices.Clone(id.Scopes)
	id.MissingScopes = slices.Clone(id.MissingScopes)
	return id, nil
}

// audienceAccepted reports whether one of aud is one of resources or of
// extra (exact match), and whether one is one of resources.
func audienceAccepted(aud, resources, extra []string) (ok, viaResource bool) {
	for _, a := range aud {
		if a == "" {
			continue
		}
		if slices.Contains(resources, a) {
			return true, true
		}
		if slices.Contains(extra, a) {
			ok = true
		}
	}
	return ok, false
}

// verify runs every check but the audience's.
func (v *Verifier) verify(ctx context.Context, token string, now time.Time) (verifiedToken, error) {
	h, unverified, signed, ok := splitToken(token)
	if !ok {
		if !isOpaqueToken(token) {
			return verifiedToken{}, invalid("", ReasonMalformed)
		}
		if v.opaque == nil {
			return verifiedToken{}, invalid("", ReasonNotJWT)
		}
		return v.opaque.introspect(ctx, token, now)
	}
	iss, ok := unverified.str("iss")
	if !ok {
		e := invalid("", ReasonIssuer)
		e.Detail = "the token names no issuer"
		return verifiedToken{}, e
	}
	p, ok := v.byIssuer[iss]
	if !ok {
		return verifiedToken{}, v.unknownIssuer(iss)
	}
	name := p.cfg.Name
	if p.cfg.IntrospectJWTs {
		// The provider's word, not its published keys (Okta's org
		// authorization server publishes none; Keycloak's lightweight
		// tokens carry their claims only through introspection).
		return p.introspector.introspect(ctx, token, now)
	}
	if !h.typeAccepted() {
		return verifiedToken{}, invalid(name, ReasonTokenType)
	}
	if !slices.Contains(p.cfg.Algorithms, h.Alg) {
		return verifiedToken{}, invalid(name, ReasonAlgorithm)
	}
	if !signed {
		return verifiedToken{}, invalid(name, ReasonMalformed)
	}
	if !unverified.has("exp") {
		return verifiedToken{}, invalid(name, ReasonMalformed)
	}

	st := &verifyState{}
	idt, err := p.verifier.Verify(context.WithValue(ctx, stateKey{}, st), token)
	if err != nil {
		switch {
		case st.unavailable != nil:
			return verifiedToken{}, unavailable(name, st.unavailable)
		case st.signature:
			return verifiedToken{}, invalid(name, ReasonSignature)
		case !st.verified:
			return verifiedToken{}, invalid(name, ReasonMalformed)
		}
		// Signed, but go-oidc refused a claim of the wrong type ("sub"
		// not a string). The claims are authentic, so ours name the
		// reason when they can.
		if _, err := p.checkClaims(unverified, now, true); err != nil {
			return verifiedToken{}, err
		}
		return verifiedToken{}, invalid(name, ReasonMalformed)
	}

	var raw json.RawMessage
	if err := idt.Claims(&raw); err != nil {
		return verifiedToken{}, invalid(name, ReasonMalformed)
	}
	c, err := parseClaims(raw)
	if err != nil {
		return verifiedToken{}, invalid(name, ReasonMalformed)
	}
	tok, err := p.checkClaims(c, now, true)
	tok.key = st.key
	return tok, err
}

// maxIssuerInLog bounds the token issuer an unknown-issuer error quotes.
const maxIssuerInLog = 200

// unknownIssuer is the error of a token naming an issuer no provider has:
// it names that issuer (an issuer is no secret; an absolute http(s) URL
// only, at most maxIssuerInLog bytes) and the configured ones, and says so
// when one differs only by a trailing slash or case.
func (v *Verifier) unknownIssuer(iss string) *Error {
	e := invalid("", ReasonIssuer)
	var configured []string
	for _, p := range v.providers {
		if hint := issuerHint(p.cfg.Issuer, iss); hint != "" && checkURL(iss) == nil {
			e.Provider = p.cfg.Name
			e.Detail = fmt.Sprintf("the token names issuer %q, the provider's configured issuer is %q%s", iss, p.cfg.Issuer, hint)
			return e
		}
		configured = append(configured, strconv.Quote(p.cfg.Issuer))
	}
	got := "an issuer that is not an http(s) URL"
	if u, err := url.Parse(iss); err == nil && len(iss) <= maxIssuerInLog && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		got = strconv.Quote(iss)
	}
	e.Detail = fmt.Sprintf("the token names %s, none of the configured issuers %s", got, strings.Join(configured, ", "))
	return e
}

// checkClaims runs the claim checks go-oidc does not, on a JWT's claims or
// an introspection answer's ("exp" optional: requireExp false), and maps
// them to an identity.
func (p *provider) checkClaims(c claimSet, now time.Time, requireExp bool) (verifiedToken, error) {
	cfg := &p.cfg
	exp, ok, err := c.time("exp")
	if err != nil || (!ok && requireExp) {
		return verifiedToken{}, invalid(cfg.Name, ReasonMalformed)
	}
	if ok && now.Add(-cfg.ClockSkew).After(exp) {
		return verifiedToken{}, invalid(cfg.Name, ReasonExpired)
	}
	for _, name := range []string{"nbf", "iat"} {
		t, ok, err := c.time(name)
		if err != nil {
			return verifiedToken{}, invalid(cfg.Name, ReasonMalformed)
		}
		if ok && t.After(now.Add(cfg.ClockSkew)) {
			return verifiedToken{}, invalid(cfg.Name, ReasonNotYetValid)
		}
	}
	aud, ok := c.audiences()
	if !ok {
		return verifiedToken{}, invalid(cfg.Name, ReasonAudience)
	}
	// An ID token is proof of a sign-in for a client, not an access token
	// for mcpflow, even when its audience (a client id) is accepted.
	if typ, _ := c.str("typ"); strings.EqualFold(typ, "ID") || c.has("at_hash") || c.has("c_hash") {
		return verifiedToken{}, invalid(cfg.Name, ReasonTokenType)
	}
	user, ok := c.str(cfg.UserClaim)
	if !ok || user == "" {
		return verifiedToken{}, invalid(cfg.Name, ReasonUserClaim)
	}

	id := mcpflow.TokenIdentity{
		UserID:     userID(cfg.UserPrefix, user),
		Provider:   cfg.Name,
		Scopes:     c.scopes(),
		AdminScope: cfg.AdminScope,
		Expiry:     exp,
		Claims:     c,
	}
	for _, s := range cfg.RequiredScopes {
		if !hasScope(id.Scopes, s) {
			id.MissingScopes = append(id.MissingScopes, s)
		}
	}
	switch {
	case cfg.AdminScope != "":
		id.Admin = hasScope(id.Scopes, cfg.AdminScope)
	case cfg.AdminClaim != "":
		vals, _ := c.strings(cfg.AdminClaim)
		id.Admin = slices.ContainsFunc(vals, func(s string) bool { return slices.Contains(cfg.AdminValues, s) })
	}
	return verifiedToken{provider: p, identity: id, audiences: aud, scopeClaim: c.has("scope") || c.has("scp")}, nil
}

// hasScope reports whether scopes hold s. A scope written as a URI with a
// path ("api://mcpflow/MCP.Use") is also held as its last segment
// ("MCP.Use"): Microsoft Entra ID has clients ask for the qualified name
// and puts the short one in "scp" of a token whose audience is that API
// (the audience is checked on its own).
func hasScope(scopes []string, s string) bool {
	if slices.Contains(scopes, s) {
		return true
	}
	if i := strings.LastIndexByte(s, '/'); i > 0 && i < len(s)-1 && strings.Contains(s[:i], "://") {
		return slices.Contains(scopes, s[i+1:])
	}
	return false
}

// secureRedirect follows a provider's redirect only to where keys may
// come from (https, or http on loopback), a few times at most.
func secureRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("too many redirects")
	}
	if !mcpflow.SecureURL(req.URL.String()) {
		return errors.New("redirect to a URL that is not https refused")
	}
	return nil
}
