package mcpflow_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

const hintError = "poll_after_seconds must be a finite positive number"

func TestNewSnapshot(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		snap    mcpflow.Snapshot
		wantErr string
	}{
		{name: "submitted", snap: mcpflow.Snapshot{Status: mcpflow.StatusSubmitted}},
		{name: "working", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking}},
		{name: "completed with result", snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"ok": true}}},
		{name: "failed with error", snap: mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: ptr("boom")}},
		{name: "cancelled", snap: mcpflow.Snapshot{Status: mcpflow.StatusCancelled}},
		{name: "input_required with payload", snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"question": "continue?"}}},
		{name: "input_required with empty payload", snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{}}},
		{name: "input_required without payload", snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired}, wantErr: "input_required payload"},
		{name: "payload on another status is allowed", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, InputRequired: map[string]any{"x": 1}}},
		{name: "unknown status", snap: mcpflow.Snapshot{Status: "running"}, wantErr: `unknown MCP task status "running"`},
		{name: "empty status", snap: mcpflow.Snapshot{}, wantErr: `unknown MCP task status ""`},
		{name: "upper-case status", snap: mcpflow.Snapshot{Status: "WORKING"}, wantErr: "unknown MCP task status"},
		{name: "hint 12.5 accepted", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(12.5)}},
		{name: "hint 1e20 accepted", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(1e20)}},
		{name: "hint on terminal status accepted", snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, PollAfterSeconds: ptr(1.0)}},
		{name: "hint NaN", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(math.NaN())}, wantErr: hintError},
		{name: "hint +Inf", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(math.Inf(1))}, wantErr: hintError},
		{name: "hint -Inf", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(math.Inf(-1))}, wantErr: hintError},
		{name: "hint 0", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(0.0)}, wantErr: hintError},
		{name: "hint -1", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(-1.0)}, wantErr: hintError},
		{name: "bad hint on terminal status", snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, PollAfterSeconds: ptr(0.0)}, wantErr: hintError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := mcpflow.NewSnapshot(tt.snap)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Error(t, tt.snap.Validate())
				require.Equal(t, mcpflow.Snapshot{}, got)
				return
			}
			require.NoError(t, err)
			require.NoError(t, tt.snap.Validate())
			require.Equal(t, tt.snap, got)
		})
	}
}

func TestSnapshotHintErrorIsExact(t *testing.T) {
	t.Parallel()

	for _, h := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -1} {
		_, err := mcpflow.NewSnapshot(mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(h)})
		require.EqualError(t, err, hintError, "hint %v", h)
	}
}

// A status given as a string (as a driver decodes it) is coerced to the enum.
func TestSnapshotStatusFromJSON(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in      string
		want    mcpflow.Status
		wantErr string
	}{
		{in: `{"status":"working","poll_after_seconds":12.5}`, want: mcpflow.StatusWorking},
		{in: `{"status":"completed","result":{"a":1}}`, want: mcpflow.StatusCompleted},
		{in: `{"status":"input_required","input_required":{"q":"?"}}`, want: mcpflow.StatusInputRequired},
		{in: `{"status":"input_required"}`, wantErr: "input_required payload"},
		{in: `{"status":"input_required","input_required":null}`, wantErr: "input_required payload"},
		{in: `{"status":"queued"}`, wantErr: `unknown MCP task status "queued"`},
		{in: `{"status":"working","poll_after_seconds":0}`, wantErr: hintError},
		{in: `{"status":"working","poll_after_seconds":-1}`, wantErr: hintError},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			var s mcpflow.Snapshot
			require.NoError(t, json.Unmarshal([]byte(tt.in), &s))
			got, err := mcpflow.NewSnapshot(s)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got.Status)
		})
	}
}

// Snapshots cross process boundaries as JSON (Temporal payloads): a valid
// snapshot must stay valid after a round trip.
func TestSnapshotJSONRoundTripStaysValid(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		snap mcpflow.Snapshot
	}{
		{name: "working with hint", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(12.5)}},
		{name: "input_required with payload", snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"q": "?"}}},
		{name: "input_required with empty payload", snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{}}},
		{name: "completed with falsy result", snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: false}},
		{name: "completed with artifact", snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, ResultArtifact: map[string]string{"path": "/out"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, tt.snap.Validate())
			b, err := json.Marshal(tt.snap)
			require.NoError(t, err)
			var back mcpflow.Snapshot
			require.NoError(t, json.Unmarshal(b, &back))
			require.NoError(t, back.Validate(), "after round trip through %s", b)
			require.Equal(t, tt.snap.Status, back.Status)
			require.Equal(t, tt.snap.Result, back.Result)
		})
	}
}

