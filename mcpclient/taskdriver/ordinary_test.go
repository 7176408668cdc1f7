package taskdriver

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// drvCall is one call the fake tool caller saw.
type drvCall struct {
	Server, Tool, UserID, ThreadID string
	Args                           map[string]any
}

// drvFake is a scripted Ordinary.Call: it answers each call with the next
// result (or error) and records what it was asked. It stands in for the
// remote server only to inject payloads a real server would not send.
type drvFake struct {
	results []*mcp.CallToolResult
	err     error
	calls   []drvCall
}

func (f *drvFake) call(_ context.Context, server, tool, userID, threadID string, args map[string]any) (*mcp.CallToolResult, error) {
	f.calls = append(f.calls, drvCall{server, tool, userID, threadID, args})
	if f.err != nil {
		return nil, f.err
	}
	if len(f.results) == 0 {
		return nil, errors.New("drvFake: no scripted result")
	}
	r := f.results[0]
	f.results = f.results[1:]
	return r, nil
}

// drvDriver returns a driver over a fake answering results in order.
func drvDriver(results ...*mcp.CallToolResult) (*Ordinary, *drvFake) {
	f := &drvFake{results: results}
	return &Ordinary{Call: f.call}, f
}

// drvRaw is a result whose structuredContent arrives as wire JSON, as mcp-go
// decodes it on the client side.
func drvRaw(t *testing.T, structured string, text ...string) *mcp.CallToolResult {
	t.Helper()
	content := `[]`
	if len(text) > 0 {
		var blocks []mcp.Content
		for _, s := range text {
			blocks = append(blocks, mcp.NewTextContent(s))
		}
		b, err := json.Marshal(blocks)
		require.NoError(t, err)
		content = string(b)
	}
	msg := `{"content":` + content
	if structured != "" {
		msg += `,"structuredContent":` + structured
	}
	msg += `}`
	raw := json.RawMessage(msg)
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil && structured != "" && json.Valid([]byte(structured)) {
		// mcp-go v1.2.1 cannot decode numbers beyond float64 (1e400) into
		// StructuredContent; a caller that keeps the raw bytes still can.
		return &mcp.CallToolResult{RawStructuredContent: json.RawMessage(structured)}
	}
	require.NoError(t, err)
	return res
}

// drvIsError is an isError result with the given content blocks.
func drvIsError(blocks ...mcp.Content) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: blocks}
}

var drvData = map[string]string{
	mcpflow.DriverDataSubmitTool: "start_report",
	mcpflow.DriverDataStatusTool: "status_report",
	mcpflow.DriverDataCancelTool: "cancel_report",
}

func drvRequest() mcpflow.SubmitRequest {
	return mcpflow.SubmitRequest{
		UserID: "user-1", ThreadID: "thread-1", ServerName: "reports", TaskName: "start_report",
		Arguments: map[string]any{"topic": "q3", "pages": 3, "nested": map[string]any{"a": []any{1, "x"}}},
		DriverData: map[string]string{
			mcpflow.DriverDataSubmitTool: "start_report",
			mcpflow.DriverDataStatusTool: "status_report",
		},
	}
}

func drvRef() mcpflow.TaskReference {
	return mcpflow.TaskReference{
		LocalTaskID: mcpflow.NewTaskID(), UserID: "user-1", ThreadID: "thread-1",
		ServerName: "reports", RemoteTaskID: "remote-1", DriverData: drvData,
	}
}

func drvFloat(v float64) *float64 { return &v }
func drvStr(v string) *string     { return &v }

// drvRequireProtocol asserts err is a protocol error with exactly msg.
func drvRequireProtocol(t *testing.T, err error, msg string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, mcpflow.IsProtocolError(err), "want a protocol error, got %T: %v", err, err)
	require.Equal(t, msg, err.Error())
}

func TestOrdinaryDriverSubmit(t *testing.T) {
	t.Parallel()
	d, f := drvDriver(drvRaw(t, `{"task_id":"remote-1","status":"running","extra":{"x":1},"poll_after_seconds":3}`))
	req := drvRequest()
	sub, err := d.Submit(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, mcpflow.Submission{
		RemoteTaskID: "remote-1",
		Snapshot:     mcpflow.Snapshot{Status: mcpflow.StatusSubmitted},
		DriverData:   req.DriverData,
	}, sub)
	require.NotContains(t, sub.DriverData, "remote_task_id")
	sub.DriverData["x"] = "y"
	require.NotContains(t, req.DriverData, "x", "driver data is a copy")

	require.Len(t, f.calls, 1)
	require.Equal(t, drvCall{Server: "reports", Tool: "start_report", UserID: "user-1", ThreadID: "thread-1",
		Args: req.Arguments}, f.calls[0])
}

func TestOrdinaryDriverSubmitNilArgumentsSendsEmptyObject(t *testing.T) {
	t.Parallel()
	d, f := drvDriver(drvRaw(t, `{"task_id":"r","status":"running"}`))
	req := drvRequest()
	req.Arguments = nil
	req.DriverData = map[string]string{mcpflow.DriverDataSubmitTool: "start_report"}
	_, err := d.Submit(t.Context(), req)
	require.NoError(t, err)
	require.NotNil(t, f.calls[0].Args)
	require.Empty(t, f.calls[0].Args)
}

