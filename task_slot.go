package mcpflow

import (
	"context"
	"time"
)

// TaskSlot asks for one of a user's running-task slots
// (mcp_tasks.max_running_tasks_per_user) for a task about to be submitted.
// The slot is taken before anything is submitted and is held by the task
// id: the insert of the task's row consumes it (the row counts from then
// on), a failed submit releases it, and one neither consumed nor released
// (the replica that reserved it died) lapses after TTL.
type TaskSlot struct {
	TaskID string
	UserID string
	// Max is the cap: the slot is granted only while the user's tasks that
	// have not ended plus their other live slots are fewer. 0: no cap (the
	// slot still records RequestHash).
	Max int
	// TTL is how long the slot is held while its task is not stored.
	TTL time.Duration
	// RequestHash identifies the request of a submit with an idempotency
	// key (SubmitRequestHash; "" without a key). The task's row keeps it.
	RequestHash string
}

// SlotGrant is the answer to a TaskSlot.
type SlotGrant struct {
	// Granted: the task holds its slot (a new one, the one it held already,
	// or its row exists).
	Granted bool
	// Held is, when not granted, how many slots the user holds (tasks that
	// have not ended plus live reservations).
	Held int
	// Stored: the task's row exists already (a retried submit of a task
	// that was stored).
	Stored bool
	// OtherRequest: the task id holds a slot or a row of a request with
	// another RequestHash (the idempotency key was used for something
	// else); nothing was reserved.
	OtherRequest bool
}

// TaskSlots reserves running-task slots database-wide, so that two API
// replicas cannot both grant the last one.
type TaskSlots interface {
	// ReserveTaskSlot grants s, or reports the number of slots the user
	// holds when they are at s.Max. Reserving a task id again is granted
	// without counting it twice (and refreshes its TTL), as is one whose
	// task row exists already; either with another RequestHash is not
	// granted (OtherRequest).
	ReserveTaskSlot(ctx context.Context, s TaskSlot) (SlotGrant, error)
	// ReleaseTaskSlot gives up the slot of a task id whose submit failed
	// (nothing when it holds none).
	ReleaseTaskSlot(ctx context.Context, taskID string) error
}
