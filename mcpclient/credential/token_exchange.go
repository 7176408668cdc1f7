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

// Token exchange (RFC 8693) as an upstream credential: a server whose
// oauth block has grant_type config.GrantTokenExchange gets, in the OAuth
// layer, a token exchanged at token_url from the access token of the
// caller signed in with an identity provider (mcpflow.CallerToken).
//
// The caller's own token only ever goes to the token endpoint, as
// subject_token (an exchange answering it back is refused); it is never a
// cache key, logged or in an error.
//
// Such a server has one session per user (in mcpclient). A request-scoped
// call (WithSecrets) without a caller token is refused with a
// *CredentialError; a durable poll carries no OAuth header, and config
// refuses task_toolsets and native_tasks on such servers.

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

// header returns the Authorization value for the caller whose token is
// subject: a cached exchanged token until refresh_skew_seconds before it
// expires, else a new exchange shared with concurrent callers (failures
// not cached), which a caller's ctx stops waiting for, not cancels.
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
// with requestToken and returns the Authorization value and when it is due
// again; reserved form fields win over extra_token_params.
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

// exchangeError: a 4xx refusal is a *CredentialError naming the server and
// the error code, anything else an upstream failure; neither carries a
// token, secret, error_description or body.
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
