package mcpserver

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
)

// fastMessage decodes the common request without encoding/json: an object
// of "jsonrpc", "id", "method" and "params" whose params hold only "name"
// (a string), "arguments" and "_meta" (objects; a 2026-07-28 request's
// envelope is in _meta), each member at most once,
// names and strings spelled without escapes or non-ASCII bytes. Anything
// else returns false and is decoded by encoding/json, so the result is
// always what json.Unmarshal makes of body (FuzzFastMessage compares
// them). body must be valid JSON (json.Valid) and is not copied: id and
// arguments are slices of it, which readMessage never reuses.
func fastMessage(body []byte, m *message) bool {
	i := jsonscan.SkipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	var seen [4]bool
	ok := jsonscan.Members(body, i, func(key []byte, v, end int) bool {
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

// fastParams reads params of "name", "arguments" and "_meta" only.
func fastParams(body []byte, i int, p *params) bool {
	var seenName, seenArgs, seenMeta bool
	return jsonscan.Members(body, i, func(key []byte, v, end int) bool {
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
		case "_meta":
			if body[v] != '{' || seenMeta {
				return false
			}
			seenMeta, p.Meta = true, map[string]json.RawMessage{}
			// A name met twice keeps its last value, as in json.Unmarshal.
			return jsonscan.Members(body, v, func(k []byte, mv, mend int) bool {
				p.Meta[string(k)] = json.RawMessage(body[mv:mend])
				return true
			})
		default:
			return false
		}
		return true
	})
}

// plainString is the string a JSON string literal without escapes or
// non-ASCII bytes holds; "2.0" and the methods mcpflow serves are not
// allocated.
func plainString(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return "", false
	}
	s := lit[1 : len(lit)-1]
	if !jsonscan.Plain(s) {
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
