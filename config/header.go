package config

import (
	"errors"
	"regexp"
	"strings"
)

// Reasons CheckHeaderValue gives (spec §3.5). None of them contains the value.
var (
	// ErrHeaderNonASCII: the value contains a character outside ASCII.
	ErrHeaderNonASCII = errors.New("contains characters outside ASCII")
	// ErrHeaderControl: the value contains NUL, LF, VT, FF or CR.
	ErrHeaderControl = errors.New("contains a line break or another forbidden control character")
	// ErrHeaderWhitespace: the value starts or ends with a space or a tab.
	ErrHeaderWhitespace = errors.New("has leading or trailing whitespace")
)

// CheckHeaderValue applies the illegal-header-value rule of spec §3.5 and
// returns nil for a legal value or one of ErrHeaderNonASCII, ErrHeaderControl
// and ErrHeaderWhitespace (checked in that order). Internal spaces and tabs,
// DEL (0x7f) and the empty string are legal. The error never echoes the value.
func CheckHeaderValue(v string) error {
	for i := 0; i < len(v); i++ {
		if v[i] >= 0x80 {
			return ErrHeaderNonASCII
		}
	}
	if strings.ContainsAny(v, "\x00\n\v\f\r") {
		return ErrHeaderControl
	}
	if v != "" {
		if first, last := v[0], v[len(v)-1]; first == ' ' || first == '\t' || last == ' ' || last == '\t' {
			return ErrHeaderWhitespace
		}
	}
	return nil
}

var (
	secretKeyWordStart = regexp.MustCompile(`(.)([A-Z][a-z]+)`)
	secretKeyCamel     = regexp.MustCompile(`([a-z0-9])([A-Z])`)
	secretKeyNonAlnum  = regexp.MustCompile(`[^a-z0-9]+`)
	secretKeyPattern   = regexp.MustCompile(`(^|_)(api_key|apikey|access_key|private_key|client_secret|secret|token|password|passwd|credential|credentials|authorization|bearer)(_|$)`)
)

// LooksSecret reports whether a config key names a secret (spec §4.3): the key
// is normalized (camelCase split into snake_case, lower-cased, runs of
// non-alphanumerics turned into "_", leading/trailing "_" trimmed) and must
// contain one of api_key, apikey, access_key, private_key, client_secret,
// secret, token, password, passwd, credential, credentials, authorization or
// bearer as whole "_"-delimited segments. So refreshToken, api_key, access_key
// and client_secret look secret; cwd, customFlag and tokenizer do not.
func LooksSecret(key string) bool {
	return secretKeyPattern.MatchString(normalizeConfigKey(key))
}

func normalizeConfigKey(key string) string {
	s := secretKeyWordStart.ReplaceAllString(key, "${1}_${2}")
	s = secretKeyCamel.ReplaceAllString(s, "${1}_${2}")
	s = secretKeyNonAlnum.ReplaceAllString(strings.ToLower(s), "_")
	return strings.Trim(s, "_")
}

// checkHeaderSpellings returns the first pair of names in order that differ
// only in case.
func checkHeaderSpellings(names []string) (first, second string, dup bool) {
	seen := make(map[string]string, len(names))
	for _, n := range names {
		lower := strings.ToLower(n)
		if prev, ok := seen[lower]; ok {
			return prev, n, true
		}
		seen[lower] = n
	}
	return "", "", false
}

// pyRepr quotes s the way Python's repr quotes a simple string, so messages
// match DeerFlow's wording ('Authorization').
func pyRepr(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}