func TestOrdinaryDriverSubmitInProcessStructuredContent(t *testing.T) {
	t.Parallel()
	// A result built in process carries StructuredContent without raw bytes.
	d, _ := drvDriver(mcp.NewToolResultStructured(map[string]any{"task_id": "r-9", "status": "running"}, "ok"))
	sub, err := d.Submit(t.Context(), drvRequest())
	require.NoError(t, err)
	require.Equal(t, "r-9", sub.RemoteTaskID)
}

func TestOrdinaryDriverSubmitLongHandleLeftToService(t *testing.T) {
	t.Parallel()
	// The service bounds the handle so that it can still cancel it.
	long := strings.Repeat("r", 256)
	d, _ := drvDriver(drvRaw(t, `{"task_id":"`+long+`","status":"running"}`))
	sub, err := d.Submit(t.Context(), drvRequest())
	require.NoError(t, err)
	require.Equal(t, long, sub.RemoteTaskID)
}

func TestOrdinaryDriverStructuredContentOnly(t *testing.T) {
	t.Parallel()
	t.Run("text that looks like JSON is not parsed", func(t *testing.T) {
		t.Parallel()
		d, _ := drvDriver(drvRaw(t, "", `{"task_id":"remote-1","status":"running"}`))
		_, err := d.Submit(t.Context(), drvRequest())
		drvRequireProtocol(t, err, "MCP task tool 'start_report' must return structuredContent; text content is not parsed")
	})
	t.Run("text is ignored next to structuredContent", func(t *testing.T) {
		t.Parallel()
		d, _ := drvDriver(drvRaw(t, `{"task_id":"remote-1","status":"completed","result":"from structured"}`,
			`{"task_id":"remote-1","status":"failed","error":"from text"}`))
		snap, err := d.Status(t.Context(), drvRef())
		require.NoError(t, err)
		require.Equal(t, mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: "from structured"}, snap)
	})
	t.Run("absent on status and cancel", func(t *testing.T) {
		t.Parallel()
		d, _ := drvDriver(drvRaw(t, "", "working"), drvRaw(t, "", "cancelled"))
		_, err := d.Status(t.Context(), drvRef())
		drvRequireProtocol(t, err, "MCP task tool 'status_report' must return structuredContent; text content is not parsed")
		_, err = d.Cancel(t.Context(), drvRef())
		drvRequireProtocol(t, err, "MCP task tool 'cancel_report' must return structuredContent; text content is not parsed")
	})
	t.Run("nil result", func(t *testing.T) {
		t.Parallel()
		d, _ := drvDriver(nil)
		_, err := d.Status(t.Context(), drvRef())
		drvRequireProtocol(t, err, "MCP task tool 'status_report' must return structuredContent; text content is not parsed")
	})
}

func TestOrdinaryDriverSubmitInvalidPayload(t *testing.T) {
	t.Parallel()
	const absent = "MCP task tool 'start_report' must return structuredContent; text content is not parsed"
	const prefix = "Invalid structuredContent from MCP task tool 'start_report': "
	for name, tc := range map[string]struct{ payload, want string }{
		"null":              {`null`, absent},
		"array":             {`[{"task_id":"r","status":"running"}]`, prefix + "structuredContent must be a JSON object"},
		"missing task_id":   {`{"status":"running"}`, prefix + "task_id is required"},
		"null task_id":      {`{"task_id":null,"status":"running"}`, prefix + "task_id is required"},
		"empty task_id":     {`{"task_id":"","status":"running"}`, prefix + "task_id must not be empty"},
		"task_id number":    {`{"task_id":42,"status":"running"}`, prefix + "task_id must be a string, got number"},
		"missing status":    {`{"task_id":"r"}`, prefix + "status is required"},
		"status queued":     {`{"task_id":"r","status":"queued"}`, prefix + "status must be 'running', got 'queued'"},
		"status completed":  {`{"task_id":"r","status":"completed"}`, prefix + "status must be 'running', got 'completed'"},
		"status not string": {`{"task_id":"r","status":true}`, prefix + "status must be a string, got boolean"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, _ := drvDriver(drvRaw(t, tc.payload))
			_, err := d.Submit(t.Context(), drvRequest())
			drvRequireProtocol(t, err, tc.want)
		})
	}
}

func TestOrdinaryDriverIsError(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 600)
	cases := map[string]struct {
		res    *mcp.CallToolResult
		detail string
	}{
		"first text block, stripped": {drvIsError(mcp.NewTextContent("  upstream temporarily unavailable \n"), mcp.NewTextContent("second")), ": upstream temporarily unavailable"},
		"detail cut to 500 chars":    {drvIsError(mcp.NewTextContent(long)), ": " + strings.Repeat("é", 500)},
		"blank first text block":     {drvIsError(mcp.NewTextContent("   "), mcp.NewTextContent("second")), ""},
		"no content":                 {drvIsError(), ""},
		"image before text":          {drvIsError(mcp.NewImageContent("aGk=", "image/png"), mcp.NewTextContent("boom")), ": boom"},
		"structuredContent ignored": {&mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent("bad")},
			StructuredContent: map[string]any{"task_id": "remote-1", "status": "completed"}}, ": bad"},
	}
	roles := []struct {
		tool string
		call func(d *Ordinary) error
	}{
		{"start_report", func(d *Ordinary) error { _, err := d.Submit(t.Context(), drvRequest()); return err }},
		{"status_report", func(d *Ordinary) error { _, err := d.Status(t.Context(), drvRef()); return err }},
		{"cancel_report", func(d *Ordinary) error { _, err := d.Cancel(t.Context(), drvRef()); return err }},
	}
	for name, tc := range cases {
		for _, role := range roles {
			t.Run(name+"/"+role.tool, func(t *testing.T) {
				d, _ := drvDriver(tc.res)
				err := role.call(d)
				require.Error(t, err)
				require.False(t, mcpflow.IsProtocolError(err), "isError must be retryable")
				var pe *mcpflow.ProtocolError
				require.False(t, errors.As(err, &pe))
				require.Equal(t, "MCP task tool '"+role.tool+"' returned an error"+tc.detail, err.Error())
			})
		}
	}
}