// encodedLen returns the strict JSON size of v.
func encodedLen(t *testing.T, v any) int {
	t.Helper()
	b, err := mcpflow.StrictJSON(v)
	require.NoError(t, err)
	return len(b)
}

// payloadOfSize returns a one-key object whose strict JSON encoding is
// exactly n bytes, built from fill characters of one byte each.
func payloadOfSize(t *testing.T, n int, fill string) map[string]string {
	t.Helper()
	require.Len(t, fill, 1)
	m := map[string]string{"k": strings.Repeat(fill, n-len(`{"k":""}`))}
	require.Equal(t, n, encodedLen(t, m))
	return m
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestSnapshotNormalizeError(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "short kept", in: "boom", want: "boom"},
		{name: "empty kept", in: "", want: ""},
		{name: "exactly 4000 kept", in: strings.Repeat("a", 4000), want: strings.Repeat("a", 4000)},
		{name: "4001 cut", in: strings.Repeat("a", 4001), want: strings.Repeat("a", 4000)},
		{name: "5000 cut to 4000 (scenario 23)", in: strings.Repeat("x", 5000), want: strings.Repeat("x", 4000)},
		{name: "multi-byte counts as one", in: strings.Repeat("é", 4001), want: strings.Repeat("é", 4000)},
		{name: "multi-byte exactly 4000 kept", in: strings.Repeat("日", 4000), want: strings.Repeat("日", 4000)},
		{name: "emoji", in: strings.Repeat("😀", 4500), want: strings.Repeat("😀", 4000)},
		{name: "mixed widths", in: "a" + strings.Repeat("é", 3998) + "日😀z", want: "a" + strings.Repeat("é", 3998) + "日"},
	}
	for _, tt := range tests {
		for _, status := range []mcpflow.Status{mcpflow.StatusFailed, mcpflow.StatusSubmitted, mcpflow.StatusWorking} {
			t.Run(tt.name+"/"+string(status), func(t *testing.T) {
				t.Parallel()
				in := mcpflow.Snapshot{Status: status, Error: ptr(tt.in)}
				got, err := in.Normalize(mcpflow.DefaultBounds())
				require.NoError(t, err)
				require.NotNil(t, got.Error)
				require.Equal(t, tt.want, *got.Error)
				require.LessOrEqual(t, utf8.RuneCountInString(*got.Error), 4000)
				require.Equal(t, tt.in, *in.Error, "input must not change")
			})
		}
	}
}

func TestSnapshotNormalizeNilFieldsStayNil(t *testing.T) {
	t.Parallel()

	in := mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(3.0)}
	got, err := in.Normalize(mcpflow.DefaultBounds())
	require.NoError(t, err)
	require.Equal(t, in, got)
}

func TestSnapshotNormalizePayloads(t *testing.T) {
	t.Parallel()

	type field int
	const (
		artifact field = iota
		input
	)
	tests := []struct {
		name    string
		field   field
		size    int
		fill    string
		wantErr string
	}{
		{name: "artifact small", field: artifact, size: 100, fill: "a"},
		{name: "artifact exactly 65536", field: artifact, size: 65536, fill: "a"},
		{name: "artifact 65537", field: artifact, size: 65537, fill: "a", wantErr: "MCP task result_artifact payload exceeds the 65536-byte limit"},
		{name: "artifact html chars exactly 65536", field: artifact, size: 65536, fill: "<"},
		{name: "artifact ampersands exactly 65536", field: artifact, size: 65536, fill: "&"},
		{name: "artifact html chars 65537", field: artifact, size: 65537, fill: ">", wantErr: "65536-byte limit"},
		{name: "input small", field: input, size: 100, fill: "a"},
		{name: "input exactly 65536", field: input, size: 65536, fill: "a"},
		{name: "input 65537", field: input, size: 65537, fill: "a", wantErr: "MCP task input_required payload exceeds the 65536-byte limit"},
		{name: "input html chars exactly 65536", field: input, size: 65536, fill: "<"},
		{name: "input much larger (scenario 25)", field: input, size: 200000, fill: "a", wantErr: "65536-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			payload := payloadOfSize(t, tt.size, tt.fill)
			in := mcpflow.Snapshot{Status: mcpflow.StatusCompleted, ResultArtifact: payload}
			if tt.field == input {
				in = mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: anyMap(payload)}
			}
			got, err := in.Normalize(mcpflow.DefaultBounds())
			if tt.wantErr != "" {
				var pe *mcpflow.ProtocolError
				require.ErrorAs(t, err, &pe)
				require.Contains(t, pe.Message, tt.wantErr)
				require.True(t, mcpflow.IsProtocolError(err))
				require.Equal(t, mcpflow.Snapshot{}, got, "a rejected payload is not returned")
				return
			}
			require.NoError(t, err)
			require.Equal(t, in, got)
		})
	}
}

