package oidcauth

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow"
)

const (
	// cacheTTL is the longest a verified token is remembered.
	cacheTTL = time.Minute
	// cacheSize bounds the tokens remembered (least recently used go
	// first).
	cacheSize = 10000
)

// verifiedToken is what a token's signature, issuer, algorithm and times
// established: everything but the audience check, which depends on the
// request and runs on every use.
type verifiedToken struct {
	provider  *provider
	identity  mcpflow.TokenIdentity
	audiences []string
}

// tokenCache remembers verified tokens by the SHA-256 of their text, so a
// chatty agent does not pay for a signature check per call. Only a token
// that passed every check but the audience gets in, and only the exact
// same text finds it again.
type tokenCache struct {
	size int

	mu    sync.Mutex
	ll    *list.List // of *cacheEntry, most recently used first
	items map[[sha256.Size]byte]*list.Element
}

type cacheEntry struct {
	key   [sha256.Size]byte
	until time.Time
	tok   verifiedToken
}

func newTokenCache(size int) *tokenCache {
	return &tokenCache{size: size, ll: list.New(), items: make(map[[sha256.Size]byte]*list.Element)}
}

// get returns the token remembered under key if it is still fresh at now.
func (c *tokenCache) get(key [sha256.Size]byte, now time.Time) (verifiedToken, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return verifiedToken{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.until) {
		c.ll.Remove(el)
		delete(c.items, key)
		return verifiedToken{}, false
	}
	c.ll.MoveToFront(el)
	return e.tok, true
}

// put remembers tok under key until until, evicting the least recently
// used token when full.
func (c *tokenCache) put(key [sha256.Size]byte, tok verifiedToken, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*cacheEntry)
		e.tok, e.until = tok, until
		c.ll.MoveToFront(el)
		return
	}
	for c.ll.Len() >= c.size {
		oldest := c.ll.Back()
		c.ll.Remove(oldest)
		delete(c.items, oldest.Value.(*cacheEntry).key)
	}
	c.items[key] = c.ll.PushFront(&cacheEntry{key: key, until: until, tok: tok})
}

// len returns the number of tokens remembered.
func (c *tokenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
