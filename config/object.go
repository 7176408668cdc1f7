package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Object is a JSON object that remembers the order of its keys, so a document
// read from disk can be written back with its keys where the operator put
// them. Values are JSON values as this package decodes them: nil, bool,
// json.Number, string, []any and *Object. A json.Number keeps its literal text
// (so 60 stays 60 and 60.0 stays 60.0); Python's bare NaN, Infinity and
// -Infinity are json.Number values with that text. Set also accepts any other
// value encoding/json can marshal.
//
// The zero value is not usable; call NewObject. An Object is not safe for
// concurrent mutation.
type Object struct {
	keys []string
	vals map[string]any
}

// NewObject returns an empty Object.
func NewObject() *Object {
	return &Object{vals: map[string]any{}}
}

// Len returns the number of keys.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.keys)
}

// Keys returns the keys in order (a copy).
func (o *Object) Keys() []string {
	if o == nil {
		return nil
	}
	return append([]string(nil), o.keys...)
}

// Has reports whether key is present.
func (o *Object) Has(key string) bool {
	if o == nil {
		return false
	}
	_, ok := o.vals[key]
	return ok
}

// Get returns the value stored under key.
func (o *Object) Get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[key]
	return v, ok
}

// Set stores v under key. A new key goes last; an existing key keeps its
// position and gets the new value.
func (o *Object) Set(key string, v any) {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

// Delete removes key, if present.
func (o *Object) Delete(key string) {
	if _, ok := o.vals[key]; !ok {
		return
	}
	delete(o.vals, key)
	for i, k := range o.keys {
		if k == key {
			o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
			break
		}
	}
}

// Clone returns a deep copy of o (nested *Object and []any values are copied).
func (o *Object) Clone() *Object {
	if o == nil {
		return nil
	}
	c := &Object{keys: append([]string(nil), o.keys...), vals: make(map[string]any, len(o.vals))}
	for k, v := range o.vals {
		c.vals[k] = cloneValue(v)
	}
	return c
}

// MarshalJSON writes o as compact JSON with its keys in order.
func (o *Object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeValue(&buf, o, "", ""); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// UnmarshalJSON replaces o's contents with the JSON object in data, keeping key
// order. Bare NaN, Infinity and -Infinity are accepted as numbers. When a key
// repeats, the first position and the last value win (as in Python).
func (o *Object) UnmarshalJSON(data []byte) error {
	v, err := parseJSON(data)
	if err != nil {
		return err
	}
	obj, ok := v.(*Object)
	if !ok {
		return fmt.Errorf("expected a JSON object, got %s", kindOf(v))
	}
	*o = *obj
	return nil
}

// cloneValue deep-copies a decoded JSON value.
func cloneValue(v any) any {
	switch t := v.(type) {
	case *Object:
		return t.Clone()
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = cloneValue(e)
		}
		return c
	default:
		return v
	}
}

// kindOf names the JSON kind of a decoded value for error messages.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case *Object:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// ---- encoding ----

// encodeValue writes v. With indent == "" the output is compact; otherwise
// every nested level is indented by indent after prefix, in the layout of
// Python's json.dump(indent=2): "key": value, empty containers as {} and [].
func encodeValue(buf *bytes.Buffer, v any, prefix, indent string) error {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		if t == "" {
			return fmt.Errorf("empty json.Number")
		}
		buf.WriteString(string(t))
	case string:
		encodeString(buf, t)
	case []any:
		if len(t) == 0 {
			buf.WriteString("[]")
			return nil
		}
		buf.WriteByte('[')
		inner := prefix + indent
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			newline(buf, inner, indent)
			if err := encodeValue(buf, e, inner, indent); err != nil {
				return err
			}
		}
		newline(buf, prefix, indent)
		buf.WriteByte(']')
	case *Object:
		if t == nil {
			buf.WriteString("null")
			return nil
		}
		if len(t.keys) == 0 {
			buf.WriteString("{}")
			return nil
		}
		buf.WriteByte('{')
		inner := prefix + indent
		for i, k := range t.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			newline(buf, inner, indent)
			encodeString(buf, k)
			buf.WriteByte(':')
			if indent != "" {
				buf.WriteByte(' ')
			}
			if err := encodeValue(buf, t.vals[k], inner, indent); err != nil {
				return err
			}
		}
		newline(buf, prefix, indent)
		buf.WriteByte('}')
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if indent == "" {
			buf.Write(b)
			return nil
		}
		return json.Indent(buf, b, prefix, indent)
	}
	return nil
}

