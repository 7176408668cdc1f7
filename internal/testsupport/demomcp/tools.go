package demomcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// Tool names served by the demo server.
const (
	ToolEcho         = "echo"
	ToolAdd          = "add"
	ToolSlow         = "slow"
	ToolWriteFile    = "write_file"
	ToolEnv          = "env"
	ToolHeaders      = "headers"
	ToolFail         = "fail"
	ToolSubmitJob    = "submit_job"
	ToolGetJobStatus = "get_job_status"
	ToolCancelJob    = "cancel_job"
	ToolAnswerJob    = "answer_job"
	ToolJobStats     = "job_stats"
	ToolRelease      = "release_answers"
)

// ToolNames lists every tool the demo server serves, in registration order.
var ToolNames = []string{
	ToolEcho, ToolAdd, ToolSlow, ToolWriteFile, ToolEnv, ToolHeaders, ToolFail,
	ToolSubmitJob, ToolGetJobStatus, ToolCancelJob, ToolAnswerJob, ToolJobStats, ToolRelease,
}

const (
	maxSlowSeconds         = 600
	defaultDurationSeconds = 2
	maxDurationSeconds     = 7 * 24 * 3600
)

var defaultJobResult = json.RawMessage(`{"answer":42}`)

func (s *Server) registerTools() {
	s.mcp.AddTool(mcp.NewTool(ToolEcho,
		mcp.WithDescription("Echo a message back as text."),
		mcp.WithString("message", mcp.Required(), mcp.Description("Text to echo.")),
	), s.echo)
	s.mcp.AddTool(mcp.NewTool(ToolAdd,
		mcp.WithDescription("Add two numbers; answers text and structuredContent {\"sum\": a+b}."),
		mcp.WithNumber("a", mcp.Required()),
		mcp.WithNumber("b", mcp.Required()),
	), s.add)
	s.mcp.AddTool(mcp.NewTool(ToolSlow,
		mcp.WithDescription("Sleep for a number of seconds (at most 600), then answer text."),
		mcp.WithNumber("seconds", mcp.Required(), mcp.Description("Seconds to sleep; capped at 600.")),
		mcp.WithString("message", mcp.Description("Text to answer with after sleeping.")),
	), s.slow)
	s.mcp.AddTool(mcp.NewTool(ToolWriteFile,
		mcp.WithDescription("Write a file inside the server's working directory; answers a resource_link to it."),
		mcp.WithString("name", mcp.Required(), mcp.Description("Relative path inside the working directory.")),
		mcp.WithString("content", mcp.Required()),
	), s.writeFile)
	s.mcp.AddTool(mcp.NewTool(ToolEnv,
		mcp.WithDescription("Return the process environment as structuredContent {\"env\": {...}}."),
		mcp.WithString("name", mcp.Description("Only this variable.")),
		mcp.WithReadOnlyHintAnnotation(true),
	), s.env)
	s.mcp.AddTool(mcp.NewTool(ToolHeaders,
		mcp.WithDescription("Report the credentials this call arrived with, as structuredContent: the HTTP request headers "+
			"{\"headers\": {name: [values]}} over sse/http, and {\"meta_headers\": {...}} from the call's _meta over any transport; "+
			"with history=true also every earlier recorded call with its arguments as sent (servers started with --record-calls)."),
		mcp.WithBoolean("history"),
		mcp.WithReadOnlyHintAnnotation(true),
	), s.headers)
	s.mcp.AddTool(mcp.NewTool(ToolFail,
		mcp.WithDescription("Always answer an isError result with the given message."),
		mcp.WithString("message", mcp.Required()),
	), s.fail)

	s.mcp.AddTool(mcp.NewTool(ToolSubmitJob,
		mcp.WithDescription("Start a simulated long-running job; answers structuredContent {\"task_id\", \"status\": \"running\"}."),
		mcp.WithNumber("duration_seconds", mcp.Min(0), mcp.DefaultNumber(defaultDurationSeconds),
			mcp.Description("How long the job runs before reaching its outcome.")),
		mcp.WithString("outcome", mcp.Enum(outcomeCompleted, outcomeFailed, outcomeInputRequired, outcomeAsk, outcomeNotFound),
			mcp.DefaultString(outcomeCompleted),
			mcp.Description(`What the job reaches after duration_seconds. "input_required" asks a free-form question; `+
				`"ask" asks an MCP elicitation ({"message", "requested_schema"}: a format, pdf or csv). `+
				`Either waits until answer_job or cancel_job.`)),
		mcp.WithNumber("answer_duration_seconds", mcp.Min(0), mcp.DefaultNumber(0),
			mcp.Description("How long the job runs on after answer_job took an answer, before it completes.")),
		mcp.WithNumber("poll_after_seconds", mcp.Description("Poll hint reported while running; > 0.")),
		mcp.WithBoolean("progress", mcp.Description(`Report a progress message while running ("25% done", in quarters of duration_seconds).`)),
		mcp.WithAny("result", mcp.Description(`Result of a completed job. Default {"answer": 42}.`)),
		mcp.WithString("error", mcp.Description(`Error of a failed job. Default "job failed".`)),
		mcp.WithInteger("status_errors", mcp.Min(0),
			mcp.Description("The next N status calls for this job answer isError.")),
		mcp.WithString("label"),
		mcp.WithNumber("submit_delay_seconds", mcp.Min(0),
			mcp.Description("Wait this long (at most 30 s) before answering the submit: a slow remote submit.")),
		mcp.WithInteger("finish_at_status_call", mcp.Min(1),
			mcp.Description("End the job at its N-th get_job_status call (injected errors included; earlier calls answer running) "+
				"instead of after duration_seconds: a fixed number of polls whatever their timing.")),
		mcp.WithNumber("status_delay_seconds", mcp.Min(0),
			mcp.Description("Each get_job_status call of the job waits this long (at most 30 s) after it is counted and before it answers: a slow remote status call.")),
		mcp.WithInteger("answer_errors", mcp.Min(0),
			mcp.Description("The next N answer_job calls that would take an answer for this job refuse it instead (isError, the answer not taken).")),
		mcp.WithInteger("cancel_errors", mcp.Min(0),
			mcp.Description("The next N cancel_job calls for this job answer isError instead of cancelling it.")),
		mcp.WithBoolean("hold_answers",
			mcp.Description("answer_job calls for this job wait (up to a minute) until release_answers is called for it, then go on as usual.")),
	), s.submitJob)
	s.mcp.AddTool(mcp.NewTool(ToolGetJobStatus,
		mcp.WithDescription("Report a job's status as structuredContent."),
		mcp.WithString("task_id", mcp.Required()),
	), s.getJobStatus)
	s.mcp.AddTool(mcp.NewTool(ToolCancelJob,
		mcp.WithDescription("Cancel a job; idempotent, reports the actual terminal status."),
		mcp.WithString("task_id", mcp.Required()),
	), s.cancelJob)
	s.mcp.AddTool(mcp.NewTool(ToolAnswerJob,
		mcp.WithDescription("Answer the question of a job in input_required (an input_tool). "+
			"accept (with content) and decline resume the job: it completes after answer_duration_seconds with result "+
			"{\"action\", \"answer\": content} (answer only for accept); cancel cancels it. Answers structuredContent "+
			"{\"task_id\", \"status\"}. A job that does not wait for input answers {\"task_id\", \"status\", "+
			"\"error_code\": \"input_not_required\", \"error\"} and an unknown job error_code \"task_not_found\", "+
			"both without isError and without taking the answer."),
		mcp.WithString("task_id", mcp.Required()),
		mcp.WithString("action", mcp.Required(), mcp.Enum(actionAccept, actionDecline, actionCancel)),
		mcp.WithObject("content", mcp.Description("The answer, with action accept only.")),
	), s.answerJob)
	s.mcp.AddTool(mcp.NewTool(ToolJobStats,
		mcp.WithDescription("Report call counters and jobs as structuredContent (a job's answers_held: answer_job calls waiting for release_answers)."),
		mcp.WithReadOnlyHintAnnotation(true),
	), s.jobStats)
	s.mcp.AddTool(mcp.NewTool(ToolRelease,
		mcp.WithDescription("Let the answer_job calls of a job submitted with hold_answers go on, and later ones through. "+
			"Answers structuredContent {\"task_id\", \"released\": <calls that were waiting>}."),
		mcp.WithString("task_id", mcp.Required()),
	), s.releaseAnswers)
}

