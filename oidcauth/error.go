package oidcauth

import (
	"fmt"

	"github.com/mcpflow/mcpflow"
)

// Reasons a token is refused, the Reason of an Error wrapping
// mcpflow.ErrInvalidToken. They name the check that failed, never a value
// taken from the token.
const (
	ReasonMalformed   = "malformed"                                 // not a compact JWS with JSON header and claims, or a claim of the wrong type
	ReasonTokenType   = "token type"                                // header "typ" is not JWT, at+jwt or application/at+jwt, or the token is an ID token
	ReasonAlgorithm   = "algorithm"                                 // header "alg" is not one of the provider's algorithms
	ReasonIssuer      = "issuer"                                    // "iss" names no configured provider
	ReasonSignature   = "signature"                                 // no key of the provider verifies the signature
	ReasonExpired     = "expired"                                   // "exp" is past by more than the clock skew
	ReasonNotYetValid = "not yet valid"                             // "nbf" or "iat" is ahead by more than the clock skew
	ReasonAudience    = "audience"                                  // "aud" names none of the request's resources nor the provider's audiences
	ReasonUserClaim   = "user claim"                                // the user claim is missing, empty or not a string
	ReasonNotJWT      = "not a JWT and no introspection configured" // an opaque token, and no provider introspects
	ReasonInactive    = "inactive"                                  // the provider's introspection endpoint says the token is not active
)

// Error is a refused or unchecked token. It wraps mcpflow.ErrInvalidToken
// (Reason says which check failed) or mcpflow.ErrTokenProviderUnavailable
// (Cause says why the provider's keys could not be fetched). Its text
// carries neither the token nor its claims.
type Error struct {
	// Provider is the configured name of the provider the token names,
	// "" when none does.
	Provider string
	// Reason is one of the Reason constants (invalid tokens only).
	Reason string
	// Cause is why the provider is unavailable (unavailable only): a
	// network error or a bad answer of the identity provider.
	Cause error
	// Detail says more of an invalid token for the operator, never a
	// secret: for ReasonIssuer, the token's issuer and the configured
	// ones.
	Detail string

	sentinel error
}

func invalid(provider, reason string) *Error {
	return &Error{Provider: provider, Reason: reason, sentinel: mcpflow.ErrInvalidToken}
}

func unavailable(provider string, cause error) *Error {
	return &Error{Provider: provider, Cause: cause, sentinel: mcpflow.ErrTokenProviderUnavailable}
}

// Error renders "invalid access token: expired (provider kc)" or
// "identity provider unavailable: provider kc: <cause>".
func (e *Error) Error() string {
	if e.sentinel == mcpflow.ErrTokenProviderUnavailable {
		if e.Cause == nil {
			return fmt.Sprintf("%v: provider %s", e.sentinel, e.Provider)
		}
		return fmt.Sprintf("%v: provider %s: %v", e.sentinel, e.Provider, e.Cause)
	}
	msg := fmt.Sprintf("%v: %s", e.sentinel, e.Reason)
	if e.Provider != "" {
		msg += " (provider " + e.Provider + ")"
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns mcpflow.ErrInvalidToken or
// mcpflow.ErrTokenProviderUnavailable, and the Cause if any.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.Cause}
}
