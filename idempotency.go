package mcpflow

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// IdempotencyKeyMeta is the _meta key of a tools/call that carries the
// caller's idempotency key to mcpflow (both MCP revisions), as the REST
// header Idempotency-Key does. mcpflow passes the same key name on to a
// task server, with the local task id as its value (SubmitKeyMeta).
const IdempotencyKeyMeta = SubmitKeyMeta

// MaxIdempotencyKeyLen bounds an idempotency key.
const MaxIdempotencyKeyLen = 255

// IdempotencyKeyProblem says what is wrong with a caller's idempotency
// key ("must be …"), or "" when it is a good one: 1 to 255 printable ASCII
// characters, without spaces.
func IdempotencyKeyProblem(key string) string {
	if key == "" || len(key) > MaxIdempotencyKeyLen {
		return fmt.Sprintf("must be 1 to %d characters long (got %d)", MaxIdempotencyKeyLen, len(key))
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return fmt.Sprintf("must be printable ASCII without spaces (character %d is not)", i+1)
		}
	}
	return ""
}

// taskIDKey keys the hash that derives a task id from an idempotency key.
// It is fixed (every replica must derive the same id, with no shared
// secret to configure); the user and thread in the hash keep ids of
// different callers apart, and a task id never opens another user's task.
var taskIDKey = []byte("mcpflow durable task id v1")

// KeyedTaskID derives the local task id of a submit with an idempotency
// key: "mcp-task-" and 32 hex digits of an HMAC-SHA256 of (user, thread,
// key). A retried submit with the same key on the same thread gets the
// same id, whichever replica serves it.
func KeyedTaskID(userID, threadID, key string) string {
	m := hmac.New(sha256.New, taskIDKey)
	for _, f := range []string{userID, threadID, key} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return TaskIDPrefix + hex.EncodeToString(m.Sum(nil)[:16])
}

// SubmitRequestHash identifies what a submit asks for: the server, the
// tool and the arguments (as canonical JSON: object keys sorted). A retry
// with the same idempotency key must ask for the same thing. Request
// secrets are not part of it.
func SubmitRequestHash(server, tool string, args map[string]any) (string, error) {
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(struct {
		Server    string         `json:"server"`
		Tool      string         `json:"tool"`
		Arguments map[string]any `json:"arguments"`
	}{server, tool, args})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
