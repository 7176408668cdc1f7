package taskdriver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/mcpclient/credential"
	"github.com/mcpflow/mcpflow/mcpclient/route"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// Ordinary implements mcpflow.Driver over a server's submit, status
// and cancel tools (spec §2.3), whose raw names come from the task's driver
// data. It reads only structuredContent; text content is never parsed as
// protocol. When the driver data also names an input tool (the toolset's
// input_tool), it implements mcpflow.InputDriver too: an input_required
// status is answerable and Answer delivers the user's answer to that tool.
//
// When Call goes through Runtime.Call to a stdio server, the pooled session
// of the task's thread is pinned while the remote task runs: from a
// successful submit (and every status that is not terminal) until a
// terminal status, a terminal cancel or a protocol error; see Pool.Pin.
//
// Errors: a contract violation (missing driver data, absent or invalid
// structuredContent, a mismatched task id) is a *mcpflow.ProtocolError; an
// isError result is a plain, retryable error
// "MCP task tool '<tool>' returned an error[: <detail>]"; an error of Call is
// returned wrapped (transient) unless it is a protocol error already.
type Ordinary struct {
	// Call calls a raw MCP tool on a server for a user's thread
	// (Runtime.Call with the task's server configuration); required.
	Call func(ctx context.Context, server, tool, userID, threadID string, args map[string]any) (*mcp.CallToolResult, error)
}

const (
	drvErrorDetailChars          = 500                             // bounds the isError text appended to an error message
	drvErrorCodeTaskNotFound     = "task_not_found"                // a status's error_code of an unknown remote task
	drvErrorCodeInputNotRequired = "input_not_required"            // the input tool's error_code of a task that waits for no answer
	drvTaskNotFound              = "Remote MCP task was not found" // the error of a task_not_found status without its own
)

// drvStatusMap maps a remote status of the status tool to the normalized one.
var drvStatusMap = map[string]mcpflow.Status{
	"running":        mcpflow.StatusWorking,
	"input_required": mcpflow.StatusInputRequired,
	"completed":      mcpflow.StatusCompleted,
	"failed":         mcpflow.StatusFailed,
	"cancelled":      mcpflow.StatusCancelled,
}

// drvCancelStatusMap maps a remote status of the cancel tool: terminal only.
var drvCancelStatusMap = map[string]mcpflow.Status{
	"cancelled": mcpflow.StatusCancelled,
	"completed": mcpflow.StatusCompleted,
	"failed":    mcpflow.StatusFailed,
}

// Submit calls the submit tool with the request's arguments verbatim and
// returns the remote task id with a submitted snapshot and a copy of the
// request's driver data. When the request has a local task id, the call's
// _meta carries it under mcpflow.SubmitKeyMeta (the idempotency key). The payload must be {"task_id": non-empty string,
// "status": "running"}; other fields are ignored.
func (d *Ordinary) Submit(ctx context.Context, req mcpflow.SubmitRequest) (mcpflow.Submission, error) {
	tool, err := drvTool(req.DriverData, mcpflow.DriverDataSubmitTool)
	if err != nil {
		return mcpflow.Submission{}, err
	}
	args := maps.Clone(req.Arguments)
	if args == nil {
		args = map[string]any{}
	}
	// The submit is request-scoped: it carries the request's secrets for
	// headers_from_context. Status and cancel polls are not. Its _meta
	// carries the local task id as idempotency key.
	if req.LocalTaskID != "" {
		ctx = session.WithCallMeta(ctx, map[string]any{mcpflow.SubmitKeyMeta: req.LocalTaskID})
	}
	ctx, pin := route.WithSubmitPin(ctx)
	defer pin.Release()
	p, err := d.call(credential.WithSecrets(ctx, req.Secrets), req.ServerName, tool, req.UserID, req.ThreadID, args)
	if err != nil {
		return mcpflow.Submission{}, err
	}
	taskID, err := p.taskID(false)
	if err != nil {
		return mcpflow.Submission{}, err
	}
	status, err := p.status(map[string]mcpflow.Status{"running": mcpflow.StatusSubmitted}, "'running'")
	if err != nil {
		return mcpflow.Submission{}, err
	}
	snap, err := p.snapshot(mcpflow.Snapshot{Status: status})
	if err != nil {
		return mcpflow.Submission{}, err
	}
	data := maps.Clone(req.DriverData)
	if data == nil {
		data = map[string]string{}
	}
	pin.Task(taskID, true)
	return mcpflow.Submission{RemoteTaskID: taskID, Snapshot: snap, DriverData: data}, nil
}