// bindArgs decodes a call's arguments into target. Arguments it cannot take
// are a tool error (isError), as MCP 2025-11-25 asks of input validation
// errors so that a model can correct its call, saying which argument and
// what it must be, in words rather than Go's decoder's.
func bindArgs(req mcp.CallToolRequest, target any) *mcp.CallToolResult {
	err := req.BindArguments(target)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return mcp.NewToolResultErrorf("invalid arguments for %s: '%s' must be %s, not a JSON %s", req.Params.Name, te.Field, jsonKind(te.Type), te.Value)
	}
	return mcp.NewToolResultErrorf("invalid arguments for %s: they must be a JSON object of the tool's input schema", req.Params.Name)
}

// jsonKind names the JSON value a Go type takes.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

func (s *Server) echo(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Message *string `json:"message"`
	}
	if res := bindArgs(req, &args); res != nil {
		return res, nil
	}
	if args.Message == nil {
		return mcp.NewToolResultError("message is required"), nil
	}
	return mcp.NewToolResultText(*args.Message), nil
}

func (s *Server) add(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		A *float64 `json:"a"`
		B *float64 `json:"b"`
	}
	if res := bindArgs(req, &args); res != nil {
		return res, nil
	}
	if args.A == nil || args.B == nil {
		return mcp.NewToolResultError("a and b are required numbers"), nil
	}
	sum := *args.A + *args.B
	return mcp.NewToolResultStructured(map[string]any{"sum": sum}, strconv.FormatFloat(sum, 'f', -1, 64)), nil
}

