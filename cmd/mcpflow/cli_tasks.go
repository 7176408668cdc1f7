package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// defaultWatchInterval is how often tasks watch reads the task.
const defaultWatchInterval = time.Second

// watchRetryFor is how long tasks watch keeps retrying while the API is
// unreachable or answers 429/502/503/504 before it gives up.
const watchRetryFor = 2 * time.Minute

// taskView is a task of the API (a list item or the detail, decoded into
// the API's own type) with what the client shows of it.
type taskView struct {
	api.TaskDetail
}

func (t *taskView) terminal() bool {
	return t.Status.IsTerminal()
}

// message is the server's progress message ("" when none).
func (t *taskView) message() string {
	if t.StatusMessage == nil {
		return ""
	}
	return *t.StatusMessage
}

// question is the question of an input_required task ("" when none).
func (t *taskView) question() string {
	if t.Status != mcpflow.StatusInputRequired || len(t.InputRequired) == 0 {
		return ""
	}
	for _, k := range []string{"question", "message"} {
		if s, ok := t.InputRequired[k].(string); ok && s != "" {
			return s
		}
	}
	return indentJSON(t.InputRequired)
}

// exitCode is the exit code of a watch that saw the task end.
func (t *taskView) exitCode() int {
	switch t.Status {
	case mcpflow.StatusCompleted:
		return exitOK
	case mcpflow.StatusCancelled:
		return exitCancelled
	default:
		return exitFailed
	}
}

// line is the one-line state of a task at now: status, elapsed time, last
// poll and the message.
func (t *taskView) line(now time.Time) string {
	status := string(t.Status)
	if t.CancelRequested && !t.terminal() {
		status += " (cancelling)"
	}
	end := now
	if t.terminal() {
		end = t.UpdatedAt
	}
	parts := []string{t.TaskID, t.TaskName, status, shortDuration(end.Sub(t.CreatedAt))}
	switch {
	case t.LastPolledAt != nil:
		parts = append(parts, "last poll "+shortDuration(now.Sub(*t.LastPolledAt))+" ago")
	case !t.terminal():
		parts = append(parts, "not polled yet")
	}
	if t.TrackingDegraded && t.LastPollError != nil {
		parts = append(parts, "tracking degraded: "+firstLine(*t.LastPollError, 80))
	}
	if t.StatusMessage != nil && !t.terminal() {
		parts = append(parts, strconv.Quote(firstLine(*t.StatusMessage, 120)))
	}
	if t.Status == mcpflow.StatusInputRequired {
		parts = append(parts, "waiting for input")
	}
	if t.Error != nil && t.terminal() {
		parts = append(parts, "error: "+firstLine(*t.Error, 120))
	}
	return strings.Join(parts, "  ")
}

// changeKey is what makes a plain watch print a new line: not the clock,
// nor each poll.
func (t *taskView) changeKey() string {
	var e, pe string
	if t.Error != nil {
		e = *t.Error
	}
	if t.TrackingDegraded && t.LastPollError != nil {
		pe = *t.LastPollError
	}
	return strings.Join([]string{string(t.Status), strconv.FormatBool(t.CancelRequested), t.message(), t.question(), e, pe}, "\x00")
}

func shortDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

func (c *cli) tasksCommand() *cobra.Command {
	var limit int
	var active bool
	listFlags := func(cmd *cobra.Command) {
		cmd.Flags().IntVar(&limit, "limit", 0, "at most this many tasks, newest first (1-100; default the API's, 50)")
		cmd.Flags().BoolVar(&active, "active", false, "only tasks that have not ended")
	}
	list := func(cmd *cobra.Command, _ []string) error { return c.listTasks(cmd.Context(), limit, active) }
	tasks := &cobra.Command{
		Use:   "tasks [list|get ID|cancel ID|watch ID]",
		Short: "The thread's durable tasks (default: list)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown tasks command %q: use list, get ID, cancel ID or watch ID (see %s --help)", args[0], cmd.CommandPath())
			}
			return nil
		},
		RunE: list,
	}
	listFlags(tasks)
	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List the thread's tasks, newest first",
		Args:  exactArgs(0, ""),
		RunE:  list,
	}
	listFlags(listCmd)
	get := &cobra.Command{
		Use:   "get ID",
		Short: "Show a task: status, times, last poll, question, result or error",
		Args:  exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := c.api.get(cmd.Context(), c.threadPath("mcp-tasks", args[0]), nil)
			if err != nil {
				return err
			}
			if c.json {
				fmt.Fprintf(c.stdout, "%s\n", compactJSON(b))
				return nil
			}
			var t taskView
			if err := decodeJSON(b, &t); err != nil {
				return err
			}
			c.printTask(&t, time.Now())
			return nil
		},
	}
	cancel := &cobra.Command{
		Use:   "cancel ID",
		Short: "Ask a task to cancel (asynchronous: tasks watch ID shows when it ends)",
		Args:  exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.cancelTask(cmd.Context(), args[0])
		},
	}
	var interval time.Duration
	watch := &cobra.Command{
		Use:   "watch ID",
		Short: "Follow a task to its end; the exit code is its outcome",
		Long: `Follow a task to its end. On a terminal one line shows the task's status,
elapsed time, last poll and message, rewritten in place; otherwise (a pipe, a
file, CI) a line is printed each time the status, message or question changes.
An input_required task is not an end: its question is printed and the watch goes
on. With --json, the task's detail is printed as one JSON object per line each
time it changes.

Exit codes: 0 completed, 1 failed (or an API error), 3 cancelled, 130
interrupted (the task goes on).`,
		Args: exactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.watchTask(cmd.Context(), args[0], interval)
		},
	}
	watch.Flags().DurationVar(&interval, "interval", defaultWatchInterval, "how often to read the task")
	tasks.AddCommand(listCmd, get, cancel, watch)
	return tasks
}

