package session

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReview2ChurnThenClose: Subscribe, unsubscribe and HearLists from
// several goroutines while the server acknowledges, cuts and answers
// streams, and Close in the middle of it: nothing deadlocks, and TestMain's
// goleak finds no listener, Listen or stream left once the sessions closed.
func TestReview2ChurnThenClose(t *testing.T) {
	for round := range 20 {
		func() {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			srv := newReview2Server(t)
			n := 0
			var nmu sync.Mutex
			srv.holdAck = func(listenFilter2) (bool, <-chan struct{}) {
				nmu.Lock()
				defer nmu.Unlock()
				n++
				return n%3 == 0, nil
			}
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case st := <-srv.opened:
						switch round % 3 {
						case 1:
							st.end <- "abort"
						case 2:
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
					for i := range 10 {
						if g == 0 && i == 5 {
							s.HearLists()
						}
						sctx, scancel := context.WithTimeout(ctx, time.Duration(i%3)*50*time.Millisecond+time.Millisecond)
						u, err := s.Subscribe(sctx, fmt.Sprintf("test://%d", (g+i)%3), func() {})
						scancel()
						if err == nil && i%2 == 0 {
							u()
						}
					}
				}()
			}
			if round%2 == 1 {
				time.Sleep(20 * time.Millisecond)
				_ = s.Close()
			}
			wg.Wait()
			_ = s.Close()
		}()
	}
}

// TestReview2LastUnsubscribeEndsTheStream: subscriptions to two URIs,
// ended (one on another goroutine) again and again: once the last is
// ended, no subscriptions/listen stream is left open at the server.
func TestReview2LastUnsubscribeEndsTheStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	srv := newReview2Server(t)
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	for range 50 {
		u1, err := s.Subscribe(ctx, "test://a", func() {})
		require.NoError(t, err)
		u2, err := s.Subscribe(ctx, "test://b", func() {})
		require.NoError(t, err)
		go u1()
		u2()
		u1()
	}
	for {
		open := 0
		srv.mu.Lock()
		for _, st := range srv.streams {
			st.mu.Lock()
			if !st.closed {
				open++
			}
			st.mu.Unlock()
		}
		srv.mu.Unlock()
		if open == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d subscriptions/listen streams still open after the last unsubscribe", open)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
