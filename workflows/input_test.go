package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/workflows"
)

// answeringDriver is a driver whose task asks a question until it gets an
// answer, then completes with it.
type answeringDriver struct {
	*fakeDriver
	mu       sync.Mutex
	answers  []mcpflow.InputAnswer
	answerTo []mcpflow.TaskReference
	gone     bool // Answer reports the question gone
	holds    bool // the question is held in this process
	refuse   int  // the next Answer calls the server refuses (not taken)
	refused  int
	onAnswer func(n int) // n counts Answer calls from 1
	calls    int
}

var question = map[string]any{"message": "Which interpretation?", "requested_schema": map[string]any{"type": "object",
	"properties": map[string]any{"interpretation": map[string]any{"type": "string"}}, "required": []any{"interpretation"}}}

func (d *answeringDriver) Status(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	d.mu.Lock()
	answered := len(d.answers) > 0 && !d.gone
	expired := len(d.answers) > 0 && d.gone // the question went away upstream
	d.mu.Unlock()
	if answered {
		return mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"used": d.answers[0].Content["interpretation"]}}, nil
	}
	return mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: question, InputAnswerable: !expired}, nil
}

func (d *answeringDriver) Answer(ctx context.Context, ref mcpflow.TaskReference, a mcpflow.InputAnswer) error {
	d.mu.Lock()
	d.calls++
	n, hook := d.calls, d.onAnswer
	d.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refuse > 0 {
		d.refuse--
		d.refused++
		return errors.New("MCP task tool 'answer' refused the answer with error_code 'busy'")
	}
	d.answers = append(d.answers, a)
	d.answerTo = append(d.answerTo, ref)
	if d.gone {
		return mcpflow.ErrInputGone
	}
	return nil
}

func (d *answeringDriver) HoldsQuestion(mcpflow.TaskReference) bool { return d.holds }

// setupAnswering is setup with an answering driver registered as the
// activities' driver.
func setupAnswering(t *testing.T, d *answeringDriver) *bundle {
	t.Helper()
	b := setup(t, d.fakeDriver)
	b.acts.Driver = d
	return b
}

// answerAt sends the input update at the given test-clock offset and
// records how it ended.
type updateOutcome struct {
	accepted, rejected, completed bool
	err                           error
}

func (b *bundle) answerAt(after time.Duration, id string, a mcpflow.InputAnswer, out *updateOutcome) {
	b.env.RegisterDelayedCallback(func() {
		b.env.UpdateWorkflow(workflows.UpdateInput, id, &testsuite.TestUpdateCallback{
			OnAccept:   func() { out.accepted = true },
			OnReject:   func(err error) { out.rejected, out.err = true, err },
			OnComplete: func(_ any, err error) { out.completed, out.err = true, err },
		}, a)
	}, after)
}

// An answer to a task's question is delivered once, on the worker that
// holds the question, and the task goes on with it.
func TestInputAnswerIsDeliveredAndTheTaskResumes(t *testing.T) {
	t.Parallel()
	d := &answeringDriver{fakeDriver: &fakeDriver{submitID: "r-1", statuses: []statusAnswer{working()}}, holds: true}
	b := setupAnswering(t, d)
	starts := b.recordActivities()
	var early, ans updateOutcome
	// Before the question: refused (the task does not require input).
	b.answerAt(time.Millisecond, "early", mcpflow.InputAnswer{Action: mcpflow.InputDecline}, &early)
	b.answerAt(10*time.Minute, "a-1", mcpflow.InputAnswer{Action: mcpflow.InputAccept, Content: map[string]any{"interpretation": "historical"}}, &ans)
	_, err := b.run(t)
	require.NoError(t, err)

	require.True(t, early.rejected, "an answer before the question is refused: %+v", early)
	require.ErrorContains(t, early.err, "does not require input")
	require.True(t, ans.accepted && ans.completed, "%+v", ans)
	require.NoError(t, ans.err)
	require.Len(t, d.answers, 1, "delivered exactly once")
	require.Equal(t, "historical", d.answers[0].Content["interpretation"])
	require.Equal(t, "r-1", d.answerTo[0].RemoteTaskID)
	deliveries := only(*starts, "Answer")
	require.Len(t, deliveries, 1)
	require.Equal(t, "pinned", deliveries[0].queue, "delivered by the worker that holds the question")

	task := b.task(t)
	require.Equal(t, mcpflow.StatusCompleted, task.Status)
	require.Equal(t, map[string]any{"used": "historical"}, task.Result)

	// The inbox heard the question (answerable) and the completion.
	evs, err := b.db.ListEvents(context.Background(), mcpflow.ThreadRef{UserID: "u", ThreadID: "th"}, 0, 10)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	require.Equal(t, mcpflow.StatusInputRequired, evs[0].Status)
	require.Contains(t, string(evs[0].Payload), `"input_answerable":true`)
	require.Equal(t, mcpflow.StatusCompleted, evs[1].Status)
}