func (c *cli) listTasks(ctx context.Context, limit int, active bool) error {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if active {
		q.Set("active_only", "true")
	}
	b, err := c.api.get(ctx, c.threadPath("mcp-tasks"), q)
	if err != nil {
		return err
	}
	if c.json {
		fmt.Fprintf(c.stdout, "%s\n", compactJSON(b))
		return nil
	}
	var body struct {
		Tasks []taskView `json:"tasks"`
	}
	if err := decodeJSON(b, &body); err != nil {
		return err
	}
	if len(body.Tasks) == 0 {
		fmt.Fprintf(c.stdout, "no tasks on thread %s\n", c.thread)
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK ID\tNAME\tSTATUS\tCREATED\tUPDATED")
	for _, t := range body.Tasks {
		status := t.Status
		if t.CancelRequested && !t.terminal() {
			status += " (cancelling)"
		}
		if t.TrackingDegraded {
			status += " (tracking degraded)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s ago\t%s ago\n", t.TaskID, t.TaskName, status,
			shortDuration(now.Sub(t.CreatedAt)), shortDuration(now.Sub(t.UpdatedAt)))
	}
	return tw.Flush()
}

// printTask prints a task's detail for people.
func (c *cli) printTask(t *taskView, now time.Time) {
	w := c.stdout
	fmt.Fprintf(w, "Task: %s\n", t.TaskID)
	fmt.Fprintf(w, "Name: %s\n", t.TaskName)
	status := t.Status
	if t.CancelRequested {
		status += " (cancel requested)"
	}
	fmt.Fprintf(w, "Status: %s\n", status)
	fmt.Fprintf(w, "Created: %s (%s ago)\n", t.CreatedAt.Local().Format(time.RFC3339), shortDuration(now.Sub(t.CreatedAt)))
	fmt.Fprintf(w, "Updated: %s (%s ago)\n", t.UpdatedAt.Local().Format(time.RFC3339), shortDuration(now.Sub(t.UpdatedAt)))
	if t.LastPolledAt != nil {
		fmt.Fprintf(w, "Last poll: %s (%s ago)\n", t.LastPolledAt.Local().Format(time.RFC3339), shortDuration(now.Sub(*t.LastPolledAt)))
	}
	if m := t.message(); m != "" {
		fmt.Fprintf(w, "Message: %s\n", oneLine(m))
	}
	if t.LastPollError != nil {
		fmt.Fprintf(w, "Last poll error: %s\n", oneLine(*t.LastPollError))
	}
	if t.TrackingDegraded {
		fmt.Fprintln(w, "Tracking: degraded (polls keep failing)")
	}
	if q := t.question(); q != "" {
		fmt.Fprintf(w, "Input required: %s\n", q)
	}
	c.printOutcome(t)
	if t.TemporalUIURL != "" {
		fmt.Fprintf(w, "Temporal: %s\n", t.TemporalUIURL)
	}
}

// printOutcome prints a task's result or error.
func (c *cli) printOutcome(t *taskView) {
	w := c.stdout
	if t.Error != nil {
		fmt.Fprintf(w, "Error: %s\n", *t.Error)
	}
	switch {
	case t.Result != nil:
		fmt.Fprintf(w, "Result:\n%s\n", indentJSON(t.Result))
	case t.ResultPreview != nil:
		label := "Result"
		if t.ResultTruncated {
			label = "Result (truncated)"
		}
		fmt.Fprintf(w, "%s:\n%s\n", label, *t.ResultPreview)
	}
	if len(t.ResultArtifact) > 0 {
		fmt.Fprintf(w, "Result artifact: %s\n", indentJSON(t.ResultArtifact))
	}
}

func (c *cli) cancelTask(ctx context.Context, id string) error {
	b, err := c.api.do(ctx, http.MethodPost, c.threadPath("mcp-tasks", id, "cancel"), nil, nil, requestTimeout)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		// 409 answers the detail of a task that already ended.
		var t taskView
		if decodeJSON(ae.Body, &t) == nil && t.TaskID != "" {
			if c.json {
				fmt.Fprintf(c.stdout, "%s\n", compactJSON(ae.Body))
			}
			ae.Code, ae.Message = "conflict", fmt.Sprintf("task %s already ended: %s", t.TaskID, t.Status)
		}
		return ae
	}
	if err != nil {
		return err
	}
	if c.json {
		fmt.Fprintf(c.stdout, "%s\n", compactJSON(b))
		return nil
	}
	fmt.Fprintf(c.stdout, "Cancellation requested for task %s; it ends once the MCP server confirms (%s tasks watch %s%s).\n", id, c.prog, id, c.threadFlag())
	return nil
}

