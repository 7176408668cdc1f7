package workflows_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/workflows"
)

// The submit arguments cross Temporal twice (the workflow input, then the
// submit activity's input) and reach the driver with every digit: integers
// beyond 2^53 and long decimals, nested ones too.
func TestSubmitArgumentsKeepEveryDigit(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{completed()}}
	b := setup(t, d)
	b.in.Arguments = map[string]any{
		"big":    json.Number("9007199254740993"),
		"nested": map[string]any{"list": []any{json.Number("-9007199254740993"), json.Number("0.10000000000000000555"), "x"}},
	}
	_, err := b.run(t)
	require.NoError(t, err)
	require.NoError(t, b.env.GetWorkflowError())
	require.Len(t, d.submitReqs, 1)
	got, err := json.Marshal(d.submitReqs[0].Arguments)
	require.NoError(t, err)
	require.Equal(t, `{"big":9007199254740993,"nested":{"list":[-9007199254740993,0.10000000000000000555,"x"]}}`, string(got))

	// The input is carried across continue-as-new unchanged: a decode and
	// re-encode gives the same bytes.
	first, err := json.Marshal(b.in)
	require.NoError(t, err)
	var again workflows.TaskInput
	require.NoError(t, json.Unmarshal(first, &again))
	second, err := json.Marshal(again)
	require.NoError(t, err)
	require.Equal(t, string(first), string(second))
}

// oldTaskInput is TaskInput as it was encoded before Arguments became
// mcpflow.Arguments: a map[string]any whose numbers were float64.
type oldTaskInput struct {
	workflows.TaskInput
	Arguments map[string]any `json:"arguments"`
}

// A workflow input written by the earlier code (arguments a plain map of
// float64 numbers) still starts and runs a task: the same JSON object
// decodes into mcpflow.Arguments, numbers as json.Number.
func TestTaskInputOfEarlierShapeRuns(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{submitID: "remote-1", statuses: []statusAnswer{completed()}}
	b := setup(t, d)
	old := oldTaskInput{TaskInput: b.in, Arguments: map[string]any{
		"big": float64(9007199254740992), "exp": float64(1000), "ratio": 0.5,
		"nested": map[string]any{"list": []any{float64(1), "x", true, nil}},
	}}
	raw, err := json.Marshal(old)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"arguments":{"big":9007199254740992,"exp":1000,`, "the earlier wire shape")
	var in workflows.TaskInput
	require.NoError(t, json.Unmarshal(raw, &in))
	require.Equal(t, mcpflow.Arguments{"big": json.Number("9007199254740992"), "exp": json.Number("1000"), "ratio": json.Number("0.5"),
		"nested": map[string]any{"list": []any{json.Number("1"), "x", true, nil}}}, in.Arguments)

	res, err := b.runInput(t, old)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusSubmitted, res.Status)
	require.NoError(t, b.env.GetWorkflowError())
	require.Equal(t, mcpflow.StatusCompleted, b.task(t).Status)
	require.Len(t, d.submitReqs, 1)
	got, err := json.Marshal(d.submitReqs[0].Arguments)
	require.NoError(t, err)
	require.Equal(t, `{"big":9007199254740992,"exp":1000,"nested":{"list":[1,"x",true,null]},"ratio":0.5}`, string(got))
}

// A history recorded by the code before this change (a durable submit with
// a big integer, a decimal, an exponent and a nested list in its
// arguments, through submit, a poll and completion, with the submit
// update) replays without a non-determinism error.
func TestReplayHistoryRecordedBeforeArgumentsKeptNumbers(t *testing.T) {
	t.Parallel()
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.TaskWorkflow)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/task_arguments_before_usenumber.json"))
}

// runInput is run with the workflow input in given (any value that
// encodes to a TaskInput payload).
func (b *bundle) runInput(t *testing.T, in any) (*workflows.SubmitResult, error) {
	t.Helper()
	var res *workflows.SubmitResult
	var subErr error
	b.env.RegisterDelayedCallback(func() {
		b.env.UpdateWorkflow(workflows.UpdateSubmit, "submit-1", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { subErr = err },
			OnComplete: func(v any, err error) {
				subErr = err
				if err == nil {
					res = v.(*workflows.SubmitResult)
				}
			},
		})
	}, 0)
	b.env.ExecuteWorkflow(workflows.TaskWorkflowName, in) // by name: the input is not type-checked against TaskInput
	require.True(t, b.env.IsWorkflowCompleted())
	return res, subErr
}
