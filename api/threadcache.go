package api

import (
	"sync"
	"time"
)

// threadCacheTTL bounds how long a tool call trusts a thread it saw alive
// without reading the database again. A delete through this process evicts
// at once; one through another replica is seen within this time.
const threadCacheTTL = 5 * time.Second

// threadCache remembers live threads and their owners so the tool-call hot
// path does not read the database on every call.
type threadCache struct {
	mu sync.Mutex
	m  map[string]threadCacheEntry
}

type threadCacheEntry struct {
	user string
	exp  time.Time
}

const threadCacheMax = 100_000

// owner returns the cached owner of a live thread.
func (c *threadCache) owner(id string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || now.After(e.exp) {
		return "", false
	}
	return e.user, true
}

func (c *threadCache) put(id, user string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= threadCacheMax {
		c.m = map[string]threadCacheEntry{} // crude but bounded
	}
	c.m[id] = threadCacheEntry{user: user, exp: now.Add(threadCacheTTL)}
}

func (c *threadCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}
