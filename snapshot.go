package mcpflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Snapshot is the normalized state of a remote task as a driver reports it
// (spec §2.1). Build one with NewSnapshot, which checks the invariants, and
// bound it with Normalize before it is stored.
type Snapshot struct {
	Status          Status            `json:"status"`
	Result          any               `json:"result,omitempty"`
	ResultPreview   *string           `json:"result_preview,omitempty"`
	ResultTruncated bool              `json:"result_truncated,omitempty"`
	ResultArtifact  map[string]string `json:"result_artifact,omitzero"`
	// Content is a completed native task's tool result as the upstream
	// gave it: its content blocks, a JSON array, which the MCP endpoint
	// answers as they are (Result stays what the REST API shows). On a
	// failed task they are the tool error's (a result with isError: the
	// task failed, Error has its text), which the endpoint answers as a
	// tool error. Only the native driver sets it; Normalize drops it (never
	// failing the task) when it is not a JSON array, is larger than the
	// result bound, or the task is neither completed nor failed. Absent,
	// the endpoint renders Result (or Error).
	Content json.RawMessage `json:"content,omitempty"`
	// ResultStructured, with Content, says where Result came from: true,
	// the upstream's structuredContent; false, the upstream had none and
	// Result is its content blocks. Without Content it is always false.
	ResultStructured bool           `json:"result_structured,omitempty"`
	Error            *string        `json:"error,omitempty"`
	InputRequired    map[string]any `json:"input_required,omitzero"`
	// InputAnswerable says the question in InputRequired can be answered
	// through mcpflow (POST …/mcp-tasks/{id}/input): the driver can deliver
	// an answer (mcpflow.InputDriver).
	InputAnswerable  bool     `json:"input_answerable,omitempty"`
	PollAfterSeconds *float64 `json:"poll_after_seconds,omitempty"`
	// Message is the server's progress message for the task ("step 2 of
	// 3"), at most MaxAPIErrorChars characters. Like the poll hint it is
	// not a change of the task (activities.Fingerprint leaves it out): a
	// new message alone is written to the row, never to Temporal history.
	Message *string `json:"message,omitempty"`
}

// UnmarshalJSON decodes a snapshot with the numbers of its result and
// question kept as json.Number: a snapshot crosses Temporal's JSON payloads
// (activity results, workflow state) on its way to the row, and an integer
// beyond 2^53 in a task's result must arrive as the server wrote it.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	type plain Snapshot // no UnmarshalJSON: no recursion
	var p plain
	if err := DecodeExact(b, &p); err != nil {
		return err
	}
	*s = Snapshot(p)
	return nil
}

// DecodeExact decodes one JSON value into v with every number of an
// untyped field (any, map[string]any) kept as json.Number, so that
// encoding it again writes the number as it came.
func DecodeExact(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// NewSnapshot returns s after checking its invariants: a known status, a
// finite positive poll hint if any, and an input_required payload when the
// status is input_required.
func NewSnapshot(s Snapshot) (Snapshot, error) {
	if err := s.Validate(); err != nil {
		return Snapshot{}, err
	}
	return s, nil
}

// Validate checks the invariants of NewSnapshot.
func (s Snapshot) Validate() error {
	if !s.Status.Valid() {
		return fmt.Errorf("unknown MCP task status %q", string(s.Status))
	}
	if s.PollAfterSeconds != nil {
		if err := ValidatePollAfter(*s.PollAfterSeconds); err != nil {
			return err
		}
	}
	if s.Status == StatusInputRequired && s.InputRequired == nil {
		return fmt.Errorf("an input_required MCP task snapshot requires an input_required payload")
	}
	return nil
}

// IsPollable reports whether the task still needs polling.
func (s Snapshot) IsPollable() bool { return s.Status.IsPollable() }

// NeedsAttention reports whether the user must hear about this snapshot.
func (s Snapshot) NeedsAttention() bool { return s.Status.NeedsAttention() }

// Normalize applies the payload bounds of spec §2.7 and returns the bounded
// copy. Violations that the spec makes permanent come back as a
// *ProtocolError (the task then fails): a result that is not strict JSON, and
// an input_required or result_artifact payload that is not strict JSON or
// exceeds 65,536 bytes. An error text is cut to 4,000 characters; a result
// larger than b.MaxResultBytes is replaced by a preview. Content blocks are
// compacted, and dropped (with ResultStructured) when they cannot be kept:
// larger than b.MaxResultBytes, not a JSON array, or on a task that is
// neither completed nor failed; they are never a reason to fail the task.
func (s Snapshot) Normalize(b Bounds) (Snapshot, error) {
	if b.MaxResultBytes <= 0 || b.ResultPreviewMaxChars <= 0 {
		b = DefaultBounds()
	}
	if err := s.Validate(); err != nil {
		return Snapshot{}, &ProtocolError{Message: err.Error()}
	}
	out := s
	if s.Message != nil {
		if *s.Message == "" {
			out.Message = nil
		} else {
			m := TruncateChars(*s.Message, MaxAPIErrorChars)
			out.Message = &m
		}
	}
	if s.Error != nil {
		e := TruncateChars(*s.Error, MaxErrorChars)
		out.Error = &e
	}
	if err := checkPayload("result_artifact", s.ResultArtifact); err != nil {
		return Snapshot{}, err
	}
	if err := checkPayload("input_required", s.InputRequired); err != nil {
		return Snapshot{}, err
	}
	if s.Result != nil {
		enc, err := StrictJSON(s.Result)
		if err != nil {
			return Snapshot{}, NewProtocolError("MCP task result is not valid JSON: %v", err)
		}
		if len(enc) > b.MaxResultBytes {
			text := string(enc)
			if str, ok := s.Result.(string); ok {
				text = str
			}
			p := TruncateChars(text, b.ResultPreviewMaxChars)
			out.Result = nil
			out.ResultTruncated = true
			out.ResultPreview = &p
		}
	}
	if out.ResultPreview != nil && utf8.RuneCountInString(*out.ResultPreview) > b.ResultPreviewMaxChars {
		p := TruncateChars(*out.ResultPreview, b.ResultPreviewMaxChars)
		out.ResultPreview = &p
	}
	out.Content = nil
	if s.Status == StatusCompleted || s.Status == StatusFailed {
		out.Content = boundContent(s.Content, b.MaxResultBytes)
	}
	if s.Status != StatusCompleted || out.Content == nil {
		out.ResultStructured = false
	}
	return out, nil
}

// boundContent returns content blocks compacted, or nil when there are
// none or they cannot be kept: not a JSON array, or more than max bytes
// once compact.
func boundContent(blocks json.RawMessage, max int) json.RawMessage {
	if len(blocks) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, blocks); err != nil || buf.Len() > max || buf.Bytes()[0] != '[' {
		return nil
	}
	return json.RawMessage(buf.Bytes())
}

func checkPayload(field string, v any) error {
	enc, err := StrictJSON(v)
	if err != nil {
		return NewProtocolError("MCP task %s payload is not valid JSON: %v", field, err)
	}
	if len(enc) > MaxPayloadBytes {
		return NewProtocolError("MCP task %s payload exceeds the %d-byte limit", field, MaxPayloadBytes)
	}
	return nil
}
