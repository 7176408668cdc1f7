// Package jsonscan walks the members of a JSON object without decoding
// it, for the fast paths that read a few members of a message and leave
// everything else to encoding/json (mcpserver's request, session's answer
// and the capabilities it relays to a stdio server, the envelope of
// streamhttp's and stdiopipe's messages, the runtime's read of a tool's
// result, route's path-hint test). The input must be valid JSON
// (json.Valid): the walk does not check it, but on input cut short it
// returns false rather than slicing past its end. Written here because
// encoding/json has no way to visit an object's members without decoding
// or tokenizing every value.
// AppendString and AppendID write the few values those paths encode (a
// method, a tool's name, a request id) as json.Marshal does, without its
// reflection, for the transports and the session that splice requests.
// TrimWS takes JSON's whitespace, and no other space, from around a
// message where the stdio transport and the MCP edge read one.
package jsonscan

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Members calls f with each member of the object at body[i] ('{'): its
// plain name and its value's bounds; false when a name is not plain, the
// object ends before its last value, or f says so.
func Members(body []byte, i int, f func(key []byte, v, end int) bool) bool {
	i = SkipWS(body, i+1)
	if i < len(body) && body[i] == '}' {
		return true
	}
	for i < len(body) && body[i] == '"' {
		kend := SkipString(body, i)
		if kend < i+2 || body[kend-1] != '"' {
			return false // the name is cut short
		}
		key := body[i+1 : kend-1]
		if !Plain(key) {
			return false
		}
		v := SkipWS(body, SkipWS(body, kend)+1) // past ':'
		if v >= len(body) {
			return false
		}
		end := SkipValue(body, v)
		if !f(key, v, end) {
			return false
		}
		i = SkipWS(body, end)
		if i >= len(body) || body[i] != ',' {
			return i < len(body) && body[i] == '}'
		}
		i = SkipWS(body, i+1)
	}
	return false
}

// Plain reports whether a string literal's content (between its quotes)
// needs no decoding: no escape, only ASCII (encoding/json replaces
// invalid UTF-8, and folds non-ASCII letters when it matches names).
func Plain(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// TrimWS returns b without the JSON whitespace (space, tab, LF, CR) at
// its ends. bytes.TrimSpace would also take Unicode spaces (U+00A0,
// U+2028, \v, …), which JSON does not allow there: a message with one
// around it is not JSON, and encoding/json rejects it.
func TrimWS(b []byte) []byte {
	b = b[SkipWS(b, 0):]
	n := len(b)
	for n > 0 && isWS(b[n-1]) {
		n--
	}
	return b[:n]
}

// SkipWS returns the index of the first byte from i that is not JSON
// whitespace (space, tab, LF, CR).
func SkipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipString returns the index after the string literal at b[i] ('"').
func SkipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// SkipValue returns the index after the value at b[i] (valid JSON).
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = SkipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// Envelope holds sub-slices of a JSON-RPC message's top-level members,
// nil for a member absent.
type Envelope struct{ ID, Method, Result, Error []byte }

// ScanEnvelope finds the members of b, valid JSON. False for a
// non-object, a member name that is not plain, one of the four named
// twice (encoding/json decodes each in turn: a type error in the first
// fails the message, two errors merge), or a name encoding/json would
// match to one of the four in another case ("ID"): the caller leaves
// those to encoding/json, so that both read the same.
func ScanEnvelope(b []byte) (env Envelope, ok bool) {
	i := SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return env, false
	}
	ok = Members(b, i, func(key []byte, v, end int) bool {
		var at *[]byte
		switch string(key) {
		case "id":
			at = &env.ID
		case "method":
			at = &env.Method
		case "result":
			at = &env.Result
		case "error":
			at = &env.Error
		default:
			return !FoldsTo(key, "id", "method", "result", "error")
		}
		if *at != nil {
			return false
		}
		*at = b[v:end]
		return true
	})
	return env, ok
}

// StringValue is what encoding/json decodes a member's value (valid
// JSON, nil when absent) into a string: "" for absent or null, the text
// of a string without escapes as it is, anything else through
// encoding/json (its error for a value that is not a string).
func StringValue(v []byte) (string, error) {
	if len(v) == 0 || string(v) == "null" {
		return "", nil
	}
	if v[0] == '"' && Plain(v[1:len(v)-1]) {
		return string(v[1 : len(v)-1]), nil
	}
	var s string
	err := json.Unmarshal(v, &s)
	return s, err
}

// Elements calls f with the bounds of each element of the array at body[i]
// ('['); false when the array ends before its last element or f says so.
func Elements(body []byte, i int, f func(v, end int) bool) bool {
	i = SkipWS(body, i+1)
	if i < len(body) && body[i] == ']' {
		return true
	}
	for i < len(body) {
		end := SkipValue(body, i)
		if end == i || !f(i, end) {
			return false
		}
		i = SkipWS(body, end)
		if i >= len(body) || body[i] != ',' {
			return i < len(body) && body[i] == ']'
		}
		i = SkipWS(body, i+1)
	}
	return false
}

// AppendString appends s as json.Marshal writes it: quoted as it is when
// it is printable ASCII needing no escape (HTML's <, > and & included).
func AppendString(b []byte, s string) []byte {
	plain := !strings.ContainsAny(s, `"\\<>&`)
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	enc, _ := json.Marshal(s) // a string always encodes
	return append(b, enc...)
}

// AppendID appends a JSON-RPC id's value (mcp.RequestId's Value) as
// json.Marshal writes it: null, an integer or a string directly, anything
// else through json.Marshal.
func AppendID(b []byte, id any) ([]byte, error) {
	switch v := id.(type) {
	case nil:
		return append(b, "null"...), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case string:
		return AppendString(b, v), nil
	}
	enc, err := json.Marshal(id)
	return append(b, enc...), err
}

// FoldsTo reports whether encoding/json would match a member named key
// to one of names: the same name, in any case. key must be plain (Plain):
// a non-ASCII name can fold to an ASCII one of another length ("ſ" is
// "s"), which this does not see.
func FoldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if len(key) == len(n) && strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}
