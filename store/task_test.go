package store

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/mcpflow/mcpflow"
)

// fullTask sets every field of a task to a non-zero value.
func fullTask(user, thread, remote string, result any) *mcpflow.Task {
	t := newTask(user, thread, remote)
	t.RunID = ptr("run-1")
	t.ToolCallID = ptr("call-1")
	t.Status = mcpflow.StatusInputRequired
	t.Result = result
	t.ResultPreview = ptr("preview ✓ <b>")
	t.ResultTruncated = true
	t.ResultArtifact = map[string]string{"uri": "file:///tmp/report.pdf", "mime_type": "application/pdf"}
	t.Content = json.RawMessage(`[{"type":"text","text":"ok ✓ \u003cb\u003e"},{"type":"image","data":"aGk=","mimeType":"image/png"}]`)
	t.ResultStructured = true
	t.Error = ptr("boom")
	t.InputRequired = map[string]any{"question": "Which year?", "choices": []any{"2025", "2026"}, "n": json.Number("2.5"), "ok": true, "none": nil}
	t.InputAnswerable = true
	t.StatusMessage = ptr("step 2 of 3 ✓")
	t.NotificationStatus = mcpflow.NotificationPending
	t.NotificationError = ptr("webhook said 500")
	t.NotificationAttemptCount = 2
	t.EventFingerprint = ptr("ab12")
	t.EventVersion = 3
	t.NotifiedVersion = 2
	t.LastPolledAt = ptr(at(time.Second))
	t.LastPollError = ptr("timeout")
	t.PollAttemptCount = 7
	t.ConsecutivePollErrorCount = 1
	t.NextPollAt = ptr(at(time.Minute))
	t.CancelRequestedAt = ptr(at(2 * time.Second))
	t.CancelAttemptCount = 4
	t.LastCancelError = ptr("cancel refused")
	t.CompletedAt = ptr(at(3 * time.Second))
	t.CreatedAt = at(0)
	t.UpdatedAt = at(time.Millisecond)
	return t
}

// normalized is what the store gives back for a time written as t.
func normalized(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func TestTaskRoundTrip(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-1", "alice")
		results := map[string]any{
			// Numbers read back as json.Number, exactly as written.
			"object": map[string]any{"rows": []any{json.Number("1"), "two", nil}, "nested": map[string]any{"ok": true}},
			"string": "plain text result",
			"number": json.Number("42.5"),
			"big":    json.Number("9007199254740993"),
			"nil":    nil,
			"array":  []any{"a", json.Number("1")},
		}
		i := 0
		for name, result := range results {
			i++
			task := fullTask("alice", "thread-1", fmt.Sprintf("remote-%d", i), result)
			require.NoError(t, db.CreateTask(testCtx, task), name)

			// Create writes the stored form back: UTC, microseconds.
			require.Equal(t, normalized(at(0)), task.CreatedAt)
			require.Equal(t, time.UTC, task.CreatedAt.Location())
			require.Equal(t, normalized(at(3*time.Second)), *task.CompletedAt)

			got, err := db.GetTask(testCtx, task.ID)
			require.NoError(t, err, name)
			require.Equal(t, task, got, name)
			require.Equal(t, result, got.Result, name)

			list, err := db.ListTasks(testCtx, mcpflow.TaskFilter{UserID: "alice", ThreadID: "thread-1"})
			require.NoError(t, err)
			require.Contains(t, list, task)
		}
	})
}

