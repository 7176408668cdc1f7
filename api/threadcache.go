package api

import (
	"sync"
	"time"

	"github.com/mcpflow/mcpflow"
)

// threadCacheTTL bounds how long a tool call trusts a thread it saw alive
// without reading the database again. A delete through this process evicts
// at once; one through another replica is seen within this time.
const threadCacheTTL = 5 * time.Second

// threadCache remembers live threads (thread ids are per user) so the
// tool-call hot path does not read the database on every call.
type threadCache struct {
	mu sync.Mutex
	m  map[mcpflow.ThreadRef]time.Time // → when the entry expires
}

const threadCacheMax = 100_000

// live reports whether the thread was seen alive within threadCacheTTL.
func (c *threadCache) live(ref mcpflow.ThreadRef, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp, ok := c.m[ref]
	return ok && !now.After(exp)
}

func (c *threadCache) put(ref mcpflow.ThreadRef, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= threadCacheMax {
		c.m = map[mcpflow.ThreadRef]time.Time{} // crude but bounded
	}
	c.m[ref] = now.Add(threadCacheTTL)
}

func (c *threadCache) forget(ref mcpflow.ThreadRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, ref)
}