func TestOrdinaryDriverCallerErrorIsTransient(t *testing.T) {
	t.Parallel()
	down := errors.New("network down")
	f := &drvFake{err: down}
	d := &Ordinary{Call: f.call}
	_, err := d.Submit(t.Context(), drvRequest())
	require.ErrorIs(t, err, down)
	require.False(t, mcpflow.IsProtocolError(err))
	require.Contains(t, err.Error(), "network down")
	_, err = d.Status(t.Context(), drvRef())
	require.ErrorIs(t, err, down)
	require.False(t, mcpflow.IsProtocolError(err))
	_, err = d.Cancel(t.Context(), drvRef())
	require.ErrorIs(t, err, down)
	require.False(t, mcpflow.IsProtocolError(err))

	// A domain error from the caller keeps its code and stays transient.
	nf := mcpflow.Errorf(mcpflow.ETimeout, "MCP tool 'status_report' on server 'reports' timed out after 1.0s")
	d = &Ordinary{Call: (&drvFake{err: nf}).call}
	_, err = d.Status(t.Context(), drvRef())
	require.ErrorIs(t, err, nf)
	require.Equal(t, mcpflow.ETimeout, mcpflow.ErrorCode(err))
	require.False(t, mcpflow.IsProtocolError(err))

	// A protocol error from the caller stays permanent.
	pe := mcpflow.NewProtocolError("broken contract")
	d = &Ordinary{Call: (&drvFake{err: pe}).call}
	_, err = d.Status(t.Context(), drvRef())
	drvRequireProtocol(t, err, "broken contract")

	// Cancellation is visible to the caller of the driver.
	d = &Ordinary{Call: (&drvFake{err: context.Canceled}).call}
	_, err = d.Cancel(t.Context(), drvRef())
	require.ErrorIs(t, err, context.Canceled)
}

func TestOrdinaryDriverMissingDriverData(t *testing.T) {
	t.Parallel()
	for _, role := range []string{mcpflow.DriverDataSubmitTool, mcpflow.DriverDataStatusTool, mcpflow.DriverDataCancelTool} {
		for _, value := range []*string{nil, drvStr(""), drvStr("  ")} {
			data := map[string]string{}
			for k, v := range drvData {
				if k != role {
					data[k] = v
				}
			}
			if value != nil {
				data[role] = *value
			}
			d, f := drvDriver()
			var err error
			switch role {
			case mcpflow.DriverDataSubmitTool:
				req := drvRequest()
				req.DriverData = data
				_, err = d.Submit(t.Context(), req)
			case mcpflow.DriverDataStatusTool:
				ref := drvRef()
				ref.DriverData = data
				_, err = d.Status(t.Context(), ref)
			default:
				ref := drvRef()
				ref.DriverData = data
				_, err = d.Cancel(t.Context(), ref)
			}
			drvRequireProtocol(t, err, "Task driver_data is missing required '"+role+"'")
			require.Empty(t, f.calls, "no call without a tool name")
		}
	}
}