// TestTaskContent: a native task's content blocks come back byte for byte
// (key order, spacing and escapes as written: the column is text on both
// backends), with the flag that says whether the result is the upstream's
// structuredContent; a task without blocks (an ordinary task, or a row
// written before the column existed) reads back without them.
func TestTaskContent(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-1", "alice")
		blocks := json.RawMessage(`[{"type":"text","text":"a \u0000 \u003c \"q\" é","annotations":{"priority":0.5,"audience":["user"]}}, {"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]`)
		task := newTask("alice", "thread-1", "remote-1")
		task.Status = mcpflow.StatusCompleted
		task.Result = []any{"the blocks, decoded"}
		task.Content = blocks
		require.NoError(t, db.CreateTask(testCtx, task))
		got, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, string(blocks), string(got.Content), "as written, byte for byte")
		require.False(t, got.ResultStructured)

		task.Result = map[string]any{"n": json.Number("9007199254740993")}
		task.ResultStructured = true
		require.NoError(t, db.UpdateTask(testCtx, task))
		got, err = db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, string(blocks), string(got.Content))
		require.True(t, got.ResultStructured)
		require.Equal(t, task.Result, got.Result)

		// A JSON null is no blocks (a task decoded from JSON may carry one).
		task.Content = json.RawMessage("null")
		task.ResultStructured = false
		require.NoError(t, db.UpdateTask(testCtx, task))
		got, err = db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Nil(t, got.Content)

		var nulls int64
		require.NoError(t, db.gorm.WithContext(testCtx).Model(&taskRow{}).Where("id = ? AND content IS NULL", task.ID).Count(&nulls).Error)
		require.Equal(t, int64(1), nulls, "stored as SQL NULL")

		// A task without blocks (an ordinary task, a row written before
		// the columns existed) keeps its result and has no blocks.
		plain := newTask("alice", "thread-1", "remote-2")
		plain.Status = mcpflow.StatusCompleted
		plain.Result = []any{"x"}
		require.NoError(t, db.CreateTask(testCtx, plain))
		got, err = db.GetTask(testCtx, plain.ID)
		require.NoError(t, err)
		require.Nil(t, got.Content)
		require.False(t, got.ResultStructured)
		require.Equal(t, []any{"x"}, got.Result)
	})
}

func TestCreateTaskDefaults(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-1", "alice")
		before := time.Now().UTC().Add(-time.Second)

		task := newTask("alice", "thread-1", "remote-1")
		task.ID = ""
		task.DriverData = nil
		task.Status = mcpflow.StatusCompleted
		require.NoError(t, db.CreateTask(testCtx, task))

		require.True(t, mcpflow.ValidTaskID(task.ID), task.ID)
		require.Equal(t, mcpflow.NotificationNone, task.NotificationStatus)
		require.True(t, task.CreatedAt.After(before))
		require.Equal(t, task.CreatedAt, task.UpdatedAt)
		require.NotNil(t, task.CompletedAt)
		require.Equal(t, task.UpdatedAt, *task.CompletedAt)

		got, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, map[string]string{}, got.DriverData)
		got.DriverData = nil
		require.Equal(t, task, got)
		require.Nil(t, got.Result)
		require.Nil(t, got.ResultArtifact)
		require.Nil(t, got.InputRequired)

		// A pollable task gets no completion time.
		working := newTask("alice", "thread-1", "remote-2")
		working.Status = mcpflow.StatusWorking
		require.NoError(t, db.CreateTask(testCtx, working))
		require.Nil(t, working.CompletedAt)

		// An unknown status never reaches the table.
		bad := newTask("alice", "thread-1", "remote-3")
		bad.Status = "queued"
		requireCode(t, mcpflow.EInvalid, db.CreateTask(testCtx, bad))
	})
}

