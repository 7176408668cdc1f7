package mcpflow_test

import (
	"math"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

func ptr[T any](v T) *T { return &v }

// defaultTiming returns the mcp_tasks defaults of spec §1.8.
func defaultTiming() mcpflow.PollTiming {
	return mcpflow.PollTiming{
		PollInterval:          5 * time.Second,
		InputRequiredInterval: 60 * time.Second,
		MaxPollBackoff:        300 * time.Second,
		DegradedAfterErrors:   3,
	}
}

func TestDefaultBounds(t *testing.T) {
	t.Parallel()

	require.Equal(t, mcpflow.Bounds{MaxResultBytes: 65536, ResultPreviewMaxChars: 2000}, mcpflow.DefaultBounds())
}

func TestLimits(t *testing.T) {
	t.Parallel()

	require.Equal(t, 128, mcpflow.MaxServerNameChars)
	require.Equal(t, 255, mcpflow.MaxTaskNameChars)
	require.Equal(t, 255, mcpflow.MaxRemoteTaskIDChars)
	require.Equal(t, 4000, mcpflow.MaxErrorChars)
	require.Equal(t, 65536, mcpflow.MaxPayloadBytes)
	require.Equal(t, 86400, mcpflow.MaxPollAfterSeconds)
}

func TestTruncateChars(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{name: "empty", in: "", n: 5, want: ""},
		{name: "zero limit", in: "abc", n: 0, want: ""},
		{name: "negative limit", in: "abc", n: -1, want: ""},
		{name: "shorter", in: "abc", n: 5, want: "abc"},
		{name: "exact", in: "abcde", n: 5, want: "abcde"},
		{name: "longer", in: "abcdef", n: 5, want: "abcde"},
		{name: "one", in: "abcdef", n: 1, want: "a"},
		{name: "multi-byte counts as one", in: "ééééé", n: 3, want: "ééé"},
		{name: "multi-byte exact", in: "日本語", n: 3, want: "日本語"},
		{name: "emoji", in: "😀😀😀x", n: 2, want: "😀😀"},
		{name: "mixed", in: "aé日😀b", n: 4, want: "aé日😀"},
		{name: "invalid byte is one character", in: "a\xffbc", n: 2, want: "a\uFFFD"},
		{name: "invalid bytes replaced when short", in: "a\xff", n: 5, want: "a\uFFFD"},
		{name: "truncated sequence", in: "ab\xe6\x97", n: 4, want: "ab\uFFFD\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mcpflow.TruncateChars(tt.in, tt.n)
			require.Equal(t, tt.want, got)
			require.True(t, utf8.ValidString(got))
		})
	}
}

func TestStrictJSON(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      any
		want    string
		wantErr string
	}{
		{name: "compact object sorted keys", in: map[string]any{"b": 1, "a": []any{true, nil}}, want: `{"a":[true,null],"b":1}`},
		{name: "html not escaped", in: "<a href=\"x\">&</a>", want: `"<a href=\"x\">&</a>"`},
		{name: "utf-8 kept", in: "héllo 日本", want: `"héllo 日本"`},
		{name: "no trailing newline", in: 12.5, want: `12.5`},
		{name: "nil", in: nil, want: `null`},
		{name: "NaN", in: math.NaN(), wantErr: "unsupported value"},
		{name: "+Inf", in: math.Inf(1), wantErr: "unsupported value"},
		{name: "-Inf nested", in: map[string]any{"x": []any{math.Inf(-1)}}, wantErr: "unsupported value"},
		{name: "channel", in: make(chan int), wantErr: "unsupported type"},
		{name: "function", in: func() {}, wantErr: "unsupported type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := mcpflow.StrictJSON(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestValidatePollAfter(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   float64
		ok   bool
	}{
		{name: "NaN", in: math.NaN()},
		{name: "+Inf", in: math.Inf(1)},
		{name: "-Inf", in: math.Inf(-1)},
		{name: "zero", in: 0},
		{name: "negative zero", in: math.Copysign(0, -1)},
		{name: "minus one", in: -1},
		{name: "12.5", in: 12.5, ok: true},
		{name: "smallest positive", in: math.SmallestNonzeroFloat64, ok: true},
		{name: "huge", in: 1e20, ok: true},
		{name: "max float", in: math.MaxFloat64, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := mcpflow.ValidatePollAfter(tt.in)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, "poll_after_seconds must be a finite positive number")
		})
	}
}

