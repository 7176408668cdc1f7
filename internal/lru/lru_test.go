package lru

import "testing"

func TestCache(t *testing.T) {
	t.Parallel()
	c := New[string, int](3)
	c.Add("a", 1)
	c.Add("b", 2)
	c.Add("c", 3)
	if v, ok := c.Get("a"); !ok || v != 1 { // a is now the most recently used
		t.Fatalf("Get(a) = %d, %v", v, ok)
	}
	c.Add("d", 4) // drops b, the least recently used, not a, the oldest added
	if _, ok := c.Get("b"); ok {
		t.Fatal("b was not dropped")
	}
	for k, want := range map[string]int{"a": 1, "c": 3, "d": 4} {
		if v, ok := c.Get(k); !ok || v != want {
			t.Fatalf("Get(%s) = %d, %v", k, v, ok)
		}
	}
	c.Add("c", 30) // a replaced value is not a new entry
	if v, _ := c.Get("c"); v != 30 || c.Len() != 3 {
		t.Fatalf("Get(c) = %d, Len %d", v, c.Len())
	}
	c.Remove("c")
	c.Remove("nope")
	if _, ok := c.Get("c"); ok || c.Len() != 2 {
		t.Fatalf("after Remove: Len %d", c.Len())
	}
	if New[int, int](0).size != 1 {
		t.Fatal("size below 1")
	}
}
