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

// userSlots counts each user's tool calls in flight.
type userSlots struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

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

func (u *userSlots) release(user string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n[user]--; u.n[user] <= 0 {
		delete(u.n, user)
	}
}
