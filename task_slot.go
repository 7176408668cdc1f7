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
	// have not ended plus their other live slots are fewer.
	Max int
	// TTL is how long the slot is held while its task is not stored.
	TTL time.Duration
}

// TaskSlots reserves running-task slots database-wide, so that two API
// replicas cannot both grant the last one.
type TaskSlots interface {
	// ReserveTaskSlot grants s, or reports false with the number of slots
	// the user holds (tasks that have not ended plus live reservations)
	// when they are at s.Max. Reserving a task id again is granted without
	// counting it twice, as is one whose task row exists already.
	ReserveTaskSlot(ctx context.Context, s TaskSlot) (granted bool, held int, err error)
	// ReleaseTaskSlot gives up the slot of a task id whose submit failed
	// (nothing when it holds none).
	ReleaseTaskSlot(ctx context.Context, taskID string) error
}
