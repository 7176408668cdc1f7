package mcpflow

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Event is what a thread hears about one of its tasks when the task needs
// attention (input_required or a terminal status) or its tracking is
// degraded (spec §2.5). Every change of its content is a new version.
type Event struct {
	TaskID          string            `json:"task_id"`
	TaskName        string            `json:"task_name"`
	Status          Status            `json:"status"`
	Result          any               `json:"result"`
	ResultPreview   *string           `json:"result_preview"`
	ResultTruncated bool              `json:"result_truncated"`
	ResultArtifact  map[string]string `json:"result_artifact"`
	Error           *string           `json:"error"`
	InputRequired   map[string]any    `json:"input_required"`
	// InputAnswerable is present (true) when the question in InputRequired
	// can be answered through mcpflow; absent otherwise, so events of tasks
	// that cannot be answered keep the fingerprints they had.
	InputAnswerable  bool    `json:"input_answerable,omitempty"`
	TrackingDegraded bool    `json:"tracking_degraded"`
	LastPollError    *string `json:"last_poll_error"` // set only while tracking is degraded
}

// BuildEvent returns the event of a task in the state s, with tracking
// degraded or not, and false when that state needs no event: a task that
// is submitted or working with healthy tracking. It is deterministic (no
// I/O, no clock), so workflow code may call it.
func BuildEvent(taskID, taskName string, s Snapshot, degraded bool, lastPollError *string) (Event, bool) {
	if !s.NeedsAttention() && !degraded {
		return Event{}, false
	}
	e := Event{
		TaskID: taskID, TaskName: taskName, Status: s.Status,
		Result: s.Result, ResultPreview: s.ResultPreview, ResultTruncated: s.ResultTruncated,
		ResultArtifact: s.ResultArtifact, Error: s.Error, InputRequired: s.InputRequired, InputAnswerable: s.InputAnswerable,
		TrackingDegraded: degraded,
	}
	if degraded {
		e.LastPollError = lastPollError
	}
	return e, true
}

// CanonicalJSON encodes e with sorted keys at every level, no insignificant
// space and non-ASCII characters kept as they are: the form fingerprints
// are taken of and the inbox and webhook carry.
func (e Event) CanonicalJSON() ([]byte, error) {
	return CanonicalJSON(e)
}

// Fingerprint is the hex SHA-256 of the event's canonical JSON: equal
// fingerprints mean nothing the user would be told changed.
func (e Event) Fingerprint() (string, error) {
	b, err := e.CanonicalJSON()
	if err != nil {
		return "", fmt.Errorf("fingerprint MCP task event: %w", err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// CanonicalJSON encodes v as JSON with object keys sorted at every level,
// compact, and without HTML escaping (non-ASCII characters kept as they are).
func CanonicalJSON(v any) ([]byte, error) {
	b, err := StrictJSON(v)
	if err != nil {
		return nil, err
	}
	// Struct fields come out in declaration order; a round trip through
	// generic values sorts every object's keys. Numbers keep their text.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	return StrictJSON(generic)
}

// ThreadEventView is one inbox entry as the API and the webhook show it: the
// event's fields at the top level beside its place in the log.
func ThreadEventView(e *ThreadEvent) (map[string]any, error) {
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(e.Payload))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil {
		return nil, fmt.Errorf("decode event %s v%d: %w", e.TaskID, e.EventVersion, err)
	}
	if fields == nil {
		fields = map[string]any{}
	}
	fields["seq"] = e.Seq
	fields["task_id"] = e.TaskID
	fields["event_version"] = e.EventVersion
	fields["status"] = e.Status
	fields["created_at"] = e.CreatedAt.UTC().Format(time.RFC3339Nano)
	return fields, nil
}
