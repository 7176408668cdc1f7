package oidcauth

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/lru"
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
	// scopeClaim: the token has a "scope" or "scp" claim (an ID token
	// has neither).
	scopeClaim bool
	// key is the thumbprint of the provider's key that verified the
	// signature: a cached verification holds only while the key set
	// does.
	key string
	// introspected: the provider's introspection endpoint vouched for it
	// (key is empty).
	introspected bool
}

// tokenCache remembers verified tokens by the SHA-256 of their text (see
// the package doc's Cache section).
type tokenCache struct {
	mu    sync.Mutex
	items *lru.Cache[[sha256.Size]byte, cacheEntry]
}

type cacheEntry struct {
	until time.Time
	tok   verifiedToken
}

func newTokenCache(size int) *tokenCache {
	return &tokenCache{items: lru.New[[sha256.Size]byte, cacheEntry](size)}
}

// get returns the token remembered under key if it is still fresh at now.
func (c *tokenCache) get(key [sha256.Size]byte, now time.Time) (verifiedToken, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items.Get(key)
	if !ok {
		return verifiedToken{}, false
	}
	if !now.Before(e.until) {
		c.items.Remove(key)
		return verifiedToken{}, false
	}
	return e.tok, true
}

// put remembers tok under key until until, evicting the least recently
// used token when full.
func (c *tokenCache) put(key [sha256.Size]byte, tok verifiedToken, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items.Add(key, cacheEntry{until: until, tok: tok})
}

// remove forgets the token remembered under key.
func (c *tokenCache) remove(key [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items.Remove(key)
}