func TestSnapshotNormalizePayloadCountsBytesNotChars(t *testing.T) {
	t.Parallel()

	// 30,000 two-byte characters: 30,000 chars but over 60,000 bytes;
	// 33,000 of them exceed the limit in bytes though not in characters.
	ok := map[string]any{"k": strings.Repeat("é", 30000)}
	_, err := mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: ok}.Normalize(mcpflow.DefaultBounds())
	require.NoError(t, err)

	tooBig := map[string]any{"k": strings.Repeat("é", 33000)}
	_, err = mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: tooBig}.Normalize(mcpflow.DefaultBounds())
	require.ErrorContains(t, err, "65536-byte limit")
	require.True(t, mcpflow.IsProtocolError(err))

	art := map[string]string{"k": strings.Repeat("日", 22000)} // 66,000+ bytes
	_, err = mcpflow.Snapshot{Status: mcpflow.StatusCompleted, ResultArtifact: art}.Normalize(mcpflow.DefaultBounds())
	require.ErrorContains(t, err, "MCP task result_artifact payload exceeds the 65536-byte limit")
}

func TestSnapshotNormalizeInvalidJSON(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		snap    mcpflow.Snapshot
		wantErr string
	}{
		{name: "result NaN (scenario 28)", snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: math.NaN()}, wantErr: "MCP task result is not valid JSON"},
		{name: "result nested NaN", snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"v": []any{1.0, math.NaN()}}}, wantErr: "MCP task result is not valid JSON"},
		{name: "result +Inf", snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: math.Inf(1)}, wantErr: "not valid JSON"},
		{name: "result -Inf", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, Result: math.Inf(-1)}, wantErr: "not valid JSON"},
		{name: "result channel", snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: make(chan int)}, wantErr: "not valid JSON"},
		{name: "input_required NaN", snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"x": math.NaN()}}, wantErr: "MCP task input_required payload is not valid JSON"},
		{name: "input_required Inf", snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"x": math.Inf(1)}}, wantErr: "MCP task input_required payload is not valid JSON"},
		{name: "unknown status", snap: mcpflow.Snapshot{Status: "running"}, wantErr: "unknown MCP task status"},
		{name: "bad hint", snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(math.NaN())}, wantErr: hintError},
		{name: "input_required without payload", snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired}, wantErr: "input_required payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.snap.Normalize(mcpflow.DefaultBounds())
			var pe *mcpflow.ProtocolError
			require.ErrorAs(t, err, &pe)
			require.Contains(t, pe.Message, tt.wantErr)
			require.Equal(t, mcpflow.EUpstream, mcpflow.ErrorCode(err))
			require.Equal(t, mcpflow.Snapshot{}, got)
		})
	}
}

