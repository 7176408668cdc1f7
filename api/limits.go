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

// userSlots counts each user's tool calls in flight and, apart from them,
// each user's open event long-polls; both are capped at max
// (server.max_concurrent_calls_per_user), so a user waiting on its inbox
// keeps every call slot.
type userSlots struct {
	max   int
	mu    sync.Mutex
	n     map[string]int // tool calls
	waits map[string]int // event long-polls
}

func (u *userSlots) acquire(user string) bool { return u.take(&u.n, user) }

func (u *userSlots) release(user string) { u.give(&u.n, user) }

// acquireWait takes one of the user's long-poll slots.
func (u *userSlots) acquireWait(user string) bool { return u.take(&u.waits, user) }

func (u *userSlots) releaseWait(user string) { u.give(&u.waits, user) }

func (u *userSlots) take(m *map[string]int, user string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if *m == nil {
		*m = map[string]int{}
	}
	if (*m)[user] >= u.max {
		return false
	}
	(*m)[user]++
	return true
}

func (u *userSlots) give(m *map[string]int, user string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if (*m)[user]--; (*m)[user] <= 0 {
		delete(*m, user)
	}
}