func TestOrdinaryDriverStatus(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		payload string
		want    mcpflow.Snapshot
	}{
		"running becomes working with hint": {
			`{"task_id":"remote-1","status":"running","poll_after_seconds":12.5,"unknown":"ignored"}`,
			mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: drvFloat(12.5)},
		},
		"running with a progress message": {
			`{"task_id":"remote-1","status":"running","message":"step 2 of 3"}`,
			mcpflow.Snapshot{Status: mcpflow.StatusWorking, Message: drvStr("step 2 of 3")},
		},
		"a message that is not a string is ignored": {
			`{"task_id":"remote-1","status":"running","message":{"pct":40}}`,
			mcpflow.Snapshot{Status: mcpflow.StatusWorking},
		},
		"integer hint": {
			`{"task_id":"remote-1","status":"running","poll_after_seconds":1}`,
			mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: drvFloat(1)},
		},
		"null optionals are absent": {
			`{"task_id":"remote-1","status":"running","result":null,"result_artifact":null,"error":null,"error_code":null,"input_required":null,"poll_after_seconds":null}`,
			mcpflow.Snapshot{Status: mcpflow.StatusWorking},
		},
		"completed with result and artifact": {
			`{"task_id":"remote-1","status":"completed","result":{"pages":3,"big":12345678901234567890,"tags":["a"]},"result_artifact":{"uri":"file:///tmp/r.pdf","mime_type":"application/pdf","size":10}}`,
			mcpflow.Snapshot{Status: mcpflow.StatusCompleted,
				Result:         map[string]any{"pages": json.Number("3"), "big": json.Number("12345678901234567890"), "tags": []any{"a"}},
				ResultArtifact: map[string]string{"uri": "file:///tmp/r.pdf", "mime_type": "application/pdf"}},
		},
		"completed with scalar result": {
			`{"task_id":"remote-1","status":"completed","result":"done"}`,
			mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: "done"},
		},
		"input_required pollable with payload": {
			`{"task_id":"remote-1","status":"input_required","input_required":{"question":"Which format?","options":["pdf","csv"]},"poll_after_seconds":30}`,
			mcpflow.Snapshot{Status: mcpflow.StatusInputRequired,
				InputRequired:    map[string]any{"question": "Which format?", "options": []any{"pdf", "csv"}},
				PollAfterSeconds: drvFloat(30)},
		},
		"failed with error": {
			`{"task_id":"remote-1","status":"failed","error":"disk full","error_code":"quota"}`,
			mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: drvStr("disk full")},
		},
		"cancelled": {
			`{"task_id":"remote-1","status":"cancelled"}`,
			mcpflow.Snapshot{Status: mcpflow.StatusCancelled},
		},
		"task_not_found with error": {
			`{"task_id":"remote-1","status":"failed","error_code":"task_not_found","error":"expired"}`,
			mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: drvStr("expired")},
		},
		"task_not_found without error": {
			`{"task_id":"remote-1","status":"failed","error_code":"task_not_found"}`,
			mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: drvStr("Remote MCP task was not found")},
		},
		"task_not_found regardless of status": {
			`{"task_id":"remote-1","status":"running","error_code":"task_not_found","poll_after_seconds":5,"result":1}`,
			mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: drvStr("Remote MCP task was not found")},
		},
		"task_not_found even when input_required lacks its payload": {
			`{"task_id":"remote-1","status":"input_required","error_code":"task_not_found","error":"gone"}`,
			mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: drvStr("gone")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, f := drvDriver(drvRaw(t, tc.payload, "Job is running (text is never parsed)."))
			ref := drvRef()
			snap, err := d.Status(t.Context(), ref)
			require.NoError(t, err)
			require.Equal(t, tc.want, snap)
			require.Equal(t, tc.want.IsPollable(), snap.IsPollable())
			require.Equal(t, []drvCall{{Server: "reports", Tool: "status_report", UserID: "user-1", ThreadID: "thread-1",
				Args: map[string]any{"task_id": "remote-1"}}}, f.calls)
			_, err = snap.Normalize(mcpflow.DefaultBounds())
			require.NoError(t, err, "the snapshot is storable")
		})
	}
}

func TestOrdinaryDriverStatusInputRequiredIsPollable(t *testing.T) {
	t.Parallel()
	d, _ := drvDriver(drvRaw(t, `{"task_id":"remote-1","status":"input_required","input_required":{"q":"?"}}`))
	snap, err := d.Status(t.Context(), drvRef())
	require.NoError(t, err)
	require.True(t, snap.IsPollable())
	require.True(t, snap.NeedsAttention())
}

func TestOrdinaryDriverStatusInvalidPayload(t *testing.T) {
	t.Parallel()
	const prefix = "Invalid structuredContent from MCP task tool 'status_report': "
	const hint = prefix + "poll_after_seconds must be a finite positive number"
	cases := map[string]struct{ payload, want string }{
		"mismatched task_id":                {`{"task_id":"remote-2","status":"running"}`, "MCP task tool 'status_report' task_id does not match the persisted remote task: expected 'remote-1', got 'remote-2'"},
		"mismatch with task_not_found":      {`{"task_id":"remote-2","status":"failed","error_code":"task_not_found"}`, "MCP task tool 'status_report' task_id does not match the persisted remote task: expected 'remote-1', got 'remote-2'"},
		"unknown status":                    {`{"task_id":"remote-1","status":"queued"}`, prefix + "status must be one of running, input_required, completed, failed, cancelled, got 'queued'"},
		"normalized status is not accepted": {`{"task_id":"remote-1","status":"working"}`, prefix + "status must be one of running, input_required, completed, failed, cancelled, got 'working'"},
		"status number":                     {`{"task_id":"remote-1","status":1}`, prefix + "status must be a string, got number"},
		"missing status":                    {`{"task_id":"remote-1"}`, prefix + "status is required"},
		"missing task_id":                   {`{"status":"running"}`, prefix + "task_id is required"},
		"empty task_id":                     {`{"task_id":"","status":"running"}`, prefix + "task_id must not be empty"},
		"task_id number":                    {`{"task_id":1,"status":"running"}`, prefix + "task_id must be a string, got number"},
		"task_id over 255":                  {`{"task_id":"` + strings.Repeat("x", 256) + `","status":"running"}`, prefix + "task_id must not exceed 255 characters"},
		"input_required without payload":    {`{"task_id":"remote-1","status":"input_required"}`, prefix + "input_required is required when status is 'input_required'"},
		"input_required null":               {`{"task_id":"remote-1","status":"input_required","input_required":null}`, prefix + "input_required is required when status is 'input_required'"},
		"input_required not an object":      {`{"task_id":"remote-1","status":"input_required","input_required":"Which?"}`, prefix + "input_required must be an object, got string"},
		"hint zero":                         {`{"task_id":"remote-1","status":"running","poll_after_seconds":0}`, hint},
		"hint negative":                     {`{"task_id":"remote-1","status":"running","poll_after_seconds":-1}`, hint},
		"hint overflows to infinity":        {`{"task_id":"remote-1","status":"running","poll_after_seconds":1e400}`, hint},
		"hint string":                       {`{"task_id":"remote-1","status":"running","poll_after_seconds":"5"}`, prefix + "poll_after_seconds must be a number, got string"},
		"hint boolean":                      {`{"task_id":"remote-1","status":"running","poll_after_seconds":true}`, prefix + "poll_after_seconds must be a number, got boolean"},
		"artifact not an object":            {`{"task_id":"remote-1","status":"completed","result_artifact":"file:///r"}`, prefix + "result_artifact must be an object, got string"},
		"artifact without uri":              {`{"task_id":"remote-1","status":"completed","result_artifact":{"mime_type":"text/plain"}}`, prefix + "result_artifact.uri must be a non-empty string"},
		"artifact empty mime_type":          {`{"task_id":"remote-1","status":"completed","result_artifact":{"uri":"file:///r","mime_type":""}}`, prefix + "result_artifact.mime_type must be a non-empty string"},
		"artifact uri number":               {`{"task_id":"remote-1","status":"completed","result_artifact":{"uri":1,"mime_type":"text/plain"}}`, prefix + "result_artifact.uri must be a non-empty string"},
		"error not a string":                {`{"task_id":"remote-1","status":"failed","error":{"msg":"x"}}`, prefix + "error must be a string, got object"},
		"error_code not a string":           {`{"task_id":"remote-1","status":"failed","error_code":404}`, prefix + "error_code must be a string, got number"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, _ := drvDriver(drvRaw(t, tc.payload))
			_, err := d.Status(t.Context(), drvRef())
			drvRequireProtocol(t, err, tc.want)
		})
	}
}