func (s *Server) slow(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Seconds *float64 `json:"seconds"`
		Message string   `json:"message"`
	}
	if res := bindArgs(req, &args); res != nil {
		return res, nil
	}
	if args.Seconds == nil {
		return mcp.NewToolResultError("seconds is required"), nil
	}
	secs := min(max(*args.Seconds, 0), maxSlowSeconds)
	timer := time.NewTimer(time.Duration(secs * float64(time.Second)))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return mcp.NewToolResultErrorf("slow: cancelled after less than %gs: %v", secs, ctx.Err()), nil
	case <-timer.C:
	}
	text := args.Message
	if text == "" {
		text = fmt.Sprintf("slept %gs", secs)
	}
	return mcp.NewToolResultText(text), nil
}

func (s *Server) writeFile(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Name    *string `json:"name"`
		Content *string `json:"content"`
	}
	if res := bindArgs(req, &args); res != nil {
		return res, nil
	}
	if args.Name == nil || args.Content == nil {
		return mcp.NewToolResultError("name and content are required"), nil
	}
	name := filepath.FromSlash(*args.Name)
	if !filepath.IsLocal(name) {
		return mcp.NewToolResultErrorf("name %q must be a relative path inside the working directory", *args.Name), nil
	}
	dir := s.cfg.Workdir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return mcp.NewToolResultErrorf("write_file: working directory: %v", err), nil
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return mcp.NewToolResultErrorf("write_file: working directory: %v", err), nil
	}
	// os.Root also refuses to follow symlinks out of the directory.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return mcp.NewToolResultErrorf("write_file: open working directory: %v", err), nil
	}
	defer root.Close()
	if sub := filepath.Dir(name); sub != "." {
		if err := root.MkdirAll(sub, 0o755); err != nil {
			return mcp.NewToolResultErrorf("write_file: create %s: %v", sub, err), nil
		}
	}
	if err := root.WriteFile(name, []byte(*args.Content), 0o644); err != nil {
		return mcp.NewToolResultErrorf("write_file: write %s: %v", *args.Name, err), nil
	}
	abs := filepath.Join(dir, name)
	s.log.Info("wrote file", "path", abs, "bytes", len(*args.Content))
	link := mcp.NewResourceLink("file://"+filepath.ToSlash(abs), filepath.Base(abs), "", mimeTypeFor(abs))
	return &mcp.CallToolResult{Content: []mcp.Content{
		mcp.NewTextContent("Wrote " + abs),
		link,
	}}, nil
}

