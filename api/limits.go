package api

import (
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow"
)

// limitBody caps every request body at MaxBodyBytes: a declared length
// beyond it is refused at once, and a body that turns out longer fails its
// read (readBody answers 413 then).
func (s *Server) limitBody(c *gin.Context) {
	if c.Request.ContentLength > s.opts.MaxBodyBytes {
		s.renderError(c, s.tooLarge())
		return
	}
	if c.Request.Body != nil {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, s.opts.MaxBodyBytes)
	}
	c.Next()
}

func (s *Server) tooLarge() error {
	return mcpflow.Errorf(mcpflow.ETooLarge, "request body is larger than %d bytes", s.opts.MaxBodyBytes)
}

// readBody reads the whole request body: 413 when it is over the cap, 400
// when it cannot be read.
func (s *Server) readBody(c *gin.Context) ([]byte, bool) {
	if c.Request.Body == nil {
		return nil, true
	}
	body, err := io.ReadAll(c.Request.Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		s.renderError(c, s.tooLarge())
		return nil, false
	case err != nil:
		s.renderError(c, mcpflow.Errorf(mcpflow.EInvalid, "request body could not be read"))
		return nil, false
	}
	return body, true
}

// userSlots caps what each user holds at once in this process: one pool
// per kind of thing held (tool calls in flight, waits, MCP GET streams),
// each with its own cap, so that a user waiting on its inbox keeps every
// call slot.
type userSlots struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

// acquire takes one of the user's slots; false when all are taken.
func (u *userSlots) acquire(user string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n == nil {
		u.n = map[string]int{}
	}
	if u.n[user] >= u.max {
		return false
	}
	u.n[user]++
	return true
}

// release gives back a slot acquire took.
func (u *userSlots) release(user string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n[user]--; u.n[user] <= 0 {
		delete(u.n, user)
	}
}

// acquirer is acquire as the MCP endpoint takes it (mcpflow.MCPRequest):
// a release func, or false when the user has no slot left.
func (u *userSlots) acquirer(user string) func() (func(), bool) {
	return func() (func(), bool) {
		if !u.acquire(user) {
			return nil, false
		}
		return func() { u.release(user) }, true
	}
}