// Status calls the status tool with exactly {"task_id": <remote id>} and
// maps its payload: running becomes working, the other statuses stay; an
// error_code "task_not_found" makes the task failed whatever its status.
// An input_required status is answerable (Snapshot.InputAnswerable) when
// the driver data names an input tool. A string "message" is the task's
// progress message (Snapshot.Message).
func (d *Ordinary) Status(ctx context.Context, ref mcpflow.TaskReference) (snap mcpflow.Snapshot, err error) {
	ctx, pin := route.WithTaskPin(ctx)
	defer pin.Release()
	defer func() { pinOutcome(pin, ref.RemoteTaskID, snap, err) }()
	p, c, err := d.callRef(ctx, ref, mcpflow.DriverDataStatusTool, drvStatusMap, "running, input_required, completed, failed, cancelled")
	if err != nil {
		return mcpflow.Snapshot{}, err
	}
	errCode, err := p.optString("error_code")
	if err != nil {
		return mcpflow.Snapshot{}, err
	}
	input, err := p.optObject("input_required")
	if err != nil {
		return mcpflow.Snapshot{}, err
	}
	// A progress message is optional and not part of the status contract
	// (spec §2.2): any other type than a string is ignored, never an error.
	var message *string
	if m, ok := p.fields["message"].(string); ok && m != "" {
		message = &m
	}
	hint, err := p.pollAfter()
	if err != nil {
		return mcpflow.Snapshot{}, err
	}
	if err := p.matches(c.taskID, ref.RemoteTaskID); err != nil {
		return mcpflow.Snapshot{}, err
	}
	if errCode != nil && *errCode == drvErrorCodeTaskNotFound {
		msg := drvTaskNotFound
		if c.errText != nil && *c.errText != "" {
			msg = *c.errText
		}
		return p.snapshot(mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: &msg})
	}
	if c.status == mcpflow.StatusInputRequired && input == nil {
		return mcpflow.Snapshot{}, p.invalid("input_required is required when status is 'input_required'")
	}
	return p.snapshot(mcpflow.Snapshot{
		Status:           c.status,
		Result:           c.result,
		ResultArtifact:   c.artifact,
		Error:            c.errText,
		InputRequired:    input,
		InputAnswerable:  c.status == mcpflow.StatusInputRequired && hasInputTool(ref.DriverData),
		PollAfterSeconds: hint,
		Message:          message,
	})
}

// hasInputTool reports whether driver data names an input tool.
func hasInputTool(data map[string]string) bool {
	return strings.TrimSpace(data[mcpflow.DriverDataInputTool]) != ""
}