// mimeTypeFor guesses a MIME type (without parameters) from the extension.
func mimeTypeFor(path string) string {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".txt", ".log":
		return "text/plain"
	case ".md":
		return "text/markdown"
	case ".csv":
		return "text/csv"
	case ".json":
		return "application/json"
	case ".yaml", ".yml":
		return "application/yaml"
	}
	if t := mime.TypeByExtension(ext); t != "" {
		if mt, _, err := mime.ParseMediaType(t); err == nil {
			return mt
		}
	}
	return "application/octet-stream"
}

func (s *Server) env(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Name string `json:"name"`
	}
	if res := bindArgs(req, &args); res != nil {
		return res, nil
	}
	env := map[string]string{}
	if args.Name != "" {
		if v, ok := os.LookupEnv(args.Name); ok {
			env[args.Name] = v
		}
	} else {
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				env[k] = v
			}
		}
	}
	return mcp.NewToolResultStructured(map[string]any{"env": env}, fmt.Sprintf("%d environment variable(s)", len(env))), nil
}

// requestHeadersKey carries the HTTP headers of the request a tool call
// arrived in (HTTPHandler installs them).
type requestHeadersKey struct{}

func withRequestHeaders(ctx context.Context, r *http.Request) context.Context {
	return context.WithValue(ctx, requestHeadersKey{}, r.Header.Clone())
}

func (s *Server) headers(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	out := map[string]any{}
	if h, ok := ctx.Value(requestHeadersKey{}).(http.Header); ok {
		out["headers"] = h
	}
	if req.Params.Meta != nil {
		if mh, ok := req.Params.Meta.AdditionalFields["headers"]; ok {
			out["meta_headers"] = mh
		}
	}
	if req.GetBool("history", false) {
		out["history"] = s.RecordedCalls()
	}
	return mcp.NewToolResultStructured(out, fmt.Sprintf("%d field(s)", len(out))), nil
}

func (s *Server) fail(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Message string `json:"message"`
	}
	if res := bindArgs(req, &args); res != nil {
		return res, nil
	}
	if args.Message == "" {
		args.Message = "failed"
	}
	return mcp.NewToolResultError(args.Message), nil
}

