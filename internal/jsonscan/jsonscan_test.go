package jsonscan

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// Members visits the members of an object in order, with each value's
// bounds, skipping nested values, strings holding brackets and escapes.
func TestMembers(t *testing.T) {
	body := []byte(` { "a" : 1 , "b":{"x":[1,"]}",{"y":"\"}"}]}, "c": "s\"}", "d":[], "e":null } `)
	if !json.Valid(body) {
		t.Fatal("invalid test input")
	}
	var got []string
	ok := Members(body, SkipWS(body, 0), func(key []byte, v, end int) bool {
		got = append(got, string(key)+"="+string(body[v:end]))
		return true
	})
	want := []string{`a=1`, `b={"x":[1,"]}",{"y":"\"}"}]}`, `c="s\"}"`, `d=[]`, `e=null`}
	if !ok || len(got) != len(want) {
		t.Fatalf("got %v (%v)", got, ok)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("member %d: %s, want %s", i, got[i], want[i])
		}
	}
	if Members([]byte(`{"\u0061":1}`), 0, func([]byte, int, int) bool { return true }) {
		t.Error("an escaped name must not be plain")
	}
	if Members([]byte(`{"a":1,"b":2}`), 0, func(k []byte, _, _ int) bool { return string(k) != "b" }) {
		t.Error("f's false must end the walk with false")
	}
	if !Members([]byte(`{}`), 0, func([]byte, int, int) bool { return false }) {
		t.Error("an empty object has no member to refuse")
	}
}

// FuzzMembers: on any input the walk stays within it (each member's value
// bounds inside body), and on valid JSON it visits what encoding/json
// reads as the object's members, in order.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":{"c":"]"}}`, `{"`, `{"a`, `{"a"`, `{"a":`, `{"a":"`, `{"a":[`, `{"\"`, `{"a":1,`, ` {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		i := SkipWS(body, 0)
		if i >= len(body) || body[i] != '{' {
			return
		}
		var keys []string
		ok := Members(body, i, func(key []byte, v, end int) bool {
			if v < 0 || v > end || end > len(body) {
				t.Fatalf("member %q: bounds %d..%d outside %d bytes", key, v, end, len(body))
			}
			keys = append(keys, string(key))
			return true
		})
		if !ok || !json.Valid(body) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("not an object: %v %v", tok, err)
		}
		for n := 0; dec.More(); n++ {
			tok, _ := dec.Token()
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil || n >= len(keys) || tok != keys[n] {
				t.Fatalf("member %d: encoding/json reads %v, the walk %v", n, tok, keys)
			}
		}
	})
}

// ScanEnvelope leaves to encoding/json the messages it would read
// differently: a member name in another case, escaped or not ASCII.
func TestScanEnvelopeFallsBack(t *testing.T) {
	env, ok := ScanEnvelope([]byte(` {"jsonrpc":"2.0","id":7,"method":"m","result":{"a":[1]},"error":null,"params":{}} `))
	if !ok || string(env.ID) != "7" || string(env.Method) != `"m"` || string(env.Result) != `{"a":[1]}` || string(env.Error) != "null" {
		t.Fatalf("got %q %v", env, ok)
	}
	for _, msg := range []string{`{"ID":1}`, `{"Method":"x"}`, `{"RESULT":1}`, `{"erroR":1}`, `{"i\u0064":1}`, `{"reſult":1}`, `[]`, `1`} {
		if _, ok := ScanEnvelope([]byte(msg)); ok {
			t.Errorf("%s: scanned, but encoding/json reads it otherwise", msg)
		}
	}
	for v, want := range map[string]string{``: "", `null`: "", `"a/b"`: "a/b", `"t\u00e9"`: "té", "\"a\xffb\"": "a\ufffdb"} {
		if got, err := StringValue([]byte(v)); err != nil || got != want {
			t.Errorf("StringValue(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
	if _, err := StringValue([]byte(`5`)); err == nil {
		t.Error("StringValue(5): no error")
	}
}

// Elements visits an array's elements with their bounds, and says false
// for an array cut short.
func TestElements(t *testing.T) {
	body := []byte(` [ 1 , {"a":"]"} ,"x", [2,[3]] ] `)
	var got []string
	if !Elements(body, 1, func(v, end int) bool { got = append(got, string(body[v:end])); return true }) {
		t.Fatal("false for a whole array")
	}
	if want := []string{`1`, `{"a":"]"}`, `"x"`, `[2,[3]]`}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !Elements([]byte(`[ ]`), 0, func(int, int) bool { t.Fatal("an element in []"); return true }) {
		t.Fatal("false for []")
	}
	for _, cut := range []string{`[1,`, `[1`, `[{"a":1}`, `[`} {
		if Elements([]byte(cut), 0, func(int, int) bool { return true }) {
			t.Errorf("%s: true for an array cut short", cut)
		}
	}
}

// AppendString and AppendID write what json.Marshal writes.
func TestAppendMatchesMarshal(t *testing.T) {
	for _, s := range []string{"", "tools/call", "mcpflow-12", `a"b`, `a\b`, "<&>", "é", "a\x00b", "a\xffb", "\u2028"} {
		checkAppend(t, s)
	}
	for _, id := range []any{nil, int64(-7), 12, "x-1", 1.5, true} {
		got, err := AppendID([]byte("p"), id)
		want, wantErr := json.Marshal(id)
		if err != nil || wantErr != nil || string(got) != "p"+string(want) {
			t.Errorf("AppendID(%v) = %s, %v; json.Marshal %s, %v", id, got, err, want, wantErr)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("tools/call")
	f.Add("a<b\"\\\x01é")
	f.Fuzz(checkAppend)
}

func checkAppend(t *testing.T, s string) {
	want, _ := json.Marshal(s)
	if got := AppendString([]byte("p"), s); string(got) != "p"+string(want) {
		t.Fatalf("AppendString(%q) = %s, json.Marshal %s", s, got[1:], want)
	}
}

// TrimWS takes JSON's whitespace (space, tab, LF, CR) off both ends and
// nothing else: a Unicode space stays, so the message around it stays
// what encoding/json rejects.
func TestTrimWS(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "",
		" \t\r\n":              "",
		" \t{\"a\": 1}\r\n ":   "{\"a\": 1}",
		"{} ":                  "{}",
		"\u00a0{}":             "\u00a0{}",
		"{}\u2028":             "{}\u2028",
		"\v{}\f":               "\v{}\f",
		"\n\u3000 {} \u0085\n": "\u3000 {} \u0085",
	} {
		if got := string(TrimWS([]byte(in))); got != want {
			t.Errorf("TrimWS(%q) = %q, want %q", in, got, want)
		}
		if json.Valid([]byte(in)) != json.Valid(TrimWS([]byte(in))) && in != "" && want != "" {
			t.Errorf("TrimWS(%q) changed whether it is JSON", in)
		}
	}
}