// Answer implements mcpflow.InputDriver: it calls the input tool with
// exactly {"task_id": <remote id>, "action": <action>} plus "content" (an
// object, {} when none) for "accept". The payload must carry the same
// task_id; an optional status must be one the status tool may report and
// is otherwise ignored (the next poll reads the task's state). An
// error_code "input_not_required" or "task_not_found" is
// mcpflow.ErrInputGone, as is driver data without an input tool; any other
// error_code is a plain (retryable) error. isError results and call
// failures are retryable errors as for the other tools; a contract
// violation is a *mcpflow.ProtocolError.
func (d *Ordinary) Answer(ctx context.Context, ref mcpflow.TaskReference, answer mcpflow.InputAnswer) error {
	if !hasInputTool(ref.DriverData) {
		return fmt.Errorf("the task's toolset has no input_tool: %w", mcpflow.ErrInputGone)
	}
	tool := ref.DriverData[mcpflow.DriverDataInputTool]
	args := map[string]any{"task_id": ref.RemoteTaskID, "action": answer.Action}
	if answer.Action == mcpflow.InputAccept {
		content := answer.Content
		if content == nil {
			content = map[string]any{}
		}
		args["content"] = content
	}
	ctx, pin := route.WithTaskPin(ctx)
	defer pin.Release()
	p, err := d.call(ctx, ref.ServerName, tool, ref.UserID, ref.ThreadID, args)
	if err != nil {
		return err
	}
	taskID, err := p.taskID(true)
	if err != nil {
		return err
	}
	if err := p.matches(taskID, ref.RemoteTaskID); err != nil {
		return err
	}
	errCode, err := p.optString("error_code")
	if err != nil {
		return err
	}
	errText, err := p.optString("error")
	if err != nil {
		return err
	}
	if _, ok := p.fields["status"]; ok && p.fields["status"] != nil {
		if _, err := p.status(drvStatusMap, "running, input_required, completed, failed, cancelled"); err != nil {
			return err
		}
	}
	if errCode != nil {
		detail := ""
		if errText != nil && strings.TrimSpace(*errText) != "" {
			detail = ": " + mcpflow.TruncateChars(strings.TrimSpace(*errText), drvErrorDetailChars)
		}
		switch *errCode {
		case drvErrorCodeInputNotRequired, drvErrorCodeTaskNotFound:
			return fmt.Errorf("MCP task tool '%s' answered error_code '%s'%s: %w", tool, *errCode, detail, mcpflow.ErrInputGone)
		}
		return fmt.Errorf("MCP task tool '%s' refused the answer with error_code '%s'%s", tool, mcpflow.TruncateChars(*errCode, 100), detail)
	}
	// The answer was taken: the remote task runs on.
	pin.Task(ref.RemoteTaskID, true)
	return nil
}

// HoldsQuestion implements mcpflow.InputDriver: the question lives on the
// MCP server, so any worker can deliver the answer.
func (d *Ordinary) HoldsQuestion(mcpflow.TaskReference) bool { return false }

// Cancel calls the cancel tool with {"task_id": <remote id>} and returns the
// actual terminal status it reports (cancelled, completed or failed) with its
// result, result_artifact and error. A non-terminal status is a protocol
// error; error_code, input_required and poll hints are ignored.
func (d *Ordinary) Cancel(ctx context.Context, ref mcpflow.TaskReference) (snap mcpflow.Snapshot, err error) {
	ctx, pin := route.WithTaskPin(ctx)
	defer pin.Release()
	defer func() { pinOutcome(pin, ref.RemoteTaskID, snap, err) }()
	p, c, err := d.callRef(ctx, ref, mcpflow.DriverDataCancelTool, drvCancelStatusMap, "cancelled, completed, failed")
	if err != nil {
		return mcpflow.Snapshot{}, err
	}
	if err := p.matches(c.taskID, ref.RemoteTaskID); err != nil {
		return mcpflow.Snapshot{}, err
	}
	return p.snapshot(mcpflow.Snapshot{Status: c.status, Result: c.result, ResultArtifact: c.artifact, Error: c.errText})
}

// pinOutcome keeps the task's session pinned while the remote task runs:
// a snapshot that is not terminal renews the pin, a terminal one or a
// protocol error (the task fails) ends it; other errors change nothing.
func pinOutcome(pin *route.TaskPin, remoteID string, snap mcpflow.Snapshot, err error) {
	switch {
	case err == nil:
		pin.Task(remoteID, !snap.Status.IsTerminal())
	case mcpflow.IsProtocolError(err):
		pin.Task(remoteID, false)
	}
}

// drvCommon holds the fields the status and cancel payloads share.
type drvCommon struct {
	taskID   string
	status   mcpflow.Status
	result   any
	artifact map[string]string
	errText  *string
}

