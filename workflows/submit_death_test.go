package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/workflows"
)

// deadBeats passes heartbeats to the server, except those of attempts whose
// worker "died": those are dropped, as a killed process sends none.
type deadBeats struct {
	next activities.Heartbeater
	mu   sync.Mutex
	dead map[string]bool
}

func (h *deadBeats) kill(token []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dead[string(token)] = true
}

func (h *deadBeats) RecordActivityHeartbeat(ctx context.Context, token []byte, details ...any) error {
	h.mu.Lock()
	dead := h.dead[string(token)]
	h.mu.Unlock()
	if dead {
		return nil
	}
	return h.next.RecordActivityHeartbeat(ctx, token, details...)
}

// dyingDriver's first submit attempt "dies": it stops heartbeating and
// hangs, before sending the submit or (afterSend) right after. Later
// attempts send and answer.
type dyingDriver struct {
	beats     *deadBeats
	afterSend bool
	released  chan struct{} // ends hung attempts at test end
	mu        sync.Mutex
	sent      int
	attempts  []int32
}

func (d *dyingDriver) Submit(ctx context.Context, req mcpflow.SubmitRequest) (mcpflow.Submission, error) {
	info := activity.GetInfo(ctx)
	d.mu.Lock()
	d.attempts = append(d.attempts, info.Attempt)
	d.mu.Unlock()
	if info.Attempt == 1 {
		if d.afterSend {
			if err := mcpflow.BeforeSend(ctx); err != nil {
				return mcpflow.Submission{}, err
			}
			d.mu.Lock()
			d.sent++
			d.mu.Unlock()
		}
		d.beats.kill(info.TaskToken)
		select {
		case <-ctx.Done():
		case <-d.released:
		}
		return mcpflow.Submission{}, errors.New("this attempt's worker is dead")
	}
	if err := mcpflow.BeforeSend(ctx); err != nil {
		return mcpflow.Submission{}, err
	}
	d.mu.Lock()
	d.sent++
	d.mu.Unlock()
	return mcpflow.Submission{RemoteTaskID: "remote-" + req.LocalTaskID, Snapshot: mcpflow.Snapshot{Status: mcpflow.StatusSubmitted}}, nil
}

func (d *dyingDriver) Status(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	return mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: "done"}, nil
}

func (d *dyingDriver) Cancel(ctx context.Context, ref mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	return mcpflow.Snapshot{Status: mcpflow.StatusCancelled}, nil
}

// A worker that dies mid-submit (found by make soak) costs a retry when it
// died before sending the remote submit, and an honest "outcome unknown"
// answer when it died after: never a second remote submit, unless the
// server deduplicates submits by idempotency key, which then gets it again.
// Runs on the Temporal dev server, whose heartbeat timeout notices the dead
// attempt.
func TestSubmitWorkerDeath(t *testing.T) {
	t.Parallel()
	tmp := testenv.StartTemporalT(t, testenv.TemporalOptions{SearchAttributes: workflows.SearchAttributeNames})
	c := tmp.Client()
	for _, tc := range []struct {
		name       string
		afterSend  bool
		idempotent bool
	}{{"before sending", false, false}, {"after sending", true, false}, {"after sending to an idempotent server", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			beats := &deadBeats{next: c, dead: map[string]bool{}}
			d := &dyingDriver{beats: beats, afterSend: tc.afterSend, released: make(chan struct{})}
			db := openDB(t)
			queue := "submit-death-" + mcpflow.NewTaskID()
			w := sdkworker.New(c, queue, sdkworker.Options{})
			w.RegisterWorkflow(workflows.TaskWorkflow)
			w.RegisterActivity(&activities.Activities{Driver: d, Tasks: db, Threads: db, Events: db, Heartbeats: beats})
			require.NoError(t, w.Start())
			t.Cleanup(func() { close(d.released); w.Stop() })

			in := setup(t, &fakeDriver{}).in
			in.Config.CallTimeout = time.Minute
			in.Config.IdempotentSubmit = tc.idempotent
			op := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{ID: in.TaskID, TaskQueue: queue,
				WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_FAIL}, workflows.TaskWorkflowName, in)
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: op,
				UpdateOptions: client.UpdateWorkflowOptions{UpdateName: workflows.UpdateSubmit, UpdateID: in.TaskID,
					WaitForStage: client.WorkflowUpdateStageCompleted}})
			require.NoError(t, err)
			var res workflows.SubmitResult
			err = h.Get(ctx, &res)

			d.mu.Lock()
			sent, attempts := d.sent, append([]int32(nil), d.attempts...)
			d.mu.Unlock()
			if tc.idempotent {
				// Sent again, with the same key: the server answers the
				// task the first send started.
				require.Equal(t, 2, sent)
				require.Equal(t, []int32{1, 2}, attempts)
				require.NoError(t, err)
				require.Equal(t, in.TaskID, res.TaskID)
				return
			}
			require.Equal(t, 1, sent, "the remote submit is sent exactly once")
			if tc.afterSend {
				// Attempt 2 finds the marker and refuses before the driver.
				require.Equal(t, []int32{1}, attempts)
			} else {
				require.Equal(t, []int32{1, 2}, attempts)
			}
			if !tc.afterSend {
				require.NoError(t, err)
				require.Equal(t, in.TaskID, res.TaskID)
				got, err := db.GetTask(ctx, in.TaskID)
				require.NoError(t, err)
				require.Equal(t, "remote-"+in.TaskID, got.RemoteTaskID)
				return
			}
			var ae *temporal.ApplicationError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, workflows.ErrTypeSubmitUnknown, ae.Type())
			require.Equal(t, "The mcpflow worker running this submit stopped after sending it to MCP server 'srv' and before the answer came back: the remote task may have started, but it is not tracked", ae.Message())
			_, err = db.GetTask(ctx, in.TaskID)
			require.Equal(t, mcpflow.ENotFound, mcpflow.ErrorCode(err), "no row for an untracked task")
		})
	}
}
