package mcpflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// Storage and payload limits of the behaviour spec (§1.8, §2.1, §2.7).
const (
	MaxServerNameChars      = 128
	MaxTaskNameChars        = 255
	MaxRemoteTaskIDChars    = 255
	MaxErrorChars           = 4000
	MaxAPIErrorChars        = 500
	MaxPayloadBytes         = 65536 // input_required and result_artifact
	MaxPollAfterSeconds     = 86400 // remote poll hints are capped at 24 h
	DefaultMaxResultBytes   = 65536
	DefaultResultPreviewMax = 2000
)

// Bounds are the configurable payload limits (config.yaml mcp_tasks).
type Bounds struct {
	MaxResultBytes        int // 1024..10485760
	ResultPreviewMaxChars int // 64..100000
}

// DefaultBounds returns the spec defaults.
func DefaultBounds() Bounds {
	return Bounds{MaxResultBytes: DefaultMaxResultBytes, ResultPreviewMaxChars: DefaultResultPreviewMax}
}

// TruncateChars returns s cut to at most n characters (runes). Invalid UTF-8
// bytes count as one character each and come out as U+FFFD.
func TruncateChars(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n && utf8.ValidString(s) {
		return s
	}
	var b []rune
	for _, r := range s {
		if len(b) == n {
			break
		}
		b = append(b, r)
	}
	return string(b)
}

// StrictJSON encodes v as compact UTF-8 JSON without HTML escaping. It fails
// for values JSON cannot hold (NaN, ±Inf, channels, functions).
func StrictJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ValidatePollAfter checks a remote poll hint: finite and greater than zero.
func ValidatePollAfter(seconds float64) error {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) || seconds <= 0 {
		return fmt.Errorf("poll_after_seconds must be a finite positive number")
	}
	return nil
}

// PollTiming holds the poll scheduling numbers of config.yaml mcp_tasks.
type PollTiming struct {
	PollInterval          time.Duration // poll_interval_seconds
	InputRequiredInterval time.Duration // input_required_poll_interval_seconds
	MaxPollBackoff        time.Duration // max_poll_backoff_seconds
	DegradedAfterErrors   int           // tracking_degraded_after_errors
}

// NextPollDelay returns how long to wait after a successful poll that
// returned s, and false when s is not pollable (spec §2.6 next_poll_at): the
// remote hint or the poll interval; at least the input_required interval
// while input is required; never more than 24 h.
func (p PollTiming) NextPollDelay(s Snapshot) (time.Duration, bool) {
	if !s.Status.IsPollable() {
		return 0, false
	}
	secs := p.PollInterval.Seconds()
	if s.PollAfterSeconds != nil && ValidatePollAfter(*s.PollAfterSeconds) == nil {
		secs = *s.PollAfterSeconds
	}
	if s.Status == StatusInputRequired {
		secs = math.Max(secs, p.InputRequiredInterval.Seconds())
	}
	secs = math.Min(secs, MaxPollAfterSeconds)
	return time.Duration(secs * float64(time.Second)), true
}

// ErrorBackoff returns the delay after a failed poll, cancel or delivery
// attempt, given n earlier consecutive failures: poll_interval × 2^min(n,16),
// capped at max_poll_backoff (5, 10, 20, 40, 80, 160, 300, 300… s with the
// defaults).
func (p PollTiming) ErrorBackoff(n int) time.Duration {
	if n < 0 {
		n = 0
	}
	if n > 16 {
		n = 16
	}
	d := p.PollInterval * time.Duration(1<<n)
	if d > p.MaxPollBackoff || d <= 0 {
		return p.MaxPollBackoff
	}
	return d
}

// TrackingDegraded reports whether consecutive poll errors reached the
// threshold.
func (p PollTiming) TrackingDegraded(consecutiveErrors int) bool {
	return p.DegradedAfterErrors > 0 && consecutiveErrors >= p.DegradedAfterErrors
}