func TestUpdateTask(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-1", "alice")
		bystander := newTask("alice", "thread-1", "remote-0")
		require.NoError(t, db.CreateTask(testCtx, bystander))
		task := newTask("alice", "thread-1", "remote-1")
		task.CreatedAt = at(0)
		require.NoError(t, db.CreateTask(testCtx, task))
		created := task.CreatedAt
		updatedBefore := task.UpdatedAt

		// Every field goes to the row, including back to zero values.
		full := fullTask("alice", "thread-1", "remote-1", map[string]any{"answer": json.Number("42")})
		full.ID = task.ID
		full.CreatedAt = at(time.Hour) // ignored: created_at never changes
		require.NoError(t, db.UpdateTask(testCtx, full))
		require.True(t, full.UpdatedAt.After(updatedBefore))

		got, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		want := *full
		want.CreatedAt = created
		want.QuestionSeq = 1 // working → input_required: its first question
		want.RowVersion = 2  // created, written once
		require.Equal(t, &want, got)

		// Clearing optional fields clears the columns.
		cleared := newTask("alice", "thread-1", "remote-1")
		cleared.ID = task.ID
		cleared.Status = mcpflow.StatusWorking
		require.NoError(t, db.UpdateTask(testCtx, cleared))
		got, err = db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Nil(t, got.Result)
		require.Nil(t, got.ResultArtifact)
		require.Nil(t, got.InputRequired)
		require.Nil(t, got.Content)
		require.False(t, got.ResultStructured)
		require.Nil(t, got.CompletedAt)
		require.Nil(t, got.RunID)
		require.False(t, got.ResultTruncated)
		require.Zero(t, got.EventVersion)
		require.Equal(t, mcpflow.NotificationNone, got.NotificationStatus)
		require.Equal(t, created, got.CreatedAt)

		// Only that row changed.
		got, err = db.GetTask(testCtx, bystander.ID)
		require.NoError(t, err)
		require.Equal(t, bystander, got)

		// A missing task is not found.
		missing := newTask("alice", "thread-1", "remote-9")
		requireCode(t, mcpflow.ENotFound, db.UpdateTask(testCtx, missing))
	})
}

func TestGetTaskNotFound(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		_, err := db.GetTask(testCtx, mcpflow.NewTaskID())
		requireCode(t, mcpflow.ENotFound, err)
	})
}

// Spec §7 scenario 33: unique per (user, server, remote id); another user
// may reuse the remote id; a duplicate local id is a plain integrity error.
func TestDuplicateRemoteTask(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-a", "alice")
		createThread(t, db, "thread-b", "bob")

		first := newTask("alice", "thread-a", "remote-1")
		require.NoError(t, db.CreateTask(testCtx, first))

		dup := newTask("alice", "thread-a", "remote-1")
		err := db.CreateTask(testCtx, dup)
		require.Error(t, err)
		require.True(t, mcpflow.IsDuplicateRemoteTask(err), "error: %v", err)
		require.Equal(t, mcpflow.EConflict, mcpflow.ErrorCode(err))
		require.Equal(t, "Remote MCP task is already tracked for server 'reports' by this user", mcpflow.ErrorMessage(err))
		require.NotContains(t, err.Error(), "remote-1")
		_, err = db.GetTask(testCtx, dup.ID)
		requireCode(t, mcpflow.ENotFound, err)

		// The same remote id for another user, or on another server, is fine.
		require.NoError(t, db.CreateTask(testCtx, newTask("bob", "thread-b", "remote-1")))
		other := newTask("alice", "thread-a", "remote-1")
		other.ServerName = "other-server"
		require.NoError(t, db.CreateTask(testCtx, other))

		// A duplicate local id is a different integrity error.
		sameID := newTask("alice", "thread-a", "remote-2")
		sameID.ID = first.ID
		err = db.CreateTask(testCtx, sameID)
		require.Error(t, err)
		require.False(t, mcpflow.IsDuplicateRemoteTask(err), "error: %v", err)
		require.ErrorIs(t, err, gorm.ErrDuplicatedKey)
		require.Equal(t, mcpflow.EConflict, mcpflow.ErrorCode(err))
		require.Equal(t, fmt.Sprintf("MCP task '%s' already exists", first.ID), mcpflow.ErrorMessage(err))

		// The first row is untouched.
		got, err := db.GetTask(testCtx, first.ID)
		require.NoError(t, err)
		require.Equal(t, first, got)
	})
}

func TestTaskNeedsThread(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		err := db.CreateTask(testCtx, newTask("alice", "no-such-thread", "remote-1"))
		require.Error(t, err)
		require.ErrorIs(t, err, gorm.ErrForeignKeyViolated)
		require.False(t, mcpflow.IsDuplicateRemoteTask(err))
		require.Equal(t, mcpflow.EInternal, mcpflow.ErrorCode(err))
	})
}

