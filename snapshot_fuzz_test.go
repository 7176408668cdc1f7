package mcpflow_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// Result modes of FuzzSnapshotNormalize.
const (
	fuzzResultJSON   = iota // result decoded from the JSON bytes, when they parse
	fuzzResultString        // result is the bytes as a string
	fuzzResultFloat         // result is the float of hintBits (NaN and ±Inf included)
	fuzzResultNested        // result is an object holding that float
	fuzzResultModes
)

// FuzzSnapshotNormalize checks that Normalize never panics, fails only with
// a *ProtocolError, and that whatever it returns obeys the bounds of spec
// §2.7.
func FuzzSnapshotNormalize(f *testing.F) {
	nan := math.Float64bits(math.NaN())
	inf := math.Float64bits(math.Inf(1))
	negInf := math.Float64bits(math.Inf(-1))
	twelveHalf := math.Float64bits(12.5)
	huge := math.Float64bits(1e20)
	// padFits makes {"pad":"…"} exactly 65,536 bytes.
	const padFits = uint32(mcpflow.MaxPayloadBytes - len(`{"pad":""}`))

	type seed struct {
		status       string
		resultMode   uint8
		result       []byte
		input        []byte
		artifact     []byte
		content      []byte
		padInput     uint32
		padArtifact  uint32
		errText      string
		hasErr       bool
		preview      string
		hasPreview   bool
		hintBits     uint64
		hasHint      bool
		maxResult    int
		previewChars int
	}
	seeds := []seed{
		{status: "completed", result: []byte(`{"a":1}`), maxResult: 64, previewChars: 24},
		{status: "completed", result: []byte(`{"rows":"` + strings.Repeat("r", 200) + `"}`), artifact: []byte(`{"path":"/out"}`), maxResult: 64, previewChars: 24},
		{status: "completed", resultMode: fuzzResultString, result: []byte(strings.Repeat("<&>", 40)), maxResult: 64, previewChars: 24},
		{status: "completed", resultMode: fuzzResultString, result: []byte(strings.Repeat("é", 100)), maxResult: 64, previewChars: 24},
		{status: "completed", resultMode: fuzzResultFloat, hintBits: nan},
		{status: "completed", resultMode: fuzzResultNested, hintBits: inf},
		{status: "working", hintBits: twelveHalf, hasHint: true},
		{status: "working", hintBits: huge, hasHint: true},
		{status: "working", hintBits: nan, hasHint: true},
		{status: "working", hintBits: negInf, hasHint: true},
		{status: "working", hintBits: 0, hasHint: true},
		{status: "input_required", input: []byte(`{"question":"continue?"}`)},
		{status: "input_required", input: []byte(`{}`)},
		{status: "input_required"},
		{status: "input_required", input: []byte(`{}`), padInput: padFits},
		{status: "input_required", input: []byte(`{}`), padInput: padFits + 1},
		{status: "completed", artifact: []byte(`{}`), padArtifact: padFits},
		{status: "completed", artifact: []byte(`{}`), padArtifact: padFits + 1},
		{status: "failed", errText: strings.Repeat("é", 5000), hasErr: true},
		{status: "failed", errText: "a\xffb\xe6\x97", hasErr: true},
		{status: "completed", result: []byte(`"ok"`), preview: strings.Repeat("p", 3000), hasPreview: true},
		{status: "completed", result: []byte(`{"a":1}`), content: []byte(` [{"type": "text", "text": "a"}] `), maxResult: 64, previewChars: 24},
		{status: "completed", result: []byte(`[]`), content: []byte(`[{"type":"text","text":"` + strings.Repeat("t", 60) + `"}]`), maxResult: 64, previewChars: 24},
		{status: "completed", content: []byte(`{"type":"text"}`)},
		{status: "completed", content: []byte(`[{"type":`)},
		{status: "working", content: []byte(`[]`)},
		{status: "running"},
		{status: "", maxResult: -1, previewChars: 0},
	}
	for _, s := range seeds {
		f.Add(s.status, s.resultMode, s.result, s.input, s.artifact, s.content, s.padInput, s.padArtifact,
			s.errText, s.hasErr, s.preview, s.hasPreview, s.hintBits, s.hasHint, s.maxResult, s.previewChars)
	}

	timing := mcpflow.PollTiming{
		PollInterval:          5 * time.Second,
		InputRequiredInterval: 60 * time.Second,
		MaxPollBackoff:        300 * time.Second,
		DegradedAfterErrors:   3,
	}

	f.Fuzz(func(t *testing.T, status string, resultMode uint8, result, input, artifact, content []byte,
		padInput, padArtifact uint32, errText string, hasErr bool, preview string, hasPreview bool,
		hintBits uint64, hasHint bool, maxResult, previewChars int,
	) {
		in := mcpflow.Snapshot{Status: mcpflow.Status(status)}

		switch resultMode % fuzzResultModes {
		case fuzzResultJSON:
			var v any
			if json.Unmarshal(result, &v) == nil {
				in.Result = v
			}
		case fuzzResultString:
			in.Result = string(result)
		case fuzzResultFloat:
			in.Result = math.Float64frombits(hintBits)
		case fuzzResultNested:
			in.Result = map[string]any{"v": math.Float64frombits(hintBits)}
		}

		var inputMap map[string]any
		if json.Unmarshal(input, &inputMap) == nil && inputMap != nil {
			if n := padInput % 140000; n > 0 {
				inputMap["pad"] = strings.Repeat("x", int(n))
			}
			in.InputRequired = inputMap
		}
		var artifactMap map[string]string
		if json.Unmarshal(artifact, &artifactMap) == nil && artifactMap != nil {
			if n := padArtifact % 140000; n > 0 {
				artifactMap["pad"] = strings.Repeat("<", int(n))
			}
			in.ResultArtifact = artifactMap
		}
		if len(content) > 0 {
			in.Content = content
			in.ResultStructured = true
		}
		if hasErr {
			in.Error = &errText
		}
		if hasPreview {
			in.ResultPreview = &preview
		}
		if hasHint {
			h := math.Float64frombits(hintBits)
			in.PollAfterSeconds = &h
		}

		// Keep sizes sane for the fuzzer; the spec's config ranges are far
		// inside these.
		b := mcpflow.Bounds{MaxResultBytes: maxResult % (1 << 24), ResultPreviewMaxChars: previewChars % (1 << 20)}
		effective := b
		if b.MaxResultBytes <= 0 || b.ResultPreviewMaxChars <= 0 {
			effective = mcpflow.DefaultBounds()
		}

		out, err := in.Normalize(b)
		if err != nil {
			require.True(t, mcpflow.IsProtocolError(err), "Normalize failed with a non-protocol error: %v", err)
			require.Equal(t, mcpflow.Snapshot{}, out)
			return
		}
		require.NoError(t, in.Validate(), "Normalize accepted an invalid snapshot")
		require.NoError(t, out.Validate())
		require.Equal(t, in.Status, out.Status)
		require.Equal(t, in.PollAfterSeconds, out.PollAfterSeconds)

		if out.Error != nil {
			require.LessOrEqual(t, utf8.RuneCountInString(*out.Error), mcpflow.MaxErrorChars)
			require.True(t, utf8.ValidString(*out.Error))
		} else {
			require.Nil(t, in.Error)
		}

		if out.Result != nil {
			enc, err := mcpflow.StrictJSON(out.Result)
			require.NoError(t, err)
			require.LessOrEqual(t, len(enc), effective.MaxResultBytes)
		} else if in.Result != nil {
			require.True(t, out.ResultTruncated, "a dropped result must be marked truncated")
			require.NotNil(t, out.ResultPreview)
		}
		if out.ResultPreview != nil {
			require.LessOrEqual(t, utf8.RuneCountInString(*out.ResultPreview), effective.ResultPreviewMaxChars)
		}

		if out.Content != nil {
			require.Equal(t, mcpflow.StatusCompleted, out.Status, "content blocks only on a completed task")
			require.LessOrEqual(t, len(out.Content), effective.MaxResultBytes)
			var blocks []json.RawMessage
			require.NoError(t, json.Unmarshal(out.Content, &blocks), "content blocks are a JSON array")
			require.NotNil(t, blocks)
			require.True(t, out.ResultStructured)
		} else {
			require.False(t, out.ResultStructured, "no flag without blocks")
		}
		_, err = mcpflow.StrictJSON(out)
		require.NoError(t, err, "a normalized snapshot always encodes")

		for name, payload := range map[string]any{"input_required": out.InputRequired, "result_artifact": out.ResultArtifact} {
			enc, err := mcpflow.StrictJSON(payload)
			require.NoError(t, err, name)
			require.LessOrEqual(t, len(enc), mcpflow.MaxPayloadBytes, name)
		}

		again, err := out.Normalize(b)
		require.NoError(t, err, "Normalize must accept its own output")
		require.Equal(t, out, again, "Normalize must be idempotent")

		d, ok := timing.NextPollDelay(out)
		require.Equal(t, out.IsPollable(), ok)
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, 24*time.Hour)
		if out.Status == mcpflow.StatusInputRequired {
			require.GreaterOrEqual(t, d, timing.InputRequiredInterval)
		}
	})
}
