package mcpflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// Thread is a conversation that owns tasks and receives their events. Its
// id is its user's: thread ids are per user (UserID, ID), so two users may
// each have a thread of the same id and neither learns of the other's. A
// deleted thread keeps a tombstone so that its id is never resurrected.
type Thread struct {
	ID        string
	UserID    string
	CreatedAt time.Time
	DeletedAt *time.Time
}

// Deleted reports whether the thread has been deleted.
func (t *Thread) Deleted() bool { return t.DeletedAt != nil }

// Ref returns the thread's name: its user and id.
func (t *Thread) Ref() ThreadRef { return ThreadRef{UserID: t.UserID, ThreadID: t.ID} }

// ThreadRef names a thread: thread ids are per user.
type ThreadRef struct {
	UserID   string
	ThreadID string
}

// ThreadEvent is one entry of a thread's event inbox: one version of one
// task's event, appended in order.
type ThreadEvent struct {
	Seq          int64
	UserID       string // the thread's user
	ThreadID     string
	TaskID       string
	EventVersion int
	Status       Status
	Payload      json.RawMessage // the event object
	CreatedAt    time.Time
}

// ThreadStore persists threads, by user: thread ids are per user, so
// another user's threads are neither found nor in the way.
//
// CreateThread creates the thread for its user and reports whether it was
// created. It returns the existing thread when that user already has that
// id, and an EGone error when that user deleted it.
//
// GetThread returns the user's thread of that id, ENotFound when the user
// has none; the caller checks tombstones. DeleteThread sets the tombstone
// once (deleting again keeps the first one) and returns ENotFound when the
// user has no thread of that id.
type ThreadStore interface {
	CreateThread(ctx context.Context, t *Thread) (*Thread, bool, error)
	GetThread(ctx context.Context, userID, id string) (*Thread, error)
	DeleteThread(ctx context.Context, userID, id string, at time.Time) error
}

// EventStore is the thread event inbox.
//
// AppendEvent appends an event to the thread (UserID, ThreadID) and returns
// its sequence number; appending the same (task id, event version) again
// returns the first sequence number without a second row; a missing thread
// is ENotFound and a deleted one EGone. ListEvents returns the events of a
// thread with Seq > after in ascending order, at most limit of them (0
// means 100; clamped to 1..1000). GetEvent returns one version of a task's
// event (ENotFound when absent). LatestEventSeq returns the highest
// sequence number of a thread's events, of all threads for the zero
// ThreadRef (0 when none).
// SubscribeAppends calls fn with the thread and seq of each event this
// process appends until unsubscribe is called (fn must not block), so that
// waiters of that thread alone are woken. ThreadsWithEventsAfter returns
// the threads with events after a seq, each with its highest seq, at most
// limit of them (clamped to 1..1000): how a process finds, in one query,
// which threads other processes appended to.
type EventStore interface {
	AppendEvent(ctx context.Context, e *ThreadEvent) (int64, error)
	ListEvents(ctx context.Context, thread ThreadRef, after int64, limit int) ([]*ThreadEvent, error)
	GetEvent(ctx context.Context, taskID string, version int) (*ThreadEvent, error)
	LatestEventSeq(ctx context.Context, thread ThreadRef) (int64, error)
	SubscribeAppends(fn func(thread ThreadRef, seq int64)) (unsubscribe func())
	ThreadsWithEventsAfter(ctx context.Context, after int64, limit int) (map[ThreadRef]int64, error)
}

// defaultThreadPrefix starts the id of a user's default thread.
const defaultThreadPrefix = "default@"

// DefaultThreadID is the id of a user's default thread, the thread of a
// request to the MCP endpoint's /mcp that names none: "default@<user id>",
// or "default@" and 32 hex digits of the user id's SHA-256 when that would
// be longer than 64 characters.
func DefaultThreadID(userID string) string {
	if id := defaultThreadPrefix + userID; len(id) <= 64 {
		return id
	}
	sum := sha256.Sum256([]byte(userID))
	return defaultThreadPrefix + hex.EncodeToString(sum[:16])
}

// ReservedThreadID reports whether id is another user's default thread,
// which nobody else may create.
func ReservedThreadID(id, userID string) bool {
	return strings.HasPrefix(id, defaultThreadPrefix) && id != DefaultThreadID(userID)
}