func TestPollTimingNextPollDelay(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		timing   func(p *mcpflow.PollTiming)
		snap     mcpflow.Snapshot
		want     time.Duration
		pollable bool
	}{
		{
			name:     "working without hint uses poll interval",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusWorking},
			want:     5 * time.Second,
			pollable: true,
		},
		{
			name:     "submitted with hint 9 (scenario 1)",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusSubmitted, PollAfterSeconds: ptr(9.0)},
			want:     9 * time.Second,
			pollable: true,
		},
		{
			name:     "working with hint 12 (scenario 17)",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(12.0)},
			want:     12 * time.Second,
			pollable: true,
		},
		{
			name:     "fractional hint",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(12.5)},
			want:     12500 * time.Millisecond,
			pollable: true,
		},
		{
			name:     "hint shorter than the poll interval is used",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(1.0)},
			want:     time.Second,
			pollable: true,
		},
		{
			name:     "hint 1e20 capped to exactly one day (scenario 18)",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(1e20)},
			want:     24 * time.Hour,
			pollable: true,
		},
		{
			name:     "hint of exactly one day",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(86400.0)},
			want:     24 * time.Hour,
			pollable: true,
		},
		{
			name:     "max float hint capped",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusSubmitted, PollAfterSeconds: ptr(math.MaxFloat64)},
			want:     24 * time.Hour,
			pollable: true,
		},
		{
			name:     "huge poll interval capped",
			timing:   func(p *mcpflow.PollTiming) { p.PollInterval = 48 * time.Hour },
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusWorking},
			want:     24 * time.Hour,
			pollable: true,
		},
		{
			name:     "NaN hint falls back to poll interval",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(math.NaN())},
			want:     5 * time.Second,
			pollable: true,
		},
		{
			name:     "+Inf hint falls back to poll interval",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(math.Inf(1))},
			want:     5 * time.Second,
			pollable: true,
		},
		{
			name:     "negative hint falls back to poll interval",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(-1.0)},
			want:     5 * time.Second,
			pollable: true,
		},
		{
			name:     "input_required without hint floors at 60 s (scenario 20)",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"q": "?"}},
			want:     60 * time.Second,
			pollable: true,
		},
		{
			name:     "input_required short hint floors at 60 s",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{}, PollAfterSeconds: ptr(2.0)},
			want:     60 * time.Second,
			pollable: true,
		},
		{
			name:     "input_required longer hint wins",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{}, PollAfterSeconds: ptr(90.0)},
			want:     90 * time.Second,
			pollable: true,
		},
		{
			name:     "input_required huge hint capped",
			snap:     mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{}, PollAfterSeconds: ptr(1e20)},
			want:     24 * time.Hour,
			pollable: true,
		},
		{
			name: "completed is not polled",
			snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, PollAfterSeconds: ptr(12.0)},
		},
		{
			name: "failed is not polled",
			snap: mcpflow.Snapshot{Status: mcpflow.StatusFailed},
		},
		{
			name: "cancelled is not polled",
			snap: mcpflow.Snapshot{Status: mcpflow.StatusCancelled},
		},
		{
			name: "unknown status is not polled",
			snap: mcpflow.Snapshot{Status: "running"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := defaultTiming()
			if tt.timing != nil {
				tt.timing(&p)
			}
			got, ok := p.NextPollDelay(tt.snap)
			require.Equal(t, tt.pollable, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestPollTimingErrorBackoff(t *testing.T) {
	t.Parallel()

	t.Run("default sequence", func(t *testing.T) {
		t.Parallel()
		p := defaultTiming()
		want := []int{5, 10, 20, 40, 80, 160, 300, 300, 300}
		for n, secs := range want {
			require.Equal(t, time.Duration(secs)*time.Second, p.ErrorBackoff(n), "n=%d", n)
		}
	})

	tests := []struct {
		name   string
		timing func(p *mcpflow.PollTiming)
		n      int
		want   time.Duration
	}{
		{name: "negative n is treated as zero", n: -3, want: 5 * time.Second},
		{name: "n 16", n: 16, want: 300 * time.Second},
		{name: "n 17", n: 17, want: 300 * time.Second},
		{name: "n 63", n: 63, want: 300 * time.Second},
		{name: "n 64", n: 64, want: 300 * time.Second},
		{name: "n 1000 does not overflow", n: 1000, want: 300 * time.Second},
		{name: "n max int does not overflow", n: math.MaxInt, want: 300 * time.Second},
		{
			name:   "scenario 21: count 4 with max backoff 30",
			timing: func(p *mcpflow.PollTiming) { p.MaxPollBackoff = 30 * time.Second },
			n:      4,
			want:   30 * time.Second,
		},
		{
			name: "scenario 13: count 3 -> 40 s",
			n:    3,
			want: 40 * time.Second,
		},
		{
			name:   "largest config bounds, n 16 uncapped",
			timing: func(p *mcpflow.PollTiming) { p.PollInterval = 300 * time.Second; p.MaxPollBackoff = 1 << 62 },
			n:      1000,
			want:   300 * time.Second * 65536,
		},
		{
			name:   "max backoff smaller than poll interval",
			timing: func(p *mcpflow.PollTiming) { p.PollInterval = 10 * time.Second; p.MaxPollBackoff = time.Second },
			n:      0,
			want:   time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := defaultTiming()
			if tt.timing != nil {
				tt.timing(&p)
			}
			require.Equal(t, tt.want, p.ErrorBackoff(tt.n))
		})
	}
}

func TestPollTimingErrorBackoffMonotonic(t *testing.T) {
	t.Parallel()

	for _, interval := range []time.Duration{time.Second, 5 * time.Second, 300 * time.Second} {
		for _, maxBackoff := range []time.Duration{time.Second, 300 * time.Second, 3600 * time.Second} {
			p := mcpflow.PollTiming{PollInterval: interval, MaxPollBackoff: maxBackoff}
			prev := time.Duration(0)
			for n := 0; n < 200; n++ {
				d := p.ErrorBackoff(n)
				require.Positive(t, d)
				require.LessOrEqual(t, d, maxBackoff)
				require.GreaterOrEqual(t, d, prev, "interval=%s max=%s n=%d", interval, maxBackoff, n)
				prev = d
			}
		}
	}
}

func TestPollTimingTrackingDegraded(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		threshold int
		errors    int
		want      bool
	}{
		{name: "no errors", threshold: 3, errors: 0},
		{name: "below threshold", threshold: 3, errors: 2},
		{name: "at threshold", threshold: 3, errors: 3, want: true},
		{name: "above threshold", threshold: 3, errors: 50, want: true},
		{name: "threshold 1 with one error", threshold: 1, errors: 1, want: true},
		{name: "threshold 1 with no error", threshold: 1, errors: 0},
		{name: "threshold 100", threshold: 100, errors: 99},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := defaultTiming()
			p.DegradedAfterErrors = tt.threshold
			require.Equal(t, tt.want, p.TrackingDegraded(tt.errors))
		})
	}
}