// callRef calls the role's tool with {"task_id": <remote id>} and reads
// the fields the status and cancel payloads share, in the order the
// schema checks them.
func (d *Ordinary) callRef(ctx context.Context, ref mcpflow.TaskReference, role string, statuses map[string]mcpflow.Status, allowed string) (*drvPayload, drvCommon, error) {
	var c drvCommon
	tool, err := drvTool(ref.DriverData, role)
	if err != nil {
		return nil, c, err
	}
	p, err := d.call(ctx, ref.ServerName, tool, ref.UserID, ref.ThreadID, map[string]any{"task_id": ref.RemoteTaskID})
	if err != nil {
		return nil, c, err
	}
	if c.taskID, err = p.taskID(true); err != nil {
		return nil, c, err
	}
	if c.status, err = p.status(statuses, allowed); err != nil {
		return nil, c, err
	}
	c.result = p.fields["result"] // optional, any JSON; null is absent
	if c.artifact, err = p.artifact(); err != nil {
		return nil, c, err
	}
	if c.errText, err = p.optString("error"); err != nil {
		return nil, c, err
	}
	return p, c, nil
}

// drvTool returns the raw tool name of role from driver data.
func drvTool(data map[string]string, role string) (string, error) {
	name := data[role]
	if strings.TrimSpace(name) == "" {
		return "", mcpflow.NewProtocolError("Task driver_data is missing required '%s'", role)
	}
	return name, nil
}

// call calls tool and returns its structuredContent as a payload.
func (d *Ordinary) call(ctx context.Context, server, tool, userID, threadID string, args map[string]any) (*drvPayload, error) {
	if d == nil || d.Call == nil {
		return nil, errors.New("ordinary MCP task driver has no tool caller")
	}
	res, err := d.Call(ctx, server, tool, userID, threadID, args)
	if err != nil {
		if mcpflow.IsProtocolError(err) {
			return nil, err
		}
		return nil, fmt.Errorf("call MCP task tool '%s' on server '%s': %w", tool, server, err)
	}
	if res != nil && res.IsError {
		return nil, drvToolError(tool, res.Content)
	}
	fields, err := drvStructured(tool, res)
	if err != nil {
		return nil, err
	}
	return &drvPayload{tool: tool, fields: fields}, nil
}

// drvToolError is the retryable error of an isError result: only the first
// text block is considered, stripped and cut to 500 characters.
func drvToolError(tool string, content []mcp.Content) error {
	msg := fmt.Sprintf("MCP task tool '%s' returned an error", tool)
	if texts := textsOf(content); len(texts) > 0 {
		if detail := strings.TrimSpace(texts[0]); detail != "" {
			msg += ": " + mcpflow.TruncateChars(detail, drvErrorDetailChars)
		}
	}
	return errors.New(msg)
}

// drvStructured decodes the result's structuredContent into an object whose
// numbers are json.Number. The wire bytes are preferred (mcp-go keeps them
// in RawStructuredContent on the client side); a value set in process is
// re-encoded.
func drvStructured(tool string, res *mcp.CallToolResult) (map[string]any, error) {
	var raw []byte
	switch {
	case res == nil:
	case len(bytes.TrimSpace(res.RawStructuredContent)) > 0:
		raw = res.RawStructuredContent
	case res.StructuredContent != nil:
		enc, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, drvInvalid(tool, "structuredContent is not valid JSON: "+err.Error())
		}
		raw = enc
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, mcpflow.NewProtocolError("MCP task tool '%s' must return structuredContent; text content is not parsed", tool)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, drvInvalid(tool, "structuredContent is not valid JSON: "+err.Error())
	}
	if dec.More() {
		return nil, drvInvalid(tool, "structuredContent is not valid JSON: trailing data")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, drvInvalid(tool, "structuredContent must be a JSON object")
	}
	return obj, nil
}

func drvInvalid(tool, detail string) *mcpflow.ProtocolError {
	return mcpflow.NewProtocolError("Invalid structuredContent from MCP task tool '%s': %s", tool, detail)
}

// drvPayload is the decoded structuredContent of one task tool call.
type drvPayload struct {
	tool   string
	fields map[string]any
}

func (p *drvPayload) invalid(format string, args ...any) *mcpflow.ProtocolError {
	return drvInvalid(p.tool, fmt.Sprintf(format, args...))
}

