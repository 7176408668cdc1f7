package session

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReview3ChurnWithRefusals (holds; regression test): Subscribes (some
// given up by their ctx), unsubscribes and HearLists from several
// goroutines while the server refuses, holds, acknowledges and cuts
// streams at random, and Close in the middle: every Subscribe returns
// (releaseLocked never blocks under s.subs.mu, a refusal and an ack of the
// same URI never both reach one waiter's channel), and TestMain's goleak
// finds no listener, Listen or stream left once the sessions closed.
func TestReview3ChurnWithRefusals(t *testing.T) {
	for round := range 12 {
		func() {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			srv := newReview3Server(t)
			var mu sync.Mutex
			rng := rand.New(rand.NewPCG(uint64(round), 3))
			roll := func(n int) int {
				mu.Lock()
				defer mu.Unlock()
				return rng.IntN(n)
			}
			srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
				if slices.Contains(f.ResourceSubscriptions, "test://2") && roll(2) == 0 {
					return review3Refused
				}
				return nil
			}
			srv.holdAck = func(listenFilter2) (bool, <-chan struct{}) {
				if roll(4) == 0 {
					ch := make(chan struct{})
					time.AfterFunc(time.Duration(roll(80))*time.Millisecond, func() { close(ch) })
					return true, ch
				}
				return false, nil
			}
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case st := <-srv.opened:
						switch roll(4) {
						case 0:
							st.end <- "abort"
						case 1:
							st.end <- "result"
						}
					case <-stop:
						return
					}
				}
			}()
			s := dialReview2(t, ctx, srv.URL, nil)
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 8 {
						if g == 0 && i == 3 {
							s.HearLists()
						}
						sctx, scancel := context.WithTimeout(ctx, time.Duration(roll(120))*time.Millisecond+time.Millisecond)
						u, err := s.Subscribe(sctx, fmt.Sprintf("test://%d", (g+i)%4), func() {})
						scancel()
						if err == nil && roll(2) == 0 {
							u()
						}
					}
				}()
			}
			if round%2 == 1 {
				time.Sleep(time.Duration(roll(100)) * time.Millisecond)
				_ = s.Close()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatal("Subscribes or unsubscribes still blocked after 20 s")
			}
			require.NoError(t, s.Close())
		}()
	}
}

// TestReview3SubscribeOnAClosedSession: a first Subscribe waiting for its
// stream's acknowledgement when the session closes is not told: awaitStream
// does not watch s.done, so it waits out subsAckWait and returns success
// (an unsubscribe and a nil error) for a session that is gone. (The wait
// on the ack predates 500b752.)
func TestReview3SubscribeOnAClosedSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	srv := newReview2Server(t)
	srv.holdAck = func(listenFilter2) (bool, <-chan struct{}) { return true, nil }
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	type result struct {
		u   func()
		err error
	}
	done := make(chan result, 1)
	go func() {
		u, err := s.Subscribe(ctx, "test://a", func() {})
		done <- result{u, err}
	}()
	select {
	case <-srv.opened: // Subscribe waits for the ack now
	case <-ctx.Done():
		t.Fatal("no stream")
	}
	require.NoError(t, s.Close())
	r := <-done
	if r.err == nil {
		r.u()
	}
	require.Error(t, r.err, "Subscribe returned success after the session closed")
}