// A question that is gone upstream makes the answer fail and the question
// unanswerable; tracking goes on.
func TestInputAnswerToAGoneQuestion(t *testing.T) {
	t.Parallel()
	d := &answeringDriver{fakeDriver: &fakeDriver{submitID: "r-2", statuses: []statusAnswer{working()}}, gone: true}
	b := setupAnswering(t, d)
	var ans, again updateOutcome
	b.answerAt(10*time.Minute, "a-1", mcpflow.InputAnswer{Action: mcpflow.InputCancel}, &ans)
	b.answerAt(20*time.Minute, "a-2", mcpflow.InputAnswer{Action: mcpflow.InputCancel}, &again)
	// End the run: the task would otherwise wait for input forever.
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.SignalCancel, "done") }, 30*time.Minute)
	_, err := b.run(t)
	require.NoError(t, err)
	require.True(t, ans.completed, "%+v", ans)
	require.ErrorContains(t, ans.err, "no longer waiting")
	require.True(t, again.rejected, "the question is no longer answerable: %+v", again)
	require.Len(t, d.answers, 1)
	require.Equal(t, mcpflow.StatusCancelled, b.task(t).Status)
}

// An answer for another question than the task's current one (the row's
// question number) is refused right before delivery: it never reaches the
// server, the question stays open, and the answer that names it is
// delivered.
func TestInputAnswerForAnotherQuestionIsRefused(t *testing.T) {
	t.Parallel()
	d := &answeringDriver{fakeDriver: &fakeDriver{submitID: "r-3", statuses: []statusAnswer{working()}}, holds: true}
	b := setupAnswering(t, d)
	var stale, current updateOutcome
	b.answerAt(10*time.Minute, "a-stale", mcpflow.InputAnswer{Action: mcpflow.InputAccept,
		Content: map[string]any{"interpretation": "technical"}, QuestionID: 7}, &stale)
	b.answerAt(20*time.Minute, "a-current", mcpflow.InputAnswer{Action: mcpflow.InputAccept,
		Content: map[string]any{"interpretation": "historical"}, QuestionID: 1}, &current)
	_, err := b.run(t)
	require.NoError(t, err)

	require.True(t, stale.completed, "%+v", stale)
	require.ErrorContains(t, stale.err, "this answer is for question 7, but the task's current question is question 1")
	require.True(t, current.completed, "the question stayed open for its own answer: %+v", current)
	require.NoError(t, current.err)
	require.Len(t, d.answers, 1, "the stale answer never reached the server")
	require.Equal(t, "historical", d.answers[0].Content["interpretation"])
	require.Equal(t, mcpflow.StatusCompleted, b.task(t).Status)
}

// requireUpdateError checks an input update's error: its application
// error type (what worker.TaskClient.AnswerInput tells outcomes apart by)
// and its text.
func requireUpdateError(t *testing.T, err error, typ, text string) {
	t.Helper()
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae, "%v", err)
	require.Equal(t, typ, ae.Type(), "%v", err)
	require.Contains(t, ae.Message(), text)
}

// rowWrites is a task store that records the input state of every row
// write while the task requires input.
type rowWrites struct {
	mcpflow.TaskStore
	mu         sync.Mutex
	answerable []bool
}

func (s *rowWrites) UpdateTask(ctx context.Context, t *mcpflow.Task) error {
	if t.Status == mcpflow.StatusInputRequired {
		s.mu.Lock()
		s.answerable = append(s.answerable, t.InputAnswerable)
		s.mu.Unlock()
	}
	return s.TaskStore.UpdateTask(ctx, t)
}

// An answer the server refuses on every attempt of its delivery fails
// with its own type and the server's words, and the question stays open
// (the row never says otherwise, and its worker keeps it): the next answer
// is delivered and the task goes on with it.
func TestInputAnswerRefusedUpstreamKeepsTheQuestion(t *testing.T) {
	t.Parallel()
	for _, holds := range []bool{false, true} {
		t.Run(map[bool]string{false: "on the server", true: "held by a worker"}[holds], func(t *testing.T) {
			t.Parallel()
			d := &answeringDriver{fakeDriver: &fakeDriver{submitID: "r-4", statuses: []statusAnswer{working()}}, holds: holds, refuse: 3}
			b := setupAnswering(t, d)
			writes := &rowWrites{TaskStore: b.db}
			b.acts.Tasks = writes
			starts := b.recordActivities()
			var refused, next updateOutcome
			b.answerAt(10*time.Minute, "a-1", mcpflow.InputAnswer{Action: mcpflow.InputAccept,
				Content: map[string]any{"interpretation": "technical"}}, &refused)
			// Before the next poll (a minute after the question).
			b.answerAt(10*time.Minute+30*time.Second, "a-2", mcpflow.InputAnswer{Action: mcpflow.InputAccept,
				Content: map[string]any{"interpretation": "historical"}}, &next)
			_, err := b.run(t)
			require.NoError(t, err)

			require.True(t, refused.accepted && refused.completed, "%+v", refused)
			requireUpdateError(t, refused.err, workflows.ErrTypeInputDeliveryFailed,
				"the MCP server did not take the answer: MCP task tool 'answer' refused the answer with error_code 'busy'; the question is still open: answer it again")
			require.Equal(t, 3, d.refused, "the delivery was retried")
			require.True(t, next.accepted && next.completed, "the question stayed open for the next answer: %+v", next)
			require.NoError(t, next.err)
			require.Len(t, d.answers, 1)
			require.Equal(t, "historical", d.answers[0].Content["interpretation"])
			require.Equal(t, mcpflow.StatusCompleted, b.task(t).Status)

			writes.mu.Lock()
			require.NotContains(t, writes.answerable, false, "a row write closed the question: %v", writes.answerable)
			writes.mu.Unlock()
			if holds {
				for _, s := range only(*starts, "Answer") {
					require.Equal(t, "pinned", s.queue, "every delivery went to the worker that holds the question")
				}
			}
		})
	}
}