func TestSnapshotNormalizeResult(t *testing.T) {
	t.Parallel()

	small := mcpflow.Bounds{MaxResultBytes: 64, ResultPreviewMaxChars: 24}
	longObject := map[string]any{"text": strings.Repeat("y", 200)}
	longObjectJSON := `{"text":"` + strings.Repeat("y", 200) + `"}`

	tests := []struct {
		name          string
		bounds        mcpflow.Bounds
		result        any
		preview       *string
		wantResult    any
		wantPreview   *string
		wantTruncated bool
	}{
		{name: "small object kept", bounds: small, result: map[string]any{"a": 1.0}, wantResult: map[string]any{"a": 1.0}},
		{name: "false kept", bounds: small, result: false, wantResult: false},
		{name: "zero kept", bounds: small, result: 0.0, wantResult: 0.0},
		{name: "empty string kept", bounds: small, result: "", wantResult: ""},
		{name: "string encoding exactly 64 bytes kept", bounds: small, result: strings.Repeat("s", 62), wantResult: strings.Repeat("s", 62)},
		{
			name:          "string encoding 65 bytes truncated",
			bounds:        small,
			result:        strings.Repeat("s", 63),
			wantPreview:   ptr(strings.Repeat("s", 24)),
			wantTruncated: true,
		},
		{
			name:       "html characters are not escaped in size accounting",
			bounds:     small,
			result:     strings.Repeat("<", 31) + strings.Repeat("&", 31),
			wantResult: strings.Repeat("<", 31) + strings.Repeat("&", 31),
		},
		{
			name:          "string preview taken from the string itself",
			bounds:        small,
			result:        "line \"one\"\n" + strings.Repeat("z", 100),
			wantPreview:   ptr("line \"one\"\n" + strings.Repeat("z", 13)),
			wantTruncated: true,
		},
		{
			name:          "object preview taken from encoded JSON",
			bounds:        small,
			result:        longObject,
			wantPreview:   ptr(longObjectJSON[:24]),
			wantTruncated: true,
		},
		{
			name:          "object preview keeps html characters unescaped",
			bounds:        small,
			result:        []any{strings.Repeat("<>&", 40)},
			wantPreview:   ptr(`["` + strings.Repeat("<>&", 7) + `<`),
			wantTruncated: true,
		},
		{
			name:          "multi-byte preview counts characters",
			bounds:        small,
			result:        strings.Repeat("é", 100),
			wantPreview:   ptr(strings.Repeat("é", 24)),
			wantTruncated: true,
		},
		{
			name:          "oversized result replaces a driver preview",
			bounds:        small,
			result:        strings.Repeat("n", 100),
			preview:       ptr("driver preview"),
			wantPreview:   ptr(strings.Repeat("n", 24)),
			wantTruncated: true,
		},
		{
			name:        "kept result keeps a short driver preview",
			bounds:      small,
			result:      "ok",
			preview:     ptr("short"),
			wantResult:  "ok",
			wantPreview: ptr("short"),
		},
		{
			name:        "long driver preview is cut",
			bounds:      small,
			result:      "ok",
			preview:     ptr(strings.Repeat("p", 30)),
			wantResult:  "ok",
			wantPreview: ptr(strings.Repeat("p", 24)),
		},
		{
			name:        "default bounds keep a 60 KiB result",
			bounds:      mcpflow.DefaultBounds(),
			result:      strings.Repeat("d", 60000),
			wantResult:  strings.Repeat("d", 60000),
			wantPreview: nil,
		},
		{
			name:          "default bounds truncate at 65,536 bytes with 2,000-char preview",
			bounds:        mcpflow.DefaultBounds(),
			result:        strings.Repeat("d", 65535),
			wantPreview:   ptr(strings.Repeat("d", 2000)),
			wantTruncated: true,
		},
		{
			name:       "zero bounds fall back to defaults",
			bounds:     mcpflow.Bounds{},
			result:     strings.Repeat("d", 1000),
			wantResult: strings.Repeat("d", 1000),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: tt.result, ResultPreview: tt.preview}
			got, err := in.Normalize(tt.bounds)
			require.NoError(t, err)
			require.Equal(t, tt.wantResult, got.Result)
			require.Equal(t, tt.wantPreview, got.ResultPreview)
			require.Equal(t, tt.wantTruncated, got.ResultTruncated)
			if got.Result != nil {
				limit := tt.bounds.MaxResultBytes
				if limit == 0 {
					limit = mcpflow.DefaultMaxResultBytes
				}
				require.LessOrEqual(t, encodedLen(t, got.Result), limit)
			}
			require.Equal(t, tt.result, in.Result, "input must not change")
		})
	}
}

// Scenario 26: result > max_result_bytes (64) with preview limit 24.
func TestSnapshotNormalizeScenario26(t *testing.T) {
	t.Parallel()

	artifact := map[string]string{"path": "/outputs/report.json", "mime_type": "application/json"}
	in, err := mcpflow.NewSnapshot(mcpflow.Snapshot{
		Status:         mcpflow.StatusCompleted,
		Result:         map[string]any{"rows": strings.Repeat("r", 500)},
		ResultArtifact: artifact,
	})
	require.NoError(t, err)

	got, err := in.Normalize(mcpflow.Bounds{MaxResultBytes: 64, ResultPreviewMaxChars: 24})
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, got.Status)
	require.Nil(t, got.Result)
	require.True(t, got.ResultTruncated)
	require.NotNil(t, got.ResultPreview)
	require.Equal(t, 24, utf8.RuneCountInString(*got.ResultPreview))
	require.Equal(t, `{"rows":"`+strings.Repeat("r", 15), *got.ResultPreview)
	require.Equal(t, artifact, got.ResultArtifact)
	require.NoError(t, got.Validate())
}