// transient reports whether err may pass: the API unreachable, overloaded
// or restarting.
func transient(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		switch ae.Status {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	var ue *usageError
	return !errors.As(err, &ue)
}

// watchTask follows a task until it ends (or ctx does) and returns an
// *exitError with the task's outcome.
func (c *cli) watchTask(ctx context.Context, id string, interval time.Duration) error {
	if interval <= 0 {
		return usagef("--interval must be positive (got %s)", interval)
	}
	w := newLiveWriter(c.stdout)
	var lastKey, lastJSON, lastQuestion string
	var failingSince time.Time
	shownURL := false
	for {
		b, err := c.api.get(ctx, c.threadPath("mcp-tasks", id), nil)
		if err != nil {
			if ctx.Err() != nil {
				return c.stopWatching(w, id)
			}
			if !transient(err) {
				w.end()
				return err
			}
			if failingSince.IsZero() {
				failingSince = time.Now()
				w.note(c.stderr, fmt.Sprintf("mcpflow: %s; retrying", oneLine(err.Error())))
			} else if time.Since(failingSince) > watchRetryFor {
				w.end()
				return err
			}
		} else {
			failingSince = time.Time{}
			var t taskView
			if err := decodeJSON(b, &t); err != nil {
				w.end()
				return err
			}
			if c.json {
				if s := string(compactJSON(b)); s != lastJSON {
					fmt.Fprintln(c.stdout, s)
					lastJSON = s
				}
			} else {
				if !shownURL && t.TemporalUIURL != "" {
					w.println("Temporal: " + t.TemporalUIURL)
					shownURL = true
				}
				if q := t.question(); q != "" && q != lastQuestion {
					w.println("Input required: " + q)
				}
				lastQuestion = t.question()
				line := t.line(time.Now())
				if w.live {
					w.redraw(line)
				} else if k := t.changeKey(); k != lastKey {
					w.println(line)
					lastKey = k
				}
			}
			if t.terminal() {
				w.end()
				if !c.json {
					c.printOutcome(&t)
				}
				if code := t.exitCode(); code != exitOK {
					return &exitError{code: code}
				}
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return c.stopWatching(w, id)
		case <-time.After(interval):
		}
	}
}

func (c *cli) stopWatching(w *liveWriter, id string) error {
	w.end()
	fmt.Fprintf(c.stderr, "mcpflow: stopped watching; task %s goes on (%s tasks watch %s%s)\n", id, c.prog, id, c.threadFlag())
	return &exitError{code: exitInterrupted}
}

// liveWriter writes the live line of tasks watch: on a terminal one line
// rewritten in place, elsewhere plain lines.
type liveWriter struct {
	w     io.Writer
	live  bool
	width int
	open  bool // a live line is on screen, without its newline
}

func newLiveWriter(w io.Writer) *liveWriter {
	lw := &liveWriter{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		lw.live = true
		if width, _, err := term.GetSize(int(f.Fd())); err == nil {
			lw.width = width
		}
	}
	return lw
}

// redraw replaces the live line.
func (l *liveWriter) redraw(line string) {
	if l.width > 1 {
		if r := []rune(line); len(r) > l.width-1 {
			line = string(r[:l.width-2]) + "…"
		}
	}
	var buf bytes.Buffer
	buf.WriteString("\r\x1b[2K")
	buf.WriteString(line)
	_, _ = l.w.Write(buf.Bytes())
	l.open = true
}

// println prints a line of its own above the live line.
func (l *liveWriter) println(s string) {
	if l.open {
		_, _ = io.WriteString(l.w, "\r\x1b[2K")
		l.open = false
	}
	_, _ = io.WriteString(l.w, s+"\n")
}

// note prints s on another writer (stderr), ending the live line first.
func (l *liveWriter) note(w io.Writer, s string) {
	l.end()
	fmt.Fprintln(w, s)
}

// end ends the live line, if one is open.
func (l *liveWriter) end() {
	if l.open {
		_, _ = io.WriteString(l.w, "\n")
		l.open = false
	}
}
