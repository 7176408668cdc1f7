package credential

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
)

// requestKey carries a call's request-scoped credentials in its context.
type requestKey struct{}

// requestCreds are the request-scoped inputs of one call.
type requestCreds struct {
	secrets map[string]string
}

// WithSecrets marks ctx as a request-scoped call carrying the secrets for
// headers_from_context (a missing one is denied unless the server passes
// through); a call without it (a durable poll) gets no request headers.
func WithSecrets(ctx context.Context, secrets map[string]string) context.Context {
	return context.WithValue(ctx, requestKey{}, &requestCreds{secrets: secrets})
}

// callHeadersKey carries the credential headers computed for one call to
// the session's per-request header function.
type callHeadersKey struct{}

// WithCallHeaders returns ctx carrying the headers Headers computed for
// the call in flight, which ConnHeaders hands its session.
func WithCallHeaders(ctx context.Context, headers map[string]string) context.Context {
	return context.WithValue(ctx, callHeadersKey{}, headers)
}

// CallHeaders returns the headers WithCallHeaders put in ctx, if any.
func CallHeaders(ctx context.Context) (map[string]string, bool) {
	h, ok := ctx.Value(callHeadersKey{}).(map[string]string)
	return h, ok
}

// Cache is the process's upstream credentials: one OAuth token source per
// server and the tokens exchanged per caller, shared by discovery, calls
// and task activities (a rotating refresh token is never used twice).
type Cache struct {
	tokens oauthTokens
	log    *slog.Logger
}

// NewCache returns an empty cache that logs to log.
func NewCache(log *slog.Logger) *Cache { return &Cache{log: log} }

// CredentialError is a call refused inside the tool layer: a user_auth or
// headers_from_context denial, or an illegal credential value. Its message
// names users, servers and secret keys, never a value. An agent's call
// answers it as a tool error (200, is_error).
type CredentialError struct{ Message string }

func (e *CredentialError) Error() string { return e.Message }

// Headers returns the headers an SSE/HTTP call to srv for userID carries
// over the static ones, and own, those of the layers that are not
// request-scoped (what a per-caller session's own requests carry).
func (c *Cache) Headers(ctx context.Context, srv *config.Server, userID string) (call, own map[string]string, err error) {
	var out map[string]string // nil while there is none: most calls carry none
	rc, _ := ctx.Value(requestKey{}).(*requestCreds)
	oauth, err := c.tokens.header(ctx, srv)
	if errors.Is(err, errNoCallerToken) {
		if rc != nil {
			return nil, nil, NoCallerError(srv)
		}
		c.warnNoCaller(srv)
		oauth, err = "", nil
	}
	if err != nil {
		return nil, nil, err
	}
	if oauth != "" {
		out = MergeHeaders(out, map[string]string{"Authorization": oauth})
	}
	if ua := srv.UserAuth; ua != nil && ua.Enabled {
		cred := ua.Users[userID]
		switch {
		case cred != "":
			if err := config.CheckHeaderValue(cred); err != nil {
				return nil, nil, &CredentialError{fmt.Sprintf("The credential configured for user id '%s' on MCP server '%s' %s; fix it in that server's user_auth.users.", userID, srv.Name, err)}
			}
			out = MergeHeaders(out, map[string]string{ua.Header: cred})
		case ua.OnMissing != config.OnMissingPassthrough:
			return nil, nil, &CredentialError{fmt.Sprintf("No credential is configured for your account (user id '%s') on MCP server '%s'. Ask the operator to add this exact id to that server's user_auth.users map (or set its environment variable).", userID, srv.Name)}
		}
	}
	own = out
	if hc := srv.HeadersFromContext; hc != nil && hc.Enabled && rc != nil {
		var missing []string
		set := map[string]string{}
		for _, name := range slices.Sorted(maps.Keys(hc.Headers)) {
			key := hc.Headers[name]
			v := rc.secrets[key]
			if v == "" {
				missing = append(missing, key)
				continue
			}
			if err := config.CheckHeaderValue(v); err != nil {
				return nil, nil, &CredentialError{fmt.Sprintf("The request-scoped credential '%s' for MCP server '%s' %s.", key, srv.Name, err)}
			}
			set[name] = v
		}
		if len(missing) > 0 && hc.OnMissing != config.OnMissingPassthrough {
			slices.Sort(missing)
			missing = slices.Compact(missing)
			return nil, nil, &CredentialError{fmt.Sprintf("MCP server '%s' needs request-scoped credential(s) %s. Send them in the call's secrets, or set this server's headers_from_context.on_missing to 'passthrough'.", srv.Name, strings.Join(missing, ", "))}
		}
		out = MergeHeaders(out, set)
	}
	return out, own, nil
}