func TestOrdinaryDriverStatusInProcessInfiniteHint(t *testing.T) {
	t.Parallel()
	// An in-process result can hold values JSON cannot: still a protocol error.
	d, _ := drvDriver(&mcp.CallToolResult{StructuredContent: map[string]any{
		"task_id": "remote-1", "status": "running", "poll_after_seconds": math.Inf(1)}})
	_, err := d.Status(t.Context(), drvRef())
	require.True(t, mcpflow.IsProtocolError(err), "%v", err)
	require.Contains(t, err.Error(), "Invalid structuredContent from MCP task tool 'status_report': ")
}

func TestOrdinaryDriverCancel(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		payload string
		want    mcpflow.Snapshot
	}{
		"cancelled": {`{"task_id":"remote-1","status":"cancelled"}`, mcpflow.Snapshot{Status: mcpflow.StatusCancelled}},
		"already completed with result": {
			`{"task_id":"remote-1","status":"completed","result":{"answer":42},"result_artifact":{"uri":"s3://b/k","mime_type":"text/csv"}}`,
			mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"answer": json.Number("42")},
				ResultArtifact: map[string]string{"uri": "s3://b/k", "mime_type": "text/csv"}},
		},
		"already failed with error": {`{"task_id":"remote-1","status":"failed","error":"job failed"}`,
			mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: drvStr("job failed")}},
		"hints, error_code and input_required ignored": {
			`{"task_id":"remote-1","status":"cancelled","poll_after_seconds":-1,"error_code":7,"input_required":"x"}`,
			mcpflow.Snapshot{Status: mcpflow.StatusCancelled},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, f := drvDriver(drvRaw(t, tc.payload))
			snap, err := d.Cancel(t.Context(), drvRef())
			require.NoError(t, err)
			require.Equal(t, tc.want, snap)
			require.True(t, snap.Status.IsTerminal())
			require.Equal(t, []drvCall{{Server: "reports", Tool: "cancel_report", UserID: "user-1", ThreadID: "thread-1",
				Args: map[string]any{"task_id": "remote-1"}}}, f.calls)
		})
	}
}

func TestOrdinaryDriverCancelInvalidPayload(t *testing.T) {
	t.Parallel()
	const prefix = "Invalid structuredContent from MCP task tool 'cancel_report': "
	cases := map[string]struct{ payload, want string }{
		"running is not terminal":        {`{"task_id":"remote-1","status":"running"}`, prefix + "status must be one of cancelled, completed, failed, got 'running'"},
		"input_required is not terminal": {`{"task_id":"remote-1","status":"input_required","input_required":{}}`, prefix + "status must be one of cancelled, completed, failed, got 'input_required'"},
		"mismatched task_id":             {`{"task_id":"other","status":"cancelled"}`, "MCP task tool 'cancel_report' task_id does not match the persisted remote task: expected 'remote-1', got 'other'"},
		"task_id number":                 {`{"task_id":7,"status":"cancelled"}`, prefix + "task_id must be a string, got number"},
		"artifact not an object":         {`{"task_id":"remote-1","status":"completed","result_artifact":[]}`, prefix + "result_artifact must be an object, got array"},
		"error not a string":             {`{"task_id":"remote-1","status":"failed","error":false}`, prefix + "error must be a string, got boolean"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, _ := drvDriver(drvRaw(t, tc.payload))
			_, err := d.Cancel(t.Context(), drvRef())
			drvRequireProtocol(t, err, tc.want)
		})
	}
}

// drvDemoHTTP runs the demo-mcp binary over streamable HTTP on 127.0.0.1
// and returns its MCP endpoint; it is stopped at cleanup.
func drvDemoHTTP(t *testing.T) string {
	t.Helper()
	return testenv.StartDemo(t, config.TransportHTTP, "--workdir", t.TempDir()).URL
}

