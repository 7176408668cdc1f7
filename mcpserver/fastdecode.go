package mcpserver

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// fastMessage decodes the common request without encoding/json: an object
// of "jsonrpc", "id", "method" and "params" whose params hold only "name"
// (a string) and "arguments" (an object), each member at most once,
// names and strings spelled without escapes or non-ASCII bytes. Anything
// else returns false and is decoded by encoding/json, so the result is
// always what json.Unmarshal makes of body (FuzzFastMessage compares
// them). body must be valid JSON (json.Valid) and is not copied: id and
// arguments are slices of it, which readMessage never reuses.
func fastMessage(body []byte, m *message) bool {
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	var seen [4]bool
	ok := members(body, i, func(key []byte, v, end int) bool {
		k := -1
		switch string(key) {
		case "jsonrpc":
			k = 0
		case "id":
			k = 1
		case "method":
			k = 2
		case "params":
			k = 3
		}
		if k < 0 || seen[k] {
			return false
		}
		seen[k] = true
		switch k {
		case 0, 2:
			s, ok := plainString(body[v:end])
			if !ok {
				return false
			}
			if k == 0 {
				m.JSONRPC = s
			} else {
				m.Method = s
			}
		case 1:
			m.ID = json.RawMessage(body[v:end])
		case 3:
			return body[v] == '{' && fastParams(body, v, &m.Params)
		}
		return true
	})
	return ok
}

// fastParams reads params of "name" and "arguments" only.
func fastParams(body []byte, i int, p *params) bool {
	var seenName, seenArgs bool
	return members(body, i, func(key []byte, v, end int) bool {
		switch string(key) {
		case "name":
			s, ok := plainString(body[v:end])
			if !ok || seenName {
				return false
			}
			seenName, p.Name = true, &s
		case "arguments":
			if body[v] != '{' || seenArgs {
				return false
			}
			seenArgs, p.Arguments = true, json.RawMessage(body[v:end])
		default:
			return false
		}
		return true
	})
}

// members calls f with each member of the object at body[i] ('{'): its
// plain name and its value's bounds; false when a name is not plain or f
// says so.
func members(body []byte, i int, f func(key []byte, v, end int) bool) bool {
	i = skipWS(body, i+1)
	if i < len(body) && body[i] == '}' {
		return true
	}
	for i < len(body) && body[i] == '"' {
		kend := skipString(body, i)
		key, ok := plain(body[i+1 : kend-1])
		if !ok {
			return false
		}
		v := skipWS(body, skipWS(body, kend)+1) // past ':'
		end := skipValue(body, v)
		if !f(key, v, end) {
			return false
		}
		i = skipWS(body, end)
		if i >= len(body) || body[i] != ',' {
			return i < len(body) && body[i] == '}'
		}
		i = skipWS(body, i+1)
	}
	return false
}

// plainString is the string a JSON string literal without escapes or
// non-ASCII bytes holds; "2.0" and the methods mcpflow serves are not
// allocated.
func plainString(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return "", false
	}
	s, ok := plain(lit[1 : len(lit)-1])
	if !ok {
		return "", false
	}
	if string(s) == mcp.JSONRPC_VERSION {
		return mcp.JSONRPC_VERSION, true
	}
	for _, known := range knownMethods {
		if string(s) == known {
			return known, true
		}
	}
	return string(s), true
}

// plain reports whether a string's content needs no decoding: no escape,
// only ASCII (encoding/json replaces invalid UTF-8).
func plain(s []byte) ([]byte, bool) {
	for _, c := range s {
		if c == '\\' || c >= 0x80 {
			return nil, false
		}
	}
	return s, true
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string literal at b[i] ('"').
func skipString(b []byte, i int) int {
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

// skipValue returns the index after the value at b[i] (valid JSON).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
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