func TestListTasks(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-1", "alice")
		createThread(t, db, "thread-2", "alice")
		createThread(t, db, "thread-3", "bob")

		// 110 tasks in thread-1, two per created_at so that ties fall back
		// to id DESC; every third one is terminal.
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var all []*mcpflow.Task
		for i := range 110 {
			task := newTask("alice", "thread-1", fmt.Sprintf("remote-%03d", i))
			task.ID = fmt.Sprintf("mcp-task-%032x", (i*7919)%1000)
			task.CreatedAt = base.Add(time.Duration(i/2) * time.Second)
			if i%3 == 0 {
				task.Status = mcpflow.StatusCompleted
			}
			require.NoError(t, db.CreateTask(testCtx, task))
			all = append(all, task)
		}
		// Noise: another thread of the same user, bob's own thread, and a
		// task of bob's in bob's thread of the same id as alice's.
		require.NoError(t, db.CreateTask(testCtx, newTask("alice", "thread-2", "x-1")))
		require.NoError(t, db.CreateTask(testCtx, newTask("bob", "thread-3", "x-2")))
		createThread(t, db, "thread-1", "bob")
		require.NoError(t, db.CreateTask(testCtx, newTask("bob", "thread-1", "x-3")))

		ids := func(ts []*mcpflow.Task) []string {
			out := make([]string, len(ts))
			for i, t := range ts {
				out[i] = t.ID
			}
			return out
		}
		// Expected order: created_at DESC, id DESC.
		var want []string
		for i := len(all) - 1; i >= 0; i -= 2 {
			a, b := all[i-1].ID, all[i].ID
			if a < b {
				a, b = b, a
			}
			want = append(want, a, b)
		}

		list := func(f mcpflow.TaskFilter) []string {
			t.Helper()
			f.UserID, f.ThreadID = "alice", "thread-1"
			got, err := db.ListTasks(testCtx, f)
			require.NoError(t, err)
			return ids(got)
		}
		require.Equal(t, want[:50], list(mcpflow.TaskFilter{}))
		require.Equal(t, want[:100], list(mcpflow.TaskFilter{Limit: 500}))
		require.Equal(t, want[:1], list(mcpflow.TaskFilter{Limit: -3}))
		require.Equal(t, want[:7], list(mcpflow.TaskFilter{Limit: 7}))

		// Paging with a cursor (the last task of a page) walks every task
		// once, in order, ties at the same created_at included.
		var paged []string
		var after *mcpflow.TaskCursor
		for range 100 {
			page, err := db.ListTasks(testCtx, mcpflow.TaskFilter{UserID: "alice", ThreadID: "thread-1", Limit: 7, After: after})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			paged = append(paged, ids(page)...)
			last := page[len(page)-1]
			after = &mcpflow.TaskCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		require.Equal(t, want, paged)

		active, err := db.ListTasks(testCtx, mcpflow.TaskFilter{UserID: "alice", ThreadID: "thread-1", ActiveOnly: true, Limit: 100})
		require.NoError(t, err)
		require.Len(t, active, 73) // 110 minus the 37 terminal ones
		for _, task := range active {
			require.True(t, task.Status.IsPollable())
		}

		// Filtering by user and thread.
		bobs, err := db.ListTasks(testCtx, mcpflow.TaskFilter{UserID: "bob", ThreadID: "thread-1"})
		require.NoError(t, err)
		require.Len(t, bobs, 1)
		require.Equal(t, "x-3", bobs[0].RemoteTaskID)
		other, err := db.ListTasks(testCtx, mcpflow.TaskFilter{UserID: "alice", ThreadID: "thread-2"})
		require.NoError(t, err)
		require.Len(t, other, 1)
		none, err := db.ListTasks(testCtx, mcpflow.TaskFilter{UserID: "carol", ThreadID: "thread-1"})
		require.NoError(t, err)
		require.Empty(t, none)

		_, err = db.ListTasks(testCtx, mcpflow.TaskFilter{ThreadID: "thread-1"})
		requireCode(t, mcpflow.EInvalid, err)
	})
}