// TestOrdinaryDriverDemoServer drives the real demo server over streamable
// HTTP: submit, status while running, status once completed, and cancel.
func TestOrdinaryDriverDemoServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	url := drvDemoHTTP(t)
	init := 10.0
	sess, err := session.Dial(ctx, &config.Server{Name: "demo", Enabled: true, Type: config.TransportHTTP, URL: url,
		SessionInitTimeout: &init}, session.DialOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sess.Close() })

	var calls []drvCall
	d := &Ordinary{Call: func(ctx context.Context, server, tool, userID, threadID string, args map[string]any) (*mcp.CallToolResult, error) {
		calls = append(calls, drvCall{server, tool, userID, threadID, args})
		return sess.CallTool(ctx, tool, args, nil)
	}}
	data := map[string]string{
		mcpflow.DriverDataSubmitTool: demomcp.ToolSubmitJob,
		mcpflow.DriverDataStatusTool: demomcp.ToolGetJobStatus,
		mcpflow.DriverDataCancelTool: demomcp.ToolCancelJob,
	}
	submit := func(args map[string]any) mcpflow.TaskReference {
		t.Helper()
		sub, err := d.Submit(ctx, mcpflow.SubmitRequest{UserID: "user-1", ThreadID: "thread-1", ServerName: "demo",
			TaskName: demomcp.ToolSubmitJob, Arguments: args, DriverData: data})
		require.NoError(t, err)
		require.NoError(t, sub.Validate())
		require.Equal(t, mcpflow.StatusSubmitted, sub.Snapshot.Status)
		require.Equal(t, data, sub.DriverData)
		return mcpflow.TaskReference{LocalTaskID: mcpflow.NewTaskID(), UserID: "user-1", ThreadID: "thread-1",
			ServerName: "demo", RemoteTaskID: sub.RemoteTaskID, DriverData: sub.DriverData}
	}

	// A job that stays running until the test moves on: the first status
	// call answers isError (retryable), then working with the hint.
	ref := submit(map[string]any{"duration_seconds": 0.5, "outcome": "completed", "poll_after_seconds": 2, "status_errors": 1})
	_, err = d.Status(ctx, ref)
	require.EqualError(t, err, "MCP task tool 'get_job_status' returned an error: upstream temporarily unavailable")
	require.False(t, mcpflow.IsProtocolError(err))
	snap, err := d.Status(ctx, ref)
	require.NoError(t, err)
	if snap.Status == mcpflow.StatusWorking { // the job may be done already on a slow machine
		require.Equal(t, drvFloat(2), snap.PollAfterSeconds)
	}
	for snap.Status == mcpflow.StatusWorking {
		select {
		case <-ctx.Done():
			t.Fatalf("job still working: %v", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		snap, err = d.Status(ctx, ref)
		require.NoError(t, err)
	}
	require.Equal(t, mcpflow.StatusCompleted, snap.Status)
	require.Equal(t, map[string]any{"answer": json.Number("42")}, snap.Result)
	require.Nil(t, snap.PollAfterSeconds)

	// Cancelling a finished job reports its actual terminal status.
	snap, err = d.Cancel(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, snap.Status)

	// Cancelling a long job cancels it; status agrees afterwards.
	long := submit(map[string]any{"duration_seconds": 3600})
	snap, err = d.Status(ctx, long)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusWorking, snap.Status)
	snap, err = d.Cancel(ctx, long)
	require.NoError(t, err)
	require.Equal(t, mcpflow.Snapshot{Status: mcpflow.StatusCancelled}, snap)
	snap, err = d.Status(ctx, long)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCancelled, snap.Status)

	// An expired job is task_not_found: failed with the server's error.
	gone := submit(map[string]any{"duration_seconds": 0, "outcome": "not_found"})
	snap, err = d.Status(ctx, gone)
	require.NoError(t, err)
	require.Equal(t, mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: drvStr("job expired")}, snap)

	for _, c := range calls {
		require.Equal(t, "demo", c.Server)
		require.Equal(t, "user-1", c.UserID)
		require.Equal(t, "thread-1", c.ThreadID)
		if c.Tool != demomcp.ToolSubmitJob {
			require.Len(t, c.Args, 1)
			require.Contains(t, c.Args, "task_id")
		}
	}
}

// A submit carries its local task id as idempotency key (_meta
// mcpflow.SubmitKeyMeta): the demo server answers a repeated key with the
// job it already started, which is what lets mcpflow re-send a submit whose
// worker died after sending it (mcp_tasks.idempotent_submit_servers).
func TestOrdinaryDriverSubmitIdempotencyKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	init := 10.0
	sess, err := session.Dial(ctx, &config.Server{Name: "demo", Enabled: true, Type: config.TransportHTTP, URL: drvDemoHTTP(t),
		SessionInitTimeout: &init}, session.DialOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sess.Close() })
	d := &Ordinary{Call: func(ctx context.Context, _, tool, _, _ string, args map[string]any) (*mcp.CallToolResult, error) {
		return sess.CallTool(ctx, tool, args, nil)
	}}
	submit := func(localID string) string {
		t.Helper()
		sub, err := d.Submit(ctx, mcpflow.SubmitRequest{UserID: "u", ThreadID: "th", ServerName: "demo", TaskName: "job",
			LocalTaskID: localID, Arguments: map[string]any{"duration_seconds": 300},
			DriverData: map[string]string{mcpflow.DriverDataSubmitTool: demomcp.ToolSubmitJob}})
		require.NoError(t, err)
		return sub.RemoteTaskID
	}
	a, b := mcpflow.NewTaskID(), mcpflow.NewTaskID()
	first := submit(a)
	require.Equal(t, first, submit(a), "the same key answers the same job")
	require.NotEqual(t, first, submit(b))
}

