package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpflow/mcpflow"
)

// JSON columns are TEXT on SQLite and JSONB on PostgreSQL; both take and give
// the JSON text as a string. A nil value is SQL NULL.

// encodeJSON returns v as compact JSON text, or nil for a nil value or a
// value that encodes to JSON null.
func encodeJSON(field string, v any) (*string, error) {
	if v == nil {
		return nil, nil
	}
	b, err := mcpflow.StrictJSON(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", field, err)
	}
	if bytes.Equal(b, []byte("null")) {
		return nil, nil
	}
	s := string(b)
	return &s, nil
}

// decodeJSON decodes a nullable JSON column into dst; NULL leaves dst alone.
func decodeJSON(field string, s *string, dst any) error {
	if s == nil {
		return nil
	}
	// Numbers stay json.Number: a result's integer beyond 2^53 reads back
	// as it was written.
	if err := mcpflow.DecodeExact([]byte(*s), dst); err != nil {
		return fmt.Errorf("decode %s: %w", field, err)
	}
	return nil
}

// contentColumn is the stored form of a task's content blocks: the JSON
// text byte for byte (a TEXT column on both backends, so nothing reorders
// or re-escapes it), or NULL for none. A JSON null counts as none.
func contentColumn(blocks json.RawMessage) *string {
	b := bytes.TrimSpace(blocks)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return nil
	}
	s := string(blocks)
	return &s
}

// dbTime is the stored form of a timestamp: UTC at microsecond precision,
// which is what PostgreSQL keeps, so both backends give back the same value.
func dbTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

func dbTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := dbTime(*t)
	return &v
}

// utcPtr returns a read timestamp in UTC.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}