// taskID reads the required task_id: a non-empty string, and at most 255
// characters when bounded (status and cancel; the submit handle is bounded
// by the service, which must still be able to cancel it).
func (p *drvPayload) taskID(bounded bool) (string, error) {
	v, ok := p.fields["task_id"]
	if !ok || v == nil {
		return "", p.invalid("task_id is required")
	}
	s, ok := v.(string)
	if !ok {
		return "", p.invalid("task_id must be a string, got %s", drvKind(v))
	}
	if s == "" {
		return "", p.invalid("task_id must not be empty")
	}
	if bounded && utf8.RuneCountInString(s) > mcpflow.MaxRemoteTaskIDChars {
		return "", p.invalid("task_id must not exceed %d characters", mcpflow.MaxRemoteTaskIDChars)
	}
	return s, nil
}

// status reads the required status and maps it with allowed.
func (p *drvPayload) status(allowed map[string]mcpflow.Status, expected string) (mcpflow.Status, error) {
	v, ok := p.fields["status"]
	if !ok || v == nil {
		return "", p.invalid("status is required")
	}
	s, ok := v.(string)
	if !ok {
		return "", p.invalid("status must be a string, got %s", drvKind(v))
	}
	st, ok := allowed[s]
	if !ok {
		if len(allowed) == 1 {
			return "", p.invalid("status must be %s, got '%s'", expected, s)
		}
		return "", p.invalid("status must be one of %s, got '%s'", expected, s)
	}
	return st, nil
}

// artifact reads the optional result_artifact {uri, mime_type}; extra keys
// are ignored.
func (p *drvPayload) artifact() (map[string]string, error) {
	v, ok := p.fields["result_artifact"]
	if !ok || v == nil {
		return nil, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, p.invalid("result_artifact must be an object, got %s", drvKind(v))
	}
	out := make(map[string]string, 2)
	for _, key := range []string{"uri", "mime_type"} {
		s, ok := obj[key].(string)
		if !ok || s == "" {
			return nil, p.invalid("result_artifact.%s must be a non-empty string", key)
		}
		out[key] = s
	}
	return out, nil
}

// optString reads an optional string field; null is absent.
func (p *drvPayload) optString(field string) (*string, error) {
	v, ok := p.fields[field]
	if !ok || v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, p.invalid("%s must be a string, got %s", field, drvKind(v))
	}
	return &s, nil
}

// optObject reads an optional object field; null is absent.
func (p *drvPayload) optObject(field string) (map[string]any, error) {
	v, ok := p.fields[field]
	if !ok || v == nil {
		return nil, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, p.invalid("%s must be an object, got %s", field, drvKind(v))
	}
	return obj, nil
}

// pollAfter reads the optional poll_after_seconds: a finite number > 0. A
// number beyond float64 (1e400) is not finite.
func (p *drvPayload) pollAfter() (*float64, error) {
	v, ok := p.fields["poll_after_seconds"]
	if !ok || v == nil {
		return nil, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return nil, p.invalid("poll_after_seconds must be a number, got %s", drvKind(v))
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err == nil {
		err = mcpflow.ValidatePollAfter(f)
	}
	if err != nil {
		return nil, p.invalid("poll_after_seconds must be a finite positive number")
	}
	return &f, nil
}

// matches checks the reported task id against the persisted one.
func (p *drvPayload) matches(got, want string) error {
	if got != want {
		return mcpflow.NewProtocolError("MCP task tool '%s' task_id does not match the persisted remote task: expected '%s', got '%s'", p.tool, want, got)
	}
	return nil
}

// snapshot builds s with mcpflow.NewSnapshot; a violated invariant is a
// protocol error.
func (p *drvPayload) snapshot(s mcpflow.Snapshot) (mcpflow.Snapshot, error) {
	out, err := mcpflow.NewSnapshot(s)
	if err != nil {
		return mcpflow.Snapshot{}, p.invalid("%v", err)
	}
	return out, nil
}

// drvKind names the JSON type of a decoded value.
func drvKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