// drvInputRef is drvRef with an input tool in its driver data.
func drvInputRef() mcpflow.TaskReference {
	ref := drvRef()
	ref.DriverData = map[string]string{
		mcpflow.DriverDataSubmitTool: "start_report",
		mcpflow.DriverDataStatusTool: "status_report",
		mcpflow.DriverDataCancelTool: "cancel_report",
		mcpflow.DriverDataInputTool:  "answer_report",
	}
	return ref
}

func TestOrdinaryDriverStatusInputAnswerable(t *testing.T) {
	t.Parallel()
	const asking = `{"task_id":"remote-1","status":"input_required","input_required":{"q":"?"}}`
	d, _ := drvDriver(drvRaw(t, asking))
	snap, err := d.Status(t.Context(), drvInputRef())
	require.NoError(t, err)
	require.Equal(t, mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"q": "?"}, InputAnswerable: true}, snap)

	// Without an input tool the question cannot be answered through mcpflow.
	d, _ = drvDriver(drvRaw(t, asking))
	snap, err = d.Status(t.Context(), drvRef())
	require.NoError(t, err)
	require.False(t, snap.InputAnswerable)

	// Only a question is answerable.
	d, _ = drvDriver(drvRaw(t, `{"task_id":"remote-1","status":"running"}`))
	snap, err = d.Status(t.Context(), drvInputRef())
	require.NoError(t, err)
	require.Equal(t, mcpflow.Snapshot{Status: mcpflow.StatusWorking}, snap)

	require.False(t, d.HoldsQuestion(drvInputRef()), "the question lives upstream: any worker answers")
}

func TestOrdinaryDriverAnswer(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		answer  mcpflow.InputAnswer
		payload string
		args    map[string]any
	}{
		"accept": {mcpflow.InputAnswer{Action: "accept", Content: map[string]any{"format": "pdf"}},
			`{"task_id":"remote-1","status":"running"}`,
			map[string]any{"task_id": "remote-1", "action": "accept", "content": map[string]any{"format": "pdf"}}},
		"accept without content sends an empty object": {mcpflow.InputAnswer{Action: "accept"},
			`{"task_id":"remote-1"}`,
			map[string]any{"task_id": "remote-1", "action": "accept", "content": map[string]any{}}},
		"decline": {mcpflow.InputAnswer{Action: "decline"},
			`{"task_id":"remote-1","status":"completed","extra":1}`,
			map[string]any{"task_id": "remote-1", "action": "decline"}},
		"cancel": {mcpflow.InputAnswer{Action: "cancel"},
			`{"task_id":"remote-1","status":"cancelled"}`,
			map[string]any{"task_id": "remote-1", "action": "cancel"}},
		"null status": {mcpflow.InputAnswer{Action: "decline"},
			`{"task_id":"remote-1","status":null,"error_code":null}`,
			map[string]any{"task_id": "remote-1", "action": "decline"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, f := drvDriver(drvRaw(t, tc.payload))
			require.NoError(t, d.Answer(t.Context(), drvInputRef(), tc.answer))
			require.Equal(t, []drvCall{{Server: "reports", Tool: "answer_report", UserID: "user-1", ThreadID: "thread-1",
				Args: tc.args}}, f.calls)
		})
	}
}

func TestOrdinaryDriverAnswerGone(t *testing.T) {
	t.Parallel()
	accept := mcpflow.InputAnswer{Action: "accept", Content: map[string]any{"x": 1}}
	for _, payload := range []string{
		`{"task_id":"remote-1","error_code":"input_not_required"}`,
		`{"task_id":"remote-1","status":"completed","error_code":"input_not_required","error":"already answered"}`,
		`{"task_id":"remote-1","status":"failed","error_code":"task_not_found","error":"unknown job"}`,
	} {
		d, _ := drvDriver(drvRaw(t, payload))
		err := d.Answer(t.Context(), drvInputRef(), accept)
		require.ErrorIs(t, err, mcpflow.ErrInputGone, payload)
		require.False(t, mcpflow.IsProtocolError(err))
		require.Contains(t, err.Error(), "MCP task tool 'answer_report' answered error_code")
	}

	// A toolset without an input tool cannot answer: gone, and no call.
	d, f := drvDriver()
	err := d.Answer(t.Context(), drvRef(), accept)
	require.ErrorIs(t, err, mcpflow.ErrInputGone)
	require.Empty(t, f.calls)
	ref := drvInputRef()
	ref.DriverData[mcpflow.DriverDataInputTool] = "  "
	require.ErrorIs(t, d.Answer(t.Context(), ref, accept), mcpflow.ErrInputGone)
	require.Empty(t, f.calls)
}

