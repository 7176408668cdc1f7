package streamhttp

import "strings"

// resourceMetadata returns the first non-empty resource_metadata parameter
// (RFC 9728 §5.1, any case; token or quoted string) of the challenges.
func resourceMetadata(challenges []string) string {
	const name = "resource_metadata"
	for _, c := range challenges {
		lower := strings.ToLower(c)
		for from := 0; ; {
			i := strings.Index(lower[from:], name)
			if i < 0 {
				break
			}
			i += from
			from = i + len(name)
			if i > 0 && !strings.ContainsRune(" \t,", rune(c[i-1])) {
				continue // part of another parameter's name
			}
			rest := strings.TrimLeft(c[from:], " \t")
			if !strings.HasPrefix(rest, "=") {
				continue
			}
			if v, ok := paramValue(strings.TrimLeft(rest[1:], " \t")); ok && v != "" {
				return v
			}
		}
	}
	return ""
}

// paramValue reads an auth-param value at the start of s.
func paramValue(s string) (string, bool) {
	if !strings.HasPrefix(s, `"`) {
		end := strings.IndexAny(s, ", \t")
		if end < 0 {
			end = len(s)
		}
		return s[:end], end > 0
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '"':
			return b.String(), true
		case '\\':
			if i+1 == len(s) {
				return "", false
			}
			i++
		}
		b.WriteByte(s[i])
	}
	return "", false
}