// An answer that arrives while another answer to the same question is
// being delivered is refused as pending (a conflict that passes), never
// taken as delivered; once the first is delivered, one more meets a closed
// question.
func TestInputAnswerWhileAnotherIsDelivered(t *testing.T) {
	t.Parallel()
	d := &answeringDriver{fakeDriver: &fakeDriver{submitID: "r-5", statuses: []statusAnswer{working()}}}
	b := setupAnswering(t, d)
	var first, second, late updateOutcome
	decided := make(chan struct{})
	d.onAnswer = func(n int) {
		if n == 1 { // the first answer is on its way upstream: it waits for the second's outcome
			b.env.UpdateWorkflow(workflows.UpdateInput, "a-2", &decidedCallbacks{updateCallbacks{out: &second}, decided},
				mcpflow.InputAnswer{Action: mcpflow.InputDecline})
			select {
			case <-decided:
			case <-time.After(5 * time.Second):
				t.Error("the second answer got no outcome while the first was on its way")
			}
		}
	}
	b.env.RegisterDelayedCallback(func() {
		b.env.UpdateWorkflow(workflows.UpdateInput, "a-1", &testsuite.TestUpdateCallback{
			OnAccept: func() { first.accepted = true },
			OnReject: func(err error) { first.rejected, first.err = true, err },
			OnComplete: func(_ any, err error) {
				first.completed, first.err = true, err
				// Sent again once the first was delivered: the question is closed.
				b.env.UpdateWorkflow(workflows.UpdateInput, "a-3", &updateCallbacks{out: &late},
					mcpflow.InputAnswer{Action: mcpflow.InputDecline})
			},
		}, mcpflow.InputAnswer{Action: mcpflow.InputAccept, Content: map[string]any{"interpretation": "historical"}})
	}, 10*time.Minute)
	_, err := b.run(t)
	require.NoError(t, err)

	require.True(t, first.completed, "%+v", first)
	require.NoError(t, first.err)
	require.True(t, second.rejected, "%+v", second)
	requireUpdateError(t, second.err, workflows.ErrTypeInputPending, "an answer to this question is already being delivered")
	require.True(t, late.rejected, "%+v", late)
	requireUpdateError(t, late.err, workflows.ErrTypeInputNotRequired, "the task does not require input")
	require.Len(t, d.answers, 1, "delivered once")
	require.Equal(t, mcpflow.StatusCompleted, b.task(t).Status)
}

// An answer to a task that is being cancelled (its remote cancel not yet
// confirmed) is refused with its own type and text, and never delivered.
func TestInputAnswerWhileCancelling(t *testing.T) {
	t.Parallel()
	d := &answeringDriver{fakeDriver: &fakeDriver{submitID: "r-6", statuses: []statusAnswer{working()},
		cancelAns: []statusAnswer{fails("cancel not possible now"), {snap: mcpflow.Snapshot{Status: mcpflow.StatusCancelled}}}}}
	b := setupAnswering(t, d)
	var ans updateOutcome
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.SignalCancel, "stop") }, 10*time.Minute)
	b.answerAt(10*time.Minute+time.Second, "a-1", mcpflow.InputAnswer{Action: mcpflow.InputDecline}, &ans)
	_, err := b.run(t)
	require.NoError(t, err)
	require.True(t, ans.rejected, "%+v", ans)
	requireUpdateError(t, ans.err, workflows.ErrTypeInputCancelling, "the task is being cancelled")
	require.Empty(t, d.answers)
	require.Equal(t, mcpflow.StatusCancelled, b.task(t).Status)
}

// decidedCallbacks are updateCallbacks that close decided once the update
// was rejected or completed.
type decidedCallbacks struct {
	updateCallbacks
	decided chan struct{}
}

func (u *decidedCallbacks) Reject(err error) { u.updateCallbacks.Reject(err); close(u.decided) }
func (u *decidedCallbacks) Complete(v any, err error) {
	u.updateCallbacks.Complete(v, err)
	close(u.decided)
}
