// Package lru is a least-recently-used map of bounded size, shared by the
// caches of verified access tokens (oidcauth) and of exchanged upstream
// tokens (mcpclient). It is not safe for concurrent use: each cache holds
// its own lock around it, with whatever else that lock guards.
package lru

import "container/list"

// Cache maps keys to values, holding at most its size: adding beyond it
// drops the least recently used entry.
type Cache[K comparable, V any] struct {
	size  int
	order list.List // of *entry[K, V], most recently used first
	items map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key K
	val V
}

// New returns an empty cache of at most size (at least 1) entries.
func New[K comparable, V any](size int) *Cache[K, V] {
	return &Cache[K, V]{size: max(size, 1), items: make(map[K]*list.Element)}
}

// Get returns the value of key and marks it used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry[K, V]).val, true
}

// Add sets the value of key and marks it used, dropping the least recently
// used entries beyond the size.
func (c *Cache[K, V]) Add(key K, val V) {
	if el, ok := c.items[key]; ok {
		el.Value.(*entry[K, V]).val = val
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&entry[K, V]{key: key, val: val})
	for c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*entry[K, V]).key)
	}
}

// Remove drops key.
func (c *Cache[K, V]) Remove(key K) {
	if el, ok := c.items[key]; ok {
		c.order.Remove(el)
		delete(c.items, key)
	}
}

// Len returns the number of entries.
func (c *Cache[K, V]) Len() int { return c.order.Len() }