// NoCallerError refuses a call of srv, whose credential is exchanged per
// caller, made without a caller signed in with an identity provider.
func NoCallerError(srv *config.Server) error {
	return &CredentialError{fmt.Sprintf("MCP server '%s' needs a caller signed in with the identity provider: its credential is exchanged from the caller's token (RFC 8693), which only a tool call has while the caller's request is open (a durable task's steps run without it).", srv.Name)}
}

// StdioMeta returns the _meta of a pooled stdio call: {"headers": {...}}
// with the OAuth header when the server has an oauth block, nil otherwise.
func (c *Cache) StdioMeta(srv *config.Server) (map[string]any, error) {
	if ExchangesToken(srv) {
		// Refused when the config is loaded; never sent unauthenticated.
		return nil, &CredentialError{fmt.Sprintf("MCP server '%s' exchanges its credential per caller (RFC 8693 token exchange), which only sse/http servers support.", srv.Name)}
	}
	oauth, err := c.tokens.header(context.Background(), srv) // no caller token is read: not a token-exchange block
	if err != nil || oauth == "" {
		return nil, err
	}
	return map[string]any{"headers": map[string]any{"Authorization": oauth}}, nil
}

// ConnHeaders is the header function of srv's shared session: the call's
// headers, or outside a call the OAuth header alone (left out when it
// cannot be fetched: the server answers the unauthenticated request).
func (c *Cache) ConnHeaders(srv *config.Server) func(context.Context) map[string]string {
	return func(ctx context.Context) map[string]string {
		if h, ok := CallHeaders(ctx); ok {
			return h
		}
		if ExchangesToken(srv) {
			return nil // not reached: such a server's sessions are per user
		}
		v, err := c.tokens.header(ctx, srv)
		if err != nil {
			c.log.Warn("MCP server's OAuth token is unavailable; connecting without it", "server", srv.Name, "error", mcpflow.ErrorMessage(err))
			return nil
		}
		if v == "" {
			return nil
		}
		return map[string]string{"Authorization": v}
	}
}

// warnNoCaller logs, once per server, that requests to srv without a
// signed-in caller go without its exchanged credential.
func (c *Cache) warnNoCaller(srv *config.Server) {
	if c.tokens.exchanges.warnOnce(srv.Name) {
		c.log.Warn("MCP server's OAuth credential is exchanged per signed-in caller (RFC 8693); requests without one (durable polls) carry no OAuth Authorization header", "server", srv.Name)
	}
}

// MergeHeaders returns base with over applied: a name in over replaces every
// name of base equal to it ignoring case, under base's spelling when base
// had it. Neither map is changed.
func MergeHeaders(base, over map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	if len(over) == 0 {
		return out
	}
	for _, name := range slices.Sorted(maps.Keys(over)) {
		key := name
		for existing := range out {
			if strings.EqualFold(existing, name) {
				key = existing
				break
			}
		}
		for existing := range out {
			if existing != key && strings.EqualFold(existing, name) {
				delete(out, existing)
			}
		}
		out[key] = over[name]
	}
	return out
}
