package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/mcpflow/mcpflow"
)

// Principal is the authenticated caller of a request.
type Principal struct {
	UserID string // set for user tokens
	Admin  bool   // set for admin tokens
	// TokenID names an admin's token in audit logs without revealing it:
	// "sha256:" and the first 12 hex digits of its digest, or
	// "oidc:<provider>:<user id>" for an identity provider's token.
	TokenID string
	// Provider names the identity provider of a caller who signed in with
	// one ("" for a static token); such a caller can be a user and an
	// admin at once.
	Provider string
	// AdminScope is the scope that would make the caller an admin ("" when
	// the provider makes admins from a claim).
	AdminScope string
}

// UserToken maps one user id to its token, given in plain text or as the
// hex SHA-256 digest of the token.
type UserToken struct {
	UserID      string
	Token       string
	TokenSHA256 string
}

// AuthConfig lists the accepted bearer tokens.
type AuthConfig struct {
	AdminTokens      []string
	AdminTokenSHA256 []string
	Users            []UserToken
}

type credential struct {
	digest [sha256.Size]byte
	p      Principal
}

// Authenticator checks bearer tokens. Tokens are kept only as SHA-256
// digests and compared in constant time against every known digest.
type Authenticator struct {
	creds []credential
}

// NewAuthenticator builds an Authenticator. It fails on an empty token or a
// malformed digest; the error never contains a token.
func NewAuthenticator(cfg AuthConfig) (*Authenticator, error) {
	a := &Authenticator{}
	for i, t := range cfg.AdminTokens {
		if t == "" {
			return nil, fmt.Errorf("auth.admin_tokens[%d]: must not be empty", i)
		}
		d := sha256.Sum256([]byte(t))
		a.creds = append(a.creds, credential{digest: d, p: Principal{Admin: true, TokenID: tokenID(d)}})
	}
	for i, h := range cfg.AdminTokenSHA256 {
		d, err := parseDigest(h)
		if err != nil {
			return nil, fmt.Errorf("auth.admin_token_sha256[%d]: %w", i, err)
		}
		a.creds = append(a.creds, credential{digest: d, p: Principal{Admin: true, TokenID: tokenID(d)}})
	}
	for i, u := range cfg.Users {
		if err := mcpflow.ValidateID("user id", u.UserID); err != nil {
			return nil, fmt.Errorf("auth.users[%d].id: %s", i, mcpflow.ErrorMessage(err))
		}
		var d [sha256.Size]byte
		switch {
		case u.Token != "" && u.TokenSHA256 == "":
			d = sha256.Sum256([]byte(u.Token))
		case u.Token == "" && u.TokenSHA256 != "":
			var err error
			if d, err = parseDigest(u.TokenSHA256); err != nil {
				return nil, fmt.Errorf("auth.users[%d].token_sha256: %w", i, err)
			}
		default:
			return nil, fmt.Errorf("auth.users[%d]: set exactly one of token and token_sha256", i)
		}
		a.creds = append(a.creds, credential{digest: d, p: Principal{UserID: u.UserID}})
	}
	return a, nil
}

func tokenID(d [sha256.Size]byte) string { return "sha256:" + hex.EncodeToString(d[:6]) }

func parseDigest(h string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	b, err := hex.DecodeString(strings.TrimSpace(h))
	if err != nil || len(b) != sha256.Size {
		return d, fmt.Errorf("must be 64 hexadecimal digits")
	}
	copy(d[:], b)
	return d, nil
}

// Authenticate returns the principal for a bearer token. Every known digest
// is compared, whatever matched first, so timing does not reveal which
// prefix of the list matched.
func (a *Authenticator) Authenticate(token string) (Principal, bool) {
	if token == "" {
		return Principal{}, false
	}
	d := sha256.Sum256([]byte(token))
	var found Principal
	ok := 0
	for _, c := range a.creds {
		if subtle.ConstantTimeCompare(d[:], c.digest[:]) == 1 {
			if ok == 0 {
				found = c.p
			}
			ok = 1
		}
	}
	return found, ok == 1
}

// bearerToken extracts the token of an "Authorization: Bearer <token>"
// header value.
func bearerToken(h string) string {
	scheme, tok, found := strings.Cut(strings.TrimSpace(h), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}
