package jsontest

import (
	"errors"
	"fmt"
	"testing"
)

// recorder is a testing.TB whose Fatalf records instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.failed = fmt.Sprintf(format, a...) }

func TestSameAsMarshal(t *testing.T) {
	fail := errors.New("x")
	for _, c := range []struct {
		want, got    string
		wantErr, err error
		fails        bool
	}{
		{`{"a":1,"b":"<"}`, ` { "b" : "\u003c" , "a" : 1 } `, nil, nil, false},
		{``, ``, fail, fail, false},
		{`{"a":1}`, `{"a":2}`, nil, nil, true},
		{`{"a":1}`, `{"a":1`, nil, nil, true},
		{`{"a":1}`, ``, nil, fail, true},
		{``, `{"a":1}`, fail, nil, true},
	} {
		r := &recorder{TB: t}
		SameAsMarshal(r, []byte(c.want), c.wantErr, []byte(c.got), c.err)
		if (r.failed != "") != c.fails {
			t.Errorf("want %s (%v), got %s (%v): failed %q, want failing %v", c.want, c.wantErr, c.got, c.err, r.failed, c.fails)
		}
	}
}
