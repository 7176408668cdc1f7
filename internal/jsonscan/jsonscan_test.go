package jsonscan

import (
	"encoding/json"
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