func (s *Server) submitJob(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		DurationSeconds  *float64        `json:"duration_seconds"`
		Outcome          string          `json:"outcome"`
		PollAfterSeconds *float64        `json:"poll_after_seconds"`
		Result           json.RawMessage `json:"result"`
		Error            string          `json:"error"`
		StatusErrors     *int            `json:"status_errors"`
		Label            string          `json:"label"`
		SubmitDelay      float64         `json:"submit_delay_seconds"`
		AnswerDuration   float64         `json:"answer_duration_seconds"`
		FinishAt         *int            `json:"finish_at_status_call"`
		StatusDelay      float64         `json:"status_delay_seconds"`
		Progress         bool            `json:"progress"`
		AnswerErrors     *int            `json:"answer_errors"`
		CancelErrors     *int            `json:"cancel_errors"`
		HoldAnswers      bool            `json:"hold_answers"`
	}
	if res := bindArgs(req, &args); res != nil {
		return res, nil
	}
	if args.SubmitDelay < 0 || args.SubmitDelay > 30 {
		return mcp.NewToolResultError("submit_delay_seconds must be between 0 and 30"), nil
	}
	if args.StatusDelay < 0 || args.StatusDelay > 30 {
		return mcp.NewToolResultError("status_delay_seconds must be between 0 and 30"), nil
	}
	// Sleeps without the request context (mcp-go cancels it early for some
	// transports); the job is created after the delay, as a slow server would.
	time.Sleep(time.Duration(args.SubmitDelay * float64(time.Second)))
	spec := jobSpec{
		Label:            args.Label,
		DurationSeconds:  defaultDurationSeconds,
		Outcome:          args.Outcome,
		PollAfterSeconds: args.PollAfterSeconds,
		Result:           args.Result,
		Error:            args.Error,
		Progress:         args.Progress,
	}
	if args.DurationSeconds != nil {
		if d := *args.DurationSeconds; d < 0 || d > maxDurationSeconds {
			return mcp.NewToolResultErrorf("duration_seconds must be between 0 and %d", maxDurationSeconds), nil
		}
		spec.DurationSeconds = *args.DurationSeconds
	}
	if spec.Outcome == "" {
		spec.Outcome = outcomeCompleted
	}
	if d := args.AnswerDuration; d < 0 || d > maxDurationSeconds {
		return mcp.NewToolResultErrorf("answer_duration_seconds must be between 0 and %d", maxDurationSeconds), nil
	}
	spec.AnswerDurationSeconds = args.AnswerDuration
	outcomes := []string{outcomeCompleted, outcomeFailed, outcomeInputRequired, outcomeAsk, outcomeNotFound}
	if !slices.Contains(outcomes, spec.Outcome) {
		return mcp.NewToolResultErrorf("outcome must be one of %s", strings.Join(outcomes, ", ")), nil
	}
	if p := args.PollAfterSeconds; p != nil && *p <= 0 {
		return mcp.NewToolResultError("poll_after_seconds must be a positive number"), nil
	}
	if args.StatusErrors != nil {
		if *args.StatusErrors < 0 {
			return mcp.NewToolResultError("status_errors must not be negative"), nil
		}
		spec.StatusErrors = *args.StatusErrors
	}
	if args.FinishAt != nil {
		if *args.FinishAt < 1 {
			return mcp.NewToolResultError("finish_at_status_call must be at least 1"), nil
		}
		spec.FinishAtStatusCall = *args.FinishAt
	}
	spec.StatusDelaySeconds = args.StatusDelay
	for _, n := range []struct {
		name string
		v    *int
		dst  *int
	}{{"answer_errors", args.AnswerErrors, &spec.AnswerErrors}, {"cancel_errors", args.CancelErrors, &spec.CancelErrors}} {
		if n.v != nil {
			if *n.v < 0 {
				return mcp.NewToolResultErrorf("%s must not be negative", n.name), nil
			}
			*n.dst = *n.v
		}
	}
	spec.HoldAnswers = args.HoldAnswers
	if len(spec.Result) == 0 || bytes.Equal(bytes.TrimSpace(spec.Result), []byte("null")) {
		spec.Result = defaultJobResult
	}
	var key string
	if req.Params.Meta != nil {
		key, _ = req.Params.Meta.AdditionalFields[mcpflow.SubmitKeyMeta].(string)
	}
	payload, err := s.jobs.submit(spec, key)
	if err != nil {
		s.log.Error("submit job", "err", err)
		return mcp.NewToolResultErrorf("submit_job: %v", err), nil
	}
	s.log.Info("job submitted", "task_id", payload["task_id"], "outcome", spec.Outcome,
		"duration_seconds", spec.DurationSeconds, "label", spec.Label)
	return mcp.NewToolResultStructured(payload, fmt.Sprintf("Submitted job %s.", payload["task_id"])), nil
}

func taskIDArg(req mcp.CallToolRequest) (string, *mcp.CallToolResult) {
	var args struct {
		TaskID string `json:"task_id"`
	}
	if res := bindArgs(req, &args); res != nil {
		return "", res
	}
	if args.TaskID == "" {
		return "", mcp.NewToolResultError("task_id is required")
	}
	return args.TaskID, nil
}