func TestOrdinaryDriverAnswerErrors(t *testing.T) {
	t.Parallel()
	decline := mcpflow.InputAnswer{Action: "decline"}
	const prefix = "Invalid structuredContent from MCP task tool 'answer_report': "

	t.Run("protocol", func(t *testing.T) {
		t.Parallel()
		cases := map[string]string{
			`{"task_id":"remote-2","status":"running"}`:                "MCP task tool 'answer_report' task_id does not match the persisted remote task: expected 'remote-1', got 'remote-2'",
			`{"task_id":"remote-2","error_code":"input_not_required"}`: "MCP task tool 'answer_report' task_id does not match the persisted remote task: expected 'remote-1', got 'remote-2'",
			`{"status":"running"}`:                                     prefix + "task_id is required",
			`{"task_id":7}`:                                            prefix + "task_id must be a string, got number",
			`{"task_id":"remote-1","status":"answered"}`:               prefix + "status must be one of running, input_required, completed, failed, cancelled, got 'answered'",
			`{"task_id":"remote-1","error_code":5}`:                    prefix + "error_code must be a string, got number",
			`[1]`:                                                      prefix + "structuredContent must be a JSON object",
		}
		for payload, msg := range cases {
			d, _ := drvDriver(drvRaw(t, payload))
			err := d.Answer(t.Context(), drvInputRef(), decline)
			drvRequireProtocol(t, err, msg)
			require.NotErrorIs(t, err, mcpflow.ErrInputGone)
		}
		d, _ := drvDriver(drvRaw(t, "", `{"task_id":"remote-1"}`))
		drvRequireProtocol(t, d.Answer(t.Context(), drvInputRef(), decline),
			"MCP task tool 'answer_report' must return structuredContent; text content is not parsed")
	})
	t.Run("retryable", func(t *testing.T) {
		t.Parallel()
		// isError, even with an error_code in structuredContent.
		d, _ := drvDriver(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent(" busy ")},
			StructuredContent: map[string]any{"task_id": "remote-1", "error_code": "input_not_required"}})
		err := d.Answer(t.Context(), drvInputRef(), decline)
		require.EqualError(t, err, "MCP task tool 'answer_report' returned an error: busy")
		require.False(t, mcpflow.IsProtocolError(err))
		require.NotErrorIs(t, err, mcpflow.ErrInputGone)

		// An error_code the contract does not define.
		d, _ = drvDriver(drvRaw(t, `{"task_id":"remote-1","error_code":"invalid_content","error":"format must be pdf or csv"}`))
		err = d.Answer(t.Context(), drvInputRef(), decline)
		require.EqualError(t, err, "MCP task tool 'answer_report' refused the answer with error_code 'invalid_content': format must be pdf or csv")
		require.False(t, mcpflow.IsProtocolError(err))
		require.NotErrorIs(t, err, mcpflow.ErrInputGone)

		// A failed call.
		down := errors.New("network down")
		d = &Ordinary{Call: (&drvFake{err: down}).call}
		err = d.Answer(t.Context(), drvInputRef(), decline)
		require.ErrorIs(t, err, down)
		require.False(t, mcpflow.IsProtocolError(err))
		require.NotErrorIs(t, err, mcpflow.ErrInputGone)
	})
}

// TestOrdinaryDriverAnswerDemoServer answers a real demo job's question
// through its input tool (answer_job) over streamable HTTP: the question is
// answerable, the accepted answer resumes the job and comes back in its
// result, and a second answer finds the question gone.
func TestOrdinaryDriverAnswerDemoServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	init := 10.0
	sess, err := session.Dial(ctx, &config.Server{Name: "demo", Enabled: true, Type: config.TransportHTTP, URL: drvDemoHTTP(t),
		SessionInitTimeout: &init}, session.DialOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sess.Close() })
	d := &Ordinary{Call: func(ctx context.Context, _, tool, _, _ string, args map[string]any) (*mcp.CallToolResult, error) {
		return sess.CallTool(ctx, tool, args, nil)
	}}
	data := map[string]string{
		mcpflow.DriverDataSubmitTool: demomcp.ToolSubmitJob,
		mcpflow.DriverDataStatusTool: demomcp.ToolGetJobStatus,
		mcpflow.DriverDataCancelTool: demomcp.ToolCancelJob,
		mcpflow.DriverDataInputTool:  demomcp.ToolAnswerJob,
	}
	sub, err := d.Submit(ctx, mcpflow.SubmitRequest{UserID: "u", ThreadID: "t", ServerName: "demo", TaskName: "job",
		Arguments: map[string]any{"duration_seconds": 0, "outcome": "ask"}, DriverData: data})
	require.NoError(t, err)
	ref := mcpflow.TaskReference{LocalTaskID: mcpflow.NewTaskID(), UserID: "u", ThreadID: "t", ServerName: "demo",
		RemoteTaskID: sub.RemoteTaskID, DriverData: sub.DriverData}

	snap, err := d.Status(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusInputRequired, snap.Status)
	require.True(t, snap.InputAnswerable)
	answer := mcpflow.InputAnswer{Action: mcpflow.InputAccept, Content: map[string]any{"format": "csv"}}
	require.NoError(t, answer.Validate(snap.InputRequired))
	require.NoError(t, d.Answer(ctx, ref, answer))

	snap, err = d.Status(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, snap.Status)
	require.Equal(t, map[string]any{"action": "accept", "answer": map[string]any{"format": "csv"}}, snap.Result)

	err = d.Answer(ctx, ref, mcpflow.InputAnswer{Action: mcpflow.InputDecline})
	require.ErrorIs(t, err, mcpflow.ErrInputGone)
	require.EqualError(t, err, "MCP task tool 'answer_job' answered error_code 'input_not_required': job is completed, not waiting for input: "+mcpflow.ErrInputGone.Error())

	gone := ref
	gone.RemoteTaskID = "job-unknown"
	require.ErrorIs(t, d.Answer(ctx, gone, answer), mcpflow.ErrInputGone)
}