// TestQuestionSeq: the store numbers a task's questions. Only entering
// input_required or a changed question counts; rewriting the same question
// (a progress message, a counted poll error, a cancel request, the
// question becoming answerable) keeps the number.
func TestQuestionSeq(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		task := createWorking(t, db)
		seq := func() int {
			t.Helper()
			got, err := db.GetTask(testCtx, task.ID)
			require.NoError(t, err)
			return got.QuestionSeq
		}
		write := func(edit func(*mcpflow.Task)) {
			t.Helper()
			got, err := db.GetTask(testCtx, task.ID)
			require.NoError(t, err)
			edit(got)
			require.NoError(t, db.UpdateTask(testCtx, got))
		}
		require.Equal(t, 0, seq())

		q1 := map[string]any{"message": "Which year?", "requested_schema": map[string]any{"type": "object"}}
		write(func(t *mcpflow.Task) { t.Status, t.InputRequired = mcpflow.StatusInputRequired, q1 })
		require.Equal(t, 1, seq())

		msg, perr := "still thinking", "timeout"
		write(func(t *mcpflow.Task) { t.StatusMessage = &msg })
		write(func(t *mcpflow.Task) { t.ConsecutivePollErrorCount, t.LastPollError = 1, &perr })
		write(func(t *mcpflow.Task) { t.InputAnswerable = true })
		now := time.Now()
		write(func(t *mcpflow.Task) { t.CancelRequestedAt = &now })
		write(func(t *mcpflow.Task) {
			// The same question, written from a fresh map (as a poll
			// would): the same content is the same question.
			t.InputRequired = map[string]any{"requested_schema": map[string]any{"type": "object"}, "message": "Which year?"}
		})
		require.Equal(t, 1, seq(), "writes that keep the question kept its number")

		write(func(t *mcpflow.Task) { t.InputRequired = map[string]any{"message": "Which month?"} })
		require.Equal(t, 2, seq(), "a new question while input_required")

		write(func(t *mcpflow.Task) { t.Status, t.InputRequired = mcpflow.StatusWorking, nil })
		require.Equal(t, 2, seq())
		write(func(t *mcpflow.Task) {
			t.Status, t.InputRequired = mcpflow.StatusInputRequired, map[string]any{"message": "Which month?"}
		})
		require.Equal(t, 3, seq(), "the same text asked again after an answer is a new question")

		// A task created asking has its first question.
		asking := newTask("alice", "thread-1", "remote-2")
		asking.Status, asking.InputRequired = mcpflow.StatusInputRequired, q1
		require.NoError(t, db.CreateTask(testCtx, asking))
		require.Equal(t, 1, asking.QuestionSeq)
	})
}

// TestUpdateTaskRowVersion: a write that names the row version it read
// lands only if nobody wrote the row since; a plain write always lands.
func TestUpdateTaskRowVersion(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		task := createWorking(t, db)
		require.Equal(t, 1, task.RowVersion)

		read, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		stale := *read

		// Another writer (the workflow applying a cancel) writes first.
		cancelled := *read
		cancelled.RowVersion = 0 // unconditional
		cancelled.Status = mcpflow.StatusCancelled
		now := time.Now()
		cancelled.CancelRequestedAt = &now
		require.NoError(t, db.UpdateTask(testCtx, &cancelled))

		msg := "late progress"
		stale.StatusMessage = &msg
		err = db.UpdateTask(testCtx, &stale)
		requireCode(t, mcpflow.EConflict, err)
		got, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, mcpflow.StatusCancelled, got.Status, "the stale write did not land")
		require.NotNil(t, got.CancelRequestedAt)
		require.Nil(t, got.StatusMessage)
		require.Equal(t, 2, got.RowVersion)

		// A write from the current version lands and moves it on.
		got.StatusMessage = &msg
		require.NoError(t, db.UpdateTask(testCtx, got))
		require.Equal(t, 3, got.RowVersion)
		again, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, 3, again.RowVersion)
		require.Equal(t, msg, *again.StatusMessage)

		// A missing task is still not found, fenced or not.
		missing := newTask("alice", "thread-1", "remote-9")
		missing.RowVersion = 4
		requireCode(t, mcpflow.ENotFound, db.UpdateTask(testCtx, missing))
	})
}