func (s *Server) getJobStatus(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, res := taskIDArg(req)
	if res != nil {
		return res, nil
	}
	payload, err := s.jobs.status(id)
	// Sleeps without the request context, like the submit delay.
	time.Sleep(s.jobs.statusDelay(id))
	if errors.Is(err, errStatusUnavailable) {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if err != nil {
		s.log.Error("job status", "task_id", id, "err", err)
		return mcp.NewToolResultErrorf("get_job_status: %v", err), nil
	}
	return mcp.NewToolResultStructured(payload, fmt.Sprintf("Job %s is %s.", id, payload["status"])), nil
}

func (s *Server) cancelJob(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, res := taskIDArg(req)
	if res != nil {
		return res, nil
	}
	payload, err := s.jobs.cancel(id)
	if errors.Is(err, errCancelRefused) {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if err != nil {
		s.log.Error("cancel job", "task_id", id, "err", err)
		return mcp.NewToolResultErrorf("cancel_job: %v", err), nil
	}
	s.log.Info("job cancel requested", "task_id", id, "status", payload["status"])
	return mcp.NewToolResultStructured(payload, fmt.Sprintf("Job %s is %s.", id, payload["status"])), nil
}

func (s *Server) answerJob(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		TaskID  string          `json:"task_id"`
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if res := bindArgs(req, &args); res != nil {
		return res, nil
	}
	if args.TaskID == "" {
		return mcp.NewToolResultError("task_id is required"), nil
	}
	var content map[string]any
	hasContent := len(args.Content) > 0 && !bytes.Equal(bytes.TrimSpace(args.Content), []byte("null"))
	switch args.Action {
	case actionAccept:
		if hasContent {
			if err := json.Unmarshal(args.Content, &content); err != nil || content == nil {
				return mcp.NewToolResultError("content must be an object"), nil
			}
		}
	case actionDecline, actionCancel:
		if hasContent {
			return mcp.NewToolResultError("content is only sent with action accept"), nil
		}
	default:
		return mcp.NewToolResultError("action must be accept, decline or cancel"), nil
	}
	s.jobs.holdAnswer(args.TaskID)
	payload, err := s.jobs.answer(args.TaskID, args.Action, content)
	if errors.Is(err, errAnswerRefused) {
		s.log.Info("job answer refused", "task_id", args.TaskID)
		return mcp.NewToolResultError(err.Error()), nil
	}
	if err != nil {
		s.log.Error("answer job", "task_id", args.TaskID, "err", err)
		return mcp.NewToolResultErrorf("answer_job: %v", err), nil
	}
	s.log.Info("job answer", "task_id", args.TaskID, "action", args.Action, "status", payload["status"], "error_code", payload["error_code"])
	text := fmt.Sprintf("Job %s took the answer (%s); it is %s.", args.TaskID, args.Action, payload["status"])
	if payload["error_code"] != nil {
		text = fmt.Sprintf("Job %s did not take the answer: %s.", args.TaskID, payload["error"])
	}
	return mcp.NewToolResultStructured(payload, text), nil
}

func (s *Server) releaseAnswers(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, res := taskIDArg(req)
	if res != nil {
		return res, nil
	}
	payload, err := s.jobs.releaseAnswers(id)
	if err != nil {
		s.log.Error("release answers", "task_id", id, "err", err)
		return mcp.NewToolResultErrorf("release_answers: %v", err), nil
	}
	return mcp.NewToolResultStructured(payload, fmt.Sprintf("Released %v answer(s) of job %s.", payload["released"], id)), nil
}

func (s *Server) jobStats(_ context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	stats := s.jobs.stats()
	return mcp.NewToolResultStructured(stats, fmt.Sprintf("%d submit(s), %d status call(s), %d cancel(s).",
		stats["submits"], stats["status_calls"], stats["cancels"])), nil
}