func newline(buf *bytes.Buffer, prefix, indent string) {
	if indent == "" {
		return
	}
	buf.WriteByte('\n')
	buf.WriteString(prefix)
}

// encodeString writes s as a JSON string without HTML escaping.
func encodeString(buf *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	buf.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
}

// ---- parsing ----

// SyntaxError is a JSON syntax error with a 1-based line and column (the
// column counts characters, not bytes).
type SyntaxError struct {
	Line, Column int
	Msg          string
}

// Error renders "line:column: message".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg)
}

const maxJSONDepth = 1000

type jsonParser struct {
	data  []byte
	pos   int
	depth int
}

// parseJSON decodes one JSON document into ordered values. Besides standard
// JSON it accepts the bare tokens NaN, Infinity and -Infinity (outside
// strings), as Python's json module writes them. A leading UTF-8 byte order
// mark is skipped.
func parseJSON(data []byte) (any, error) {
	p := &jsonParser{data: data}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, p.errAt(i, "invalid UTF-8 byte")
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		p.pos = 3
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return nil, p.errf("invalid character %s after top-level value", p.quoteChar())
	}
	return v, nil
}

func (p *jsonParser) errAt(pos int, msg string) error {
	line, col := 1, 1
	for _, r := range string(p.data[:pos]) {
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return &SyntaxError{Line: line, Column: col, Msg: msg}
}

func (p *jsonParser) errf(format string, args ...any) error {
	return p.errAt(p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonParser) quoteChar() string {
	if p.pos >= len(p.data) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return fmt.Sprintf("%q", r)
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) literal(word string, v any) (any, error) {
	if bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		p.pos += len(word)
		return v, nil
	}
	return nil, p.errf("invalid character %s looking for beginning of value", p.quoteChar())
}

func (p *jsonParser) value() (any, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return nil, p.errf("unexpected end of input, expected a value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", false)
	case c == 'n':
		return p.literal("null", nil)
	case c == 'N':
		return p.literal("NaN", json.Number("NaN"))
	case c == 'I':
		return p.literal("Infinity", json.Number("Infinity"))
	case c == '-' && bytes.HasPrefix(p.data[p.pos:], []byte("-Infinity")):
		return p.literal("-Infinity", json.Number("-Infinity"))
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.errf("invalid character %s looking for beginning of value", p.quoteChar())
	}
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return p.errf("exceeded maximum nesting depth %d", maxJSONDepth)
	}
	return nil
}

func (p *jsonParser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++ // '{'
	obj := NewObject()
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return obj, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errf("invalid character %s looking for beginning of object key string", p.quoteChar())
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errf("invalid character %s after object key", p.quoteChar())
		}
		p.pos++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		obj.Set(key.(string), v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errf("unexpected end of input, expected ',' or '}'")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return obj, nil
		default:
			return nil, p.errf("invalid character %s after object key:value pair", p.quoteChar())
		}
	}
}

func (p *jsonParser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++ // '['
	arr := []any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return arr, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errf("unexpected end of input, expected ',' or ']'")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return arr, nil
		default:
			return nil, p.errf("invalid character %s after array element", p.quoteChar())
		}
	}
}

func (p *jsonParser) str() (any, error) {
	start := p.pos
	p.pos++ // opening quote
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			var s string
			if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
				return nil, p.errAt(start, "invalid escape sequence in string")
			}
			return s, nil
		case c == '\\':
			p.pos += 2
		case c < 0x20:
			return nil, p.errf("invalid control character in string")
		default:
			p.pos++
		}
	}
	return nil, p.errAt(start, "unterminated string")
}

func (p *jsonParser) number() (any, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return nil, p.errf("invalid character %s in numeric literal", p.quoteChar())
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.errf("invalid character %s after decimal point in numeric literal", p.quoteChar())
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errf("invalid character %s in exponent of numeric literal", p.quoteChar())
		}
	}
	return json.Number(string(p.data[start:p.pos])), nil
}