// TestUpdateTaskWithEvent: the event and the fenced row write go in
// together, or neither does.
func TestUpdateTaskWithEvent(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		task := createWorking(t, db)
		read, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)

		ev := func(v int) *mcpflow.ThreadEvent {
			return &mcpflow.ThreadEvent{UserID: task.UserID, ThreadID: "thread-1", TaskID: task.ID, EventVersion: v,
				Status: mcpflow.StatusCompleted, Payload: []byte(`{"status":"completed"}`)}
		}
		ok := *read
		ok.Status, ok.EventVersion = mcpflow.StatusCompleted, 1
		seq, err := db.UpdateTaskWithEvent(testCtx, &ok, ev(1))
		require.NoError(t, err)
		require.Positive(t, seq)
		require.Equal(t, read.RowVersion+1, ok.RowVersion)

		stale := *read // the version before that write
		stale.Status, stale.EventVersion = mcpflow.StatusFailed, 2
		_, err = db.UpdateTaskWithEvent(testCtx, &stale, ev(2))
		requireCode(t, mcpflow.EConflict, err)
		events, err := db.ListEvents(testCtx, mcpflow.ThreadRef{UserID: task.UserID, ThreadID: "thread-1"}, 0, 10)
		require.NoError(t, err)
		require.Len(t, events, 1, "the refused write left its event behind")
		got, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, mcpflow.StatusCompleted, got.Status)

		// A deleted thread refuses the event, and nothing is written.
		require.NoError(t, db.DeleteThread(testCtx, task.UserID, "thread-1", time.Now()))
		gone := *got
		gone.Status, gone.EventVersion = mcpflow.StatusFailed, 2
		_, err = db.UpdateTaskWithEvent(testCtx, &gone, ev(2))
		requireCode(t, mcpflow.EGone, err)
	})
}

// TestTouchPolled: a poll that changed nothing moves last_polled_at
// forward and nothing else; a whole-row write never moves it backwards; a
// task that ended is left alone.
func TestTouchPolled(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-1", "alice")
		task := newTask("alice", "thread-1", "remote-1")
		task.Status = mcpflow.StatusWorking
		first := at(time.Minute)
		task.LastPolledAt = &first
		require.NoError(t, db.CreateTask(testCtx, task))
		before, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)

		later := at(2 * time.Minute)
		ok, err := db.TouchPolled(testCtx, task.ID, later)
		require.NoError(t, err)
		require.True(t, ok)
		got, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, normalized(later), *got.LastPolledAt)
		require.Equal(t, before.UpdatedAt, got.UpdatedAt, "a poll is not a change")
		require.Equal(t, before.RowVersion, got.RowVersion)

		ok, err = db.TouchPolled(testCtx, task.ID, first)
		require.NoError(t, err)
		require.False(t, ok, "never backwards")

		// A whole-row write from an older copy keeps the later poll time.
		stale := *before
		stale.RowVersion = 0
		msg := "half way"
		stale.StatusMessage = &msg
		require.NoError(t, db.UpdateTask(testCtx, &stale))
		got, err = db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, normalized(later), *got.LastPolledAt)
		require.Equal(t, msg, *got.StatusMessage)
		// A later one moves it on.
		latest := at(3 * time.Minute)
		got.LastPolledAt = &latest
		require.NoError(t, db.UpdateTask(testCtx, got))
		got, err = db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, normalized(latest), *got.LastPolledAt)

		got.Status = mcpflow.StatusCompleted
		require.NoError(t, db.UpdateTask(testCtx, got))
		ok, err = db.TouchPolled(testCtx, task.ID, at(time.Hour))
		require.NoError(t, err)
		require.False(t, ok, "an ended task is not polled")
	})
}

// createWorking creates thread-1 of alice and a working task in it.
func createWorking(t *testing.T, db *DB) *mcpflow.Task {
	t.Helper()
	createThread(t, db, "thread-1", "alice")
	task := newTask("alice", "thread-1", "remote-1")
	task.Status = mcpflow.StatusWorking
	require.NoError(t, db.CreateTask(testCtx, task))
	return task
}
