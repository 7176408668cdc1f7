package credential

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/lru"
)

// Token exchange (RFC 8693) as an upstream credential.
//
// A server whose oauth block has grant_type config.GrantTokenExchange gets,
// on every call made for a caller signed in with an identity provider, a
// token exchanged from that caller's access token (mcpflow.CallerToken) at
// the block's token_url: grant_type token-exchange, the caller's token as
// subject_token (an access token), an access token requested, the block's
// audience, scope and extra_token_params (e.g. resource), and its
// client_id/client_secret as client authentication in the form. The
// exchanged token is sent as "Authorization: <token_type> <access_token>"
// in the OAuth layer of the header precedence (static < OAuth < user_auth
// < headers_from_context).
//
// The caller's own token is never sent upstream: it only ever goes to the
// token endpoint, as subject_token, and an exchange answering it back is
// refused. It is never a cache key, never logged and never in an error.
//
// Such a server is never reached without a caller: each user has a
// session of their own with it (shared.go), whose initialize and other own
// requests carry the token exchanged for that user's latest signed-in
// call, and its tools are listed per user with that user's token
// (caller_tools.go).
//
// Calls without a caller token get no exchanged token: a request-scoped
// call (WithSecrets: an agent's tool call, the submit of a tool whose
// taskSupport is "required") is refused with a *CredentialError; a durable
// poll carries no Authorization header from the OAuth layer, and the
// runtime logs that once per server. Durable task activities run without a
// caller token, so config refuses task_toolsets and native_tasks on such
// servers.

const (
	// tokenTypeAccessToken is RFC 8693's token type of an access token, the
	// type of the subject token and of the requested token.
	tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	// exchangeCacheSize bounds the exchanged tokens a process keeps.
	exchangeCacheSize = 1024
)

// errNoCallerToken is a token-exchange header asked for without a caller
// token in the context.
var errNoCallerToken = errors.New("no caller token to exchange")

// tokenExchanges caches exchanged tokens per (server, version of its oauth
// block, caller token), least recently used first out beyond
// exchangeCacheSize. Concurrent calls for one key share one exchange.
type tokenExchanges struct {
	mu      sync.Mutex
	entries *lru.Cache[exchangeKey, exchanged] // nil until the first exchange
	flight  singleflight.Group                 // the exchanges in flight, by string(key)
	warned  sync.Map                           // server name → struct{}: the no-caller warning was logged
}

// exchangeKey is the SHA-256 of a server name, the fingerprint of its oauth
// block and the SHA-256 of the subject token: the token is never kept.
type exchangeKey [sha256.Size]byte

func newExchangeKey(server string, cfg *config.OAuth, subject string) exchangeKey {
	st := sha256.Sum256([]byte(subject))
	h := sha256.New()
	h.Write([]byte(server))
	h.Write([]byte{0})
	h.Write([]byte(oauthFingerprint(cfg)))
	h.Write([]byte{0})
	h.Write(st[:])
	var k exchangeKey
	h.Sum(k[:0])
	return k
}

// exchanged is the outcome of one successful exchange.
type exchanged struct {
	value string    // the Authorization header value
	renew time.Time // when value is due for a new exchange
}

// cached returns key's exchanged token while it is not due for renewal.
func (x *tokenExchanges) cached(key exchangeKey) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.entries == nil {
		x.entries = lru.New[exchangeKey, exchanged](exchangeCacheSize)
	}
	e, ok := x.entries.Get(key)
	return e.value, ok && time.Now().Before(e.renew)
}

// header returns the Authorization header value for server's calls made
// for the caller whose access token is subject: a cached exchanged token
// until refresh_skew_seconds before it expires, else the result of a new
// exchange (shared with concurrent callers of the same key; a failure is
// not cached). The exchange runs on its own, bounded by
// oauthRequestTimeout: a caller whose ctx ends stops waiting without
// cancelling it for the others.
func (x *tokenExchanges) header(ctx context.Context, client *http.Client, server string, cfg *config.OAuth, subject string) (string, error) {
	key := newExchangeKey(server, cfg, subject)
	if v, ok := x.cached(key); ok {
		return v, nil
	}
	c := *cfg
	ch := x.flight.DoChan(string(key[:]), func() (any, error) {
		if v, ok := x.cached(key); ok { // exchanged while this call looked
			return v, nil
		}
		v, renew, err := exchangeToken(client, server, &c, subject)
		if err == nil {
			x.mu.Lock()
			x.entries.Add(key, exchanged{value: v, renew: renew})
			x.mu.Unlock()
		}
		return v, err
	})
	select {
	case r := <-ch:
		v, _ := r.Val.(string)
		return v, r.Err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// warnOnce reports whether the no-caller warning of server is still to be
// logged, and marks it logged.
func (x *tokenExchanges) warnOnce(server string) bool {
	_, logged := x.warned.LoadOrStore(server, struct{}{})
	return !logged
}

// exchangeToken exchanges subject at cfg's token endpoint (RFC 8693 §2.1)
// and returns the Authorization header value and when it is due for a new
// exchange. The request and the reading of its answer are the other
// grants' (requestToken); the form is extra_token_params, then the
// reserved fields, which always win, with client_id/client_secret as
// client authentication when set.
func exchangeToken(client *http.Client, server string, cfg *config.OAuth, subject string) (string, time.Time, error) {
	form := url.Values{}
	for k, v := range cfg.ExtraTokenParams {
		form.Set(k, v)
	}
	form.Set("grant_type", config.GrantTokenExchange)
	form.Set("subject_token", subject)
	form.Set("subject_token_type", tokenTypeAccessToken)
	form.Set("requested_token_type", tokenTypeAccessToken)
	for k, v := range map[string]string{"audience": cfg.Audience, "scope": cfg.Scope, "client_id": cfg.ClientID, "client_secret": cfg.ClientSecret} {
		if v != "" {
			form.Set(k, v)
		} else {
			form.Del(k)
		}
	}
	ans, err := requestToken(client, cfg, form)
	if err != nil {
		return "", time.Time{}, exchangeError(server, err)
	}
	if ans.access == subject {
		return "", time.Time{}, exchangeFail(server, "the token endpoint answered with the caller's own token, which is never passed through", nil)
	}
	skew := time.Duration(max(cfg.RefreshSkewSeconds, 0)) * time.Second
	return ans.typ + " " + ans.access, ans.expiry.Add(-skew), nil
}

// exchangeError turns a failed exchange into what the call answers: a
// refusal by the token endpoint (HTTP 4xx) is a *CredentialError naming the
// server and the endpoint's error code; an endpoint that is down, slow or
// broken is an upstream failure. Neither carries a token, the client
// secret, the endpoint's error_description or its body.
func exchangeError(server string, err error) error {
	var r *tokenRefusal
	if !errors.As(err, &r) {
		return exchangeFail(server, tokenFailure(err), errors.Unwrap(err))
	}
	if r.status < 400 || r.status > 499 {
		return exchangeFail(server, r.Error(), nil)
	}
	msg := fmt.Sprintf("MCP server '%s' could not get a credential for this call: the token endpoint refused the token exchange (RFC 8693) with HTTP %d", server, r.status)
	if r.code != "" {
		msg += fmt.Sprintf(", error '%s'", r.code)
	}
	return &CredentialError{Message: msg + "."}
}

// exchangeFail is an upstream failure of server's token exchange.
func exchangeFail(server, msg string, cause error) error {
	return &mcpflow.Error{Code: mcpflow.EUpstream, Err: cause,
		Message: fmt.Sprintf("MCP server '%s' token exchange (RFC 8693) failed: %s", server, msg)}
}
