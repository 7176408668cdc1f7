package main

import (
	"context"
	"sync"
	"testing"
)

// measureInTurns: each target makes its warm-up once and its n calls in
// the parts asked, the targets taking turns part by part, and each gets
// one cell of n latencies.
func TestMeasureInTurns(t *testing.T) {
	var mu sync.Mutex
	var seq []string
	calls := map[string]int{}
	mk := func(name string) target {
		return target{name: name, call: func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			calls[name]++
			if len(seq) == 0 || seq[len(seq)-1] != name {
				seq = append(seq, name)
			}
			return nil
		}}
	}
	cells, err := measureInTurns(context.Background(), []target{mk("a"), mk("b")}, 1, 3, 25, 4)
	if err != nil {
		t.Fatal(err)
	}
	if calls["a"] != 28 || calls["b"] != 28 {
		t.Errorf("calls %v, want 25 + 3 warm-up each", calls)
	}
	// a's warm-up and first part, b's, then a and b in turn: 4 turns each.
	want := []string{"a", "b", "a", "b", "a", "b", "a", "b"}
	if len(seq) != len(want) {
		t.Fatalf("turns %v, want %v", seq, want)
	}
	for i := range want {
		if seq[i] != want[i] {
			t.Fatalf("turns %v, want %v", seq, want)
		}
	}
	for i, c := range cells {
		if len(c.lat) != 25 || c.rps <= 0 {
			t.Errorf("cell %d: %d latencies, %f calls/s", i, len(c.lat), c.rps)
		}
		for j := 1; j < len(c.lat); j++ {
			if c.lat[j] < c.lat[j-1] {
				t.Fatalf("cell %d: latencies not sorted", i)
			}
		}
	}
}