// Scenario 20: an input_required snapshot keeps its payload.
func TestSnapshotNormalizeKeepsInputRequired(t *testing.T) {
	t.Parallel()

	payload := map[string]any{"question": "Approve the <plan> & continue?", "options": []any{"yes", "no"}}
	in := mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: payload, PollAfterSeconds: ptr(2.0)}
	got, err := in.Normalize(mcpflow.DefaultBounds())
	require.NoError(t, err)
	require.Equal(t, in, got)
	require.True(t, got.IsPollable())
	require.True(t, got.NeedsAttention())
}

// TestSnapshotJSONKeepsNumbers: a result and a question cross JSON
// payloads (Temporal) with every digit.
func TestSnapshotJSONKeepsNumbers(t *testing.T) {
	in := `{"status":"completed","result":{"pages":9007199254740993,"ratio":0.10000000000000000555,"list":[18446744073709551615]},"input_required":{"max":12345678901234567890},"poll_after_seconds":1.5}`
	var s mcpflow.Snapshot
	require.NoError(t, json.Unmarshal([]byte(in), &s))
	require.Equal(t, json.Number("9007199254740993"), s.Result.(map[string]any)["pages"])
	require.Equal(t, json.Number("12345678901234567890"), s.InputRequired["max"])
	require.Equal(t, 1.5, *s.PollAfterSeconds)
	out, err := json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, in, string(out))
	require.Contains(t, string(out), "9007199254740993")
	require.Contains(t, string(out), "0.10000000000000000555")
	require.Error(t, json.Unmarshal([]byte(`{"status": 7}`), &s))
}

// A progress message is kept (bounded); an empty one is none.
func TestSnapshotNormalizeMessage(t *testing.T) {
	t.Parallel()
	msg := "step 2 of 3"
	out, err := mcpflow.Snapshot{Status: mcpflow.StatusWorking, Message: &msg}.Normalize(mcpflow.DefaultBounds())
	require.NoError(t, err)
	require.Equal(t, &msg, out.Message)
	empty := ""
	out, err = mcpflow.Snapshot{Status: mcpflow.StatusWorking, Message: &empty}.Normalize(mcpflow.DefaultBounds())
	require.NoError(t, err)
	require.Nil(t, out.Message)
	long := strings.Repeat("ü", 2*mcpflow.MaxAPIErrorChars)
	out, err = mcpflow.Snapshot{Status: mcpflow.StatusWorking, Message: &long}.Normalize(mcpflow.DefaultBounds())
	require.NoError(t, err)
	require.Equal(t, mcpflow.MaxAPIErrorChars, utf8.RuneCountInString(*out.Message))
}

