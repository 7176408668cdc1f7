package oidcauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow"
)

const (
	// maxTokenBytes bounds an access token; longer ones are malformed.
	maxTokenBytes = 16 << 10
	// hashedIDPrefix and hashedIDHexDigits form the user id of a claim
	// value that is not a valid id: prefix + "h-" + 32 hex digits of its
	// SHA-256.
	hashedIDPrefix    = "h-"
	hashedIDHexDigits = 32
)

// acceptedTypes are the header "typ" values accepted (compared without
// case, RFC 7515 §4.1.9); an absent "typ" is accepted too.
var acceptedTypes = []string{"JWT", "at+jwt", "application/at+jwt"}

// header is the part of a JWS header read before the signature is checked,
// to route and refuse early; the signature covers it.
type header struct {
	Alg string  `json:"alg"`
	Typ *string `json:"typ"`
}

// claimSet is a token's claims, each decoded on demand.
type claimSet map[string]json.RawMessage

// splitToken decodes the header and the (unverified) claims of a compact
// JWS, and tells whether it has a signature. It refuses anything else, the
// JSON serialization included.
func splitToken(token string) (h header, c claimSet, signed, ok bool) {
	if len(token) > maxTokenBytes {
		return h, nil, false, false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return h, nil, false, false
	}
	for _, p := range parts {
		if !isBase64URL(p) {
			return h, nil, false, false
		}
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &h) != nil {
		return h, nil, false, false
	}
	pb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return h, nil, false, false
	}
	if c, err = parseClaims(pb); err != nil {
		return h, nil, false, false
	}
	return h, c, parts[2] != "", true
}

// isBase64URL reports whether s holds only base64url characters (no
// padding).
func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// parseClaims decodes a JSON object of claims.
func parseClaims(b []byte) (claimSet, error) {
	var c claimSet
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	if c == nil { // "null"
		return nil, errors.New("claims are not an object")
	}
	return c, nil
}

// typeAccepted reports whether the header "typ" is one of acceptedTypes
// or absent.
func (h header) typeAccepted() bool {
	if h.Typ == nil {
		return true
	}
	return slices.ContainsFunc(acceptedTypes, func(t string) bool { return strings.EqualFold(t, *h.Typ) })
}

// has reports whether the claim is present (and not null).
func (c claimSet) has(name string) bool {
	raw, ok := c[name]
	return ok && !bytes.Equal(raw, []byte("null"))
}

// str returns a string claim; ok is false when it is absent or not a
// string.
func (c claimSet) str(name string) (string, bool) {
	var s string
	if raw, ok := c[name]; !ok || json.Unmarshal(raw, &s) != nil || bytes.Equal(raw, []byte("null")) {
		return "", false
	}
	return s, true
}

// time returns a NumericDate claim (RFC 7519 §2); ok is false when it is
// absent, err set when it is not a number.
func (c claimSet) time(name string) (t time.Time, ok bool, err error) {
	if !c.has(name) {
		return time.Time{}, false, nil
	}
	var n json.Number
	if err := json.Unmarshal(c[name], &n); err != nil {
		return time.Time{}, false, err
	}
	if i, err := n.Int64(); err == nil {
		return time.Unix(i, 0), true, nil
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<53 {
		return time.Time{}, false, errors.New("not a NumericDate")
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, nil
}

// strings returns a claim holding a string or an array of strings; ok is
// false when it is absent or of another type.
func (c claimSet) strings(name string) ([]string, bool) {
	raw, ok := c.lookup(name)
	if !ok {
		return nil, false
	}
	return stringOrStrings(raw)
}

func stringOrStrings(raw json.RawMessage) ([]string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil && !bytes.Equal(raw, []byte("null")) {
		return []string{s}, true
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil && ss != nil {
		return ss, true
	}
	return nil, false
}

// lookup finds a claim by its name, or, when no claim has that name and it
// holds dots, by a path into nested objects ("realm_access.roles").
func (c claimSet) lookup(name string) (json.RawMessage, bool) {
	if raw, ok := c[name]; ok {
		return raw, true
	}
	if !strings.Contains(name, ".") {
		return nil, false
	}
	cur := c
	segs := strings.Split(name, ".")
	for i, seg := range segs {
		raw, ok := cur[seg]
		if !ok {
			return nil, false
		}
		if i == len(segs)-1 {
			return raw, true
		}
		var next claimSet
		if json.Unmarshal(raw, &next) != nil || next == nil {
			return nil, false
		}
		cur = next
	}
	return nil, false
}

// audiences returns "aud" (a string or an array of strings).
func (c claimSet) audiences() ([]string, bool) {
	raw, ok := c["aud"]
	if !ok {
		return nil, false
	}
	return stringOrStrings(raw)
}

// scopes returns the token's scopes: "scope" (space-delimited, RFC 9068)
// and "scp" (a space-delimited string or an array, as Azure AD and Okta
// write it), without duplicates, in order.
func (c claimSet) scopes() []string {
	var lists []string
	if s, ok := c.str("scope"); ok {
		lists = append(lists, s)
	}
	if raw, ok := c["scp"]; ok {
		ss, _ := stringOrStrings(raw)
		lists = append(lists, ss...)
	}
	var out []string
	for _, s := range lists {
		for _, f := range strings.Fields(s) {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// userID maps a user claim value to a user id: prefix + value when that
// is a valid id (mcpflow.ValidateID) and value does not start with "h-";
// else prefix + "h-" + the first 32 hex digits of value's SHA-256. The
// hashed form keeps ids stable and valid for values such as Auth0's
// "auth0|abc", ones with spaces or longer than 64 characters; hashing
// every value starting with "h-" as well means no value can take the id
// another value hashes to.
func userID(prefix, value string) string {
	id := prefix + value
	if !strings.HasPrefix(value, hashedIDPrefix) && mcpflow.ValidateID("user id", id) == nil {
		return id
	}
	sum := sha256.Sum256([]byte(value))
	return prefix + hashedIDPrefix + hex.EncodeToString(sum[:])[:hashedIDHexDigits]
}
