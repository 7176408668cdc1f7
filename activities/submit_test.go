package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
)

// sendingDriver sends its submit the way the MCP client does: after
// mcpflow.BeforeSend allows it.
type sendingDriver struct{ sent int }

func (d *sendingDriver) Submit(ctx context.Context, req mcpflow.SubmitRequest) (mcpflow.Submission, error) {
	if err := mcpflow.BeforeSend(ctx); err != nil {
		return mcpflow.Submission{}, err
	}
	d.sent++
	return mcpflow.Submission{RemoteTaskID: "r", Snapshot: mcpflow.Snapshot{Status: mcpflow.StatusSubmitted}}, nil
}
func (d *sendingDriver) Status(context.Context, mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	return mcpflow.Snapshot{}, nil
}
func (d *sendingDriver) Cancel(context.Context, mcpflow.TaskReference) (mcpflow.Snapshot, error) {
	return mcpflow.Snapshot{}, nil
}

type scriptedBeats struct {
	err     error
	details []any
}

func (h *scriptedBeats) RecordActivityHeartbeat(_ context.Context, _ []byte, details ...any) error {
	h.details = append(h.details, details...)
	return h.err
}

func submitOnce(t *testing.T, a *activities.Activities, heartbeat any) error {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	if heartbeat != nil {
		env.SetHeartbeatDetails(heartbeat)
	}
	_, err := env.ExecuteActivity(a.Submit, activities.SubmitInput{Request: mcpflow.SubmitRequest{
		UserID: "u", ThreadID: "th", ServerName: "srv", TaskName: "job", LocalTaskID: mcpflow.NewTaskID()},
		Bounds: mcpflow.DefaultBounds()})
	return err
}

func TestSubmitSentMarker(t *testing.T) {
	t.Parallel()
	t.Run("recorded before the submit is sent", func(t *testing.T) {
		d, hb := &sendingDriver{}, &scriptedBeats{}
		require.NoError(t, submitOnce(t, &activities.Activities{Driver: d, Heartbeats: hb}, nil))
		require.Equal(t, 1, d.sent)
		require.Len(t, hb.details, 1)
		require.Contains(t, toJSON(t, hb.details[0]), `"sent":true`)
	})
	t.Run("a marker that cannot be recorded sends nothing and is retryable", func(t *testing.T) {
		d, hb := &sendingDriver{}, &scriptedBeats{err: errors.New("frontend unavailable")}
		err := submitOnce(t, &activities.Activities{Driver: d, Heartbeats: hb}, nil)
		require.Error(t, err)
		require.Zero(t, d.sent)
		var ae *temporal.ApplicationError
		require.ErrorAs(t, err, &ae)
		require.False(t, ae.NonRetryable(), "nothing was sent: another attempt may submit")
		require.Contains(t, ae.Error(), "record that the submit is being sent: frontend unavailable")
	})
	t.Run("an earlier attempt's marker refuses without sending", func(t *testing.T) {
		d := &sendingDriver{}
		err := submitOnce(t, &activities.Activities{Driver: d, Heartbeats: &scriptedBeats{}}, map[string]bool{"sent": true})
		var ae *temporal.ApplicationError
		require.ErrorAs(t, err, &ae)
		require.True(t, ae.NonRetryable())
		require.Equal(t, "McpTaskSubmitOutcomeUnknown", ae.Type())
		require.Zero(t, d.sent)
	})
	t.Run("an earlier attempt that did not send lets this one send", func(t *testing.T) {
		d := &sendingDriver{}
		require.NoError(t, submitOnce(t, &activities.Activities{Driver: d, Heartbeats: &scriptedBeats{}}, map[string]bool{"sent": false}))
		require.Equal(t, 1, d.sent)
	})
}

// hangingDriver sends its submit and then waits for the attempt's context,
// like a call in flight when the worker stops.
type hangingDriver struct{ sendingDriver }

func (d *hangingDriver) Submit(ctx context.Context, req mcpflow.SubmitRequest) (mcpflow.Submission, error) {
	if err := mcpflow.BeforeSend(ctx); err != nil {
		return mcpflow.Submission{}, err
	}
	d.sent++
	<-ctx.Done()
	return mcpflow.Submission{}, fmt.Errorf("transport: %w", ctx.Err())
}

// An attempt cut short (worker stopping, attempt timeout) is retryable,
// not a failed submit: the next attempt decides from the sent marker.
func TestSubmitInterruptedIsRetryable(t *testing.T) {
	t.Parallel()
	d, hb := &hangingDriver{}, &scriptedBeats{}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	stopping, stop := context.WithCancel(context.Background())
	stop()
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: stopping})
	a := &activities.Activities{Driver: d, Heartbeats: hb}
	env.RegisterActivity(a)
	_, err := env.ExecuteActivity(a.Submit, activities.SubmitInput{Request: mcpflow.SubmitRequest{
		UserID: "u", ThreadID: "th", ServerName: "srv", TaskName: "job", LocalTaskID: mcpflow.NewTaskID()},
		Bounds: mcpflow.DefaultBounds()})
	require.Equal(t, 1, d.sent)
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.False(t, ae.NonRetryable(), "an interrupted attempt is retried: %v", err)
	require.NotEqual(t, "McpTaskSubmitFailed", ae.Type())
	require.Contains(t, err.Error(), "the submit attempt was interrupted: context canceled")
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