// TestSnapshotNormalizeContent: a completed native task's content blocks
// are kept compact within the result bound, and dropped, never failing the
// task, when they cannot be kept: too large, not a JSON array, or on a task
// that is not completed. The flag that says where Result came from goes
// with them.
func TestSnapshotNormalizeContent(t *testing.T) {
	t.Parallel()

	small := mcpflow.Bounds{MaxResultBytes: 64, ResultPreviewMaxChars: 24}
	fits := `[{"type":"text","text":"` + strings.Repeat("x", 64-len(`[{"type":"text","text":""}]`)) + `"}]`
	require.Len(t, fits, 64)
	tooBig := `[{"type":"text","text":"` + strings.Repeat("x", 64-len(`[{"type":"text","text":""}]`)+1) + `"}]`
	long := `[{"type":"text","text":"` + strings.Repeat("d", 60000) + `"}]`

	tests := []struct {
		name        string
		status      mcpflow.Status
		bounds      mcpflow.Bounds
		result      any
		content     string
		structured  bool
		wantContent string // "" for none (and then no flag)
	}{
		{name: "kept with the structured flag", status: mcpflow.StatusCompleted, bounds: small,
			result: map[string]any{"a": 1.0}, content: `[{"type":"text","text":"a"}]`, structured: true, wantContent: `[{"type":"text","text":"a"}]`},
		{name: "kept without the flag", status: mcpflow.StatusCompleted, bounds: small,
			result: []any{"a"}, content: `[{"type":"text","text":"a"}]`, wantContent: `[{"type":"text","text":"a"}]`},
		{name: "compacted, escapes and key order kept", status: mcpflow.StatusCompleted, bounds: small,
			result: map[string]any{}, content: " [ {\"text\": \"\\u003c é\",\n \"type\": \"text\"} ] ", structured: true,
			wantContent: `[{"text":"\u003c é","type":"text"}]`},
		{name: "empty blocks kept", status: mcpflow.StatusCompleted, bounds: small,
			result: map[string]any{"a": 1.0}, content: `[]`, structured: true, wantContent: `[]`},
		{name: "exactly the bound kept", status: mcpflow.StatusCompleted, bounds: small,
			result: map[string]any{}, content: fits, structured: true, wantContent: fits},
		{name: "one byte over the bound dropped", status: mcpflow.StatusCompleted, bounds: small,
			result: map[string]any{}, content: tooBig, structured: true},
		{name: "spacing does not count against the bound", status: mcpflow.StatusCompleted, bounds: small,
			result: map[string]any{}, content: strings.Replace(fits, `,"text"`, ",     \n\t  \"text\"", 1), structured: true, wantContent: fits},
		{name: "not JSON dropped", status: mcpflow.StatusCompleted, bounds: small,
			result: map[string]any{}, content: `[{"type":`, structured: true},
		{name: "an object is not blocks", status: mcpflow.StatusCompleted, bounds: small,
			result: map[string]any{}, content: `{"type":"text","text":"a"}`, structured: true},
		{name: "null is no blocks", status: mcpflow.StatusCompleted, bounds: small,
			result: map[string]any{}, content: `null`, structured: true},
		{name: "failed keeps its tool error's blocks", status: mcpflow.StatusFailed, bounds: small,
			content: `[{"type":"text","text":"a"}]`, wantContent: `[{"type":"text","text":"a"}]`},
		{name: "neither completed nor failed dropped", status: mcpflow.StatusWorking, bounds: small,
			content: `[{"type":"text","text":"a"}]`, structured: true},
		{name: "default bounds", status: mcpflow.StatusCompleted, bounds: mcpflow.Bounds{},
			result: []any{}, content: long, wantContent: long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := mcpflow.Snapshot{Status: tt.status, Result: tt.result, Content: json.RawMessage(tt.content), ResultStructured: tt.structured}
			if tt.status == mcpflow.StatusFailed {
				in.Error = ptr("boom")
			}
			got, err := in.Normalize(tt.bounds)
			require.NoError(t, err, "content never fails the task")
			if tt.wantContent == "" {
				require.Nil(t, got.Content)
				require.False(t, got.ResultStructured, "no flag without blocks")
			} else {
				require.Equal(t, tt.wantContent, string(got.Content))
				require.Equal(t, tt.structured, got.ResultStructured)
			}
			require.Equal(t, tt.result, got.Result, "the result is bounded on its own")
			require.Equal(t, tt.content, string(in.Content), "input must not change")
			again, err := got.Normalize(tt.bounds)
			require.NoError(t, err)
			require.Equal(t, got, again, "idempotent")
		})
	}

	// A result too large for the bound becomes a preview; blocks that fit
	// stay (the endpoint answers them with the preview).
	in := mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"big": strings.Repeat("b", 100)},
		Content: json.RawMessage(`[{"type":"text","text":"short"}]`), ResultStructured: true}
	got, err := in.Normalize(small)
	require.NoError(t, err)
	require.Nil(t, got.Result)
	require.True(t, got.ResultTruncated)
	require.JSONEq(t, `[{"type":"text","text":"short"}]`, string(got.Content))
	require.True(t, got.ResultStructured)
}

// TestSnapshotContentJSON: content blocks cross Temporal's JSON payloads as
// raw JSON, and a snapshot without them encodes as it did before they
// existed (so fingerprints of older snapshots do not change).
func TestSnapshotContentJSON(t *testing.T) {
	t.Parallel()
	snap := mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"n": json.Number("9007199254740993")},
		Content: json.RawMessage(`[{"type":"image","data":"aGk=","mimeType":"image/png"}]`), ResultStructured: true}
	b, err := json.Marshal(snap)
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"completed","result":{"n":9007199254740993},"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"result_structured":true}`, string(b))
	var back mcpflow.Snapshot
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, snap, back)

	b, err = json.Marshal(mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: "done"})
	require.NoError(t, err)
	require.Equal(t, `{"status":"completed","result":"done"}`, string(b))
}
