package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
)

// Heartbeater records an activity heartbeat synchronously: when it returns
// nil the server has the details. client.Client is one.
type Heartbeater interface {
	RecordActivityHeartbeat(ctx context.Context, taskToken []byte, details ...any) error
}

// submitProgress is the Submit activity's heartbeat detail. Sent is
// recorded (and acknowledged by the server) before the submit tool call is
// sent, so an attempt that finds it set knows an earlier attempt may have
// started the remote task, and one that does not knows none did.
type submitProgress struct {
	Sent bool `json:"sent"`
}

// submitBeat heartbeats a running Submit attempt so the server notices a
// dead worker within the heartbeat timeout, and records the Sent marker.
// All its heartbeats go through one mutex, so the server's last detail
// never goes back from sent to not sent.
type submitBeat struct {
	hb    Heartbeater
	token []byte
	mu    sync.Mutex
	prog  submitProgress
	err   error // the marker could not be recorded: nothing was sent
	stopc chan struct{}
	done  chan struct{}
}

// startSubmitBeat starts heartbeating every third of the attempt's
// heartbeat timeout. Without a Heartbeater (tests) it does nothing and
// markSent records nothing; earlierAttemptSent then refuses every retry.
func startSubmitBeat(ctx context.Context, hb Heartbeater) *submitBeat {
	info := activity.GetInfo(ctx)
	b := &submitBeat{hb: hb, token: info.TaskToken, stopc: make(chan struct{}), done: make(chan struct{})}
	if hb == nil || info.HeartbeatTimeout <= 0 {
		close(b.done)
		return b
	}
	go func() {
		defer close(b.done)
		t := time.NewTicker(max(info.HeartbeatTimeout/3, 100*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-b.stopc:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				b.mu.Lock()
				// A failed beat is not fatal: the next one, or the
				// heartbeat timeout, settles it.
				_ = b.hb.RecordActivityHeartbeat(ctx, b.token, b.prog)
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// markSent records Sent before the submit is sent (mcpflow.WithBeforeSend).
func (b *submitBeat) markSent(ctx context.Context) error {
	if b.hb == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.hb.RecordActivityHeartbeat(ctx, b.token, submitProgress{Sent: true}); err != nil {
		b.err = fmt.Errorf("record that the submit is being sent: %w", err)
		return b.err
	}
	b.prog.Sent = true
	return nil
}

func (b *submitBeat) stop() {
	select {
	case <-b.stopc:
	default:
		close(b.stopc)
	}
	<-b.done
}

// markerFailed reports the error of a marker that could not be recorded.
func (b *submitBeat) markerFailed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// earlierAttemptSent reports whether an earlier attempt of this Submit may
// have sent the remote submit: its Sent marker is recorded, or, without a
// Heartbeater to keep markers, any earlier attempt at all.
func earlierAttemptSent(ctx context.Context, hb Heartbeater) bool {
	if activity.HasHeartbeatDetails(ctx) {
		var p submitProgress
		err := activity.GetHeartbeatDetails(ctx, &p)
		return err != nil || p.Sent
	}
	return hb == nil && activity.GetInfo(ctx).Attempt > 1
}
