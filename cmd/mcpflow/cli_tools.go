package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// toolView is the part of a listed tool the client shows.
type toolView struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Server      string          `json:"server"`
	TaskToolset *string         `json:"task_toolset"`
}

type toolsView struct {
	Tools              []toolView `json:"tools"`
	UnavailableServers []struct {
		Server string `json:"server"`
		Reason string `json:"reason"`
	} `json:"unavailable_servers"`
}

func (c *cli) toolsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "tools [TOOL]",
		Short: "List the thread's MCP tools, or show one tool's description and arguments",
		Long: `List the thread's MCP tools (a new thread is created), one per line with the
first line of its description; durable task tools are marked [task NAME].
With TOOL, print that tool's whole description and its input schema.`,
		Args: rangeArgs(0, 1, "[TOOL]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := c.api.get(cmd.Context(), c.threadPath("tools"), nil)
			if err != nil {
				return err
			}
			var tv toolsView
			if err := decodeJSON(b, &tv); err != nil {
				return err
			}
			if len(args) == 1 {
				return c.showTool(tv, args[0], b)
			}
			if c.json {
				fmt.Fprintf(c.stdout, "%s\n", compactJSON(b))
				return nil
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
			for _, t := range tv.Tools {
				desc := firstLine(t.Description, 100)
				if t.TaskToolset != nil {
					desc = "[task " + *t.TaskToolset + "] " + desc
				}
				fmt.Fprintf(tw, "%s\t%s\n", t.Name, desc)
			}
			_ = tw.Flush()
			if len(tv.Tools) == 0 {
				fmt.Fprintln(c.stdout, "(no tools)")
			}
			for _, u := range tv.UnavailableServers {
				fmt.Fprintf(c.stderr, "mcpflow: server %s is unavailable, its tools are missing: %s\n", u.Server, oneLine(u.Reason))
			}
			return nil
		},
	}
}

// showTool prints one tool of a listing.
func (c *cli) showTool(tv toolsView, name string, raw []byte) error {
	for _, t := range tv.Tools {
		if t.Name != name {
			continue
		}
		if c.json {
			var all struct {
				Tools []json.RawMessage `json:"tools"`
			}
			if err := json.Unmarshal(raw, &all); err == nil {
				for i, r := range all.Tools {
					if tv.Tools[i].Name == name {
						fmt.Fprintf(c.stdout, "%s\n", compactJSON(r))
						return nil
					}
				}
			}
		}
		fmt.Fprintf(c.stdout, "%s (server %s)\n", t.Name, t.Server)
		if t.TaskToolset != nil {
			fmt.Fprintf(c.stdout, "durable task: %s\n", *t.TaskToolset)
		}
		fmt.Fprintf(c.stdout, "\n%s\n", strings.TrimSpace(t.Description))
		if len(t.InputSchema) > 0 && string(t.InputSchema) != "null" {
			if schema, ok := indentRawJSON(t.InputSchema); ok {
				fmt.Fprintf(c.stdout, "\narguments (JSON Schema):\n%s\n", schema)
			}
		}
		return nil
	}
	return &apiError{Status: http.StatusNotFound, Code: "not_found",
		Message: fmt.Sprintf("no tool %q on thread %s; mcpflow tools%s lists them", name, c.thread, c.threadFlag())}
}

// callAnswer is a tool call's answer.
type callAnswer struct {
	IsError           bool              `json:"is_error"`
	Content           []json.RawMessage `json:"content"`
	StructuredContent any               `json:"structured_content"`
}

func (c *cli) callCommand() *cobra.Command {
	var argsJSON, idempotencyKey string
	var watch bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "call TOOL [key=value...]",
		Short: "Call a tool on the thread",
		Long: `Call a tool on the thread. Each key=value is one argument: the value is taken
as JSON when it is valid JSON (42, 2.5, true, null, "text", {"a":1}, [1,2]), else as
the string it is (so b=hello is "hello"; quote a number to pass it as a string:
n='"42"'). --args gives a JSON object of arguments; key=value pairs override it.
--idempotency-key makes a durable submit safe to run again: the same key on
the same thread answers the task the first run started.

The text content is printed as it is, the structured content as indented JSON.
A tool that answers with is_error exits 1. When the call started a durable task,
the task id and the command to watch it are printed; --watch watches it at once
(and exits as tasks watch does).`,
		Example: `  mcpflow call demo_add a=2 b=3
  mcpflow call demo_submit_job duration_seconds=5 outcome=completed --watch
  mcpflow call demo_submit_job duration_seconds=5 --idempotency-key nightly-2026-12-06
  mcpflow call demo_echo --args '{"text": "hi"}' --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usagef("usage: %s TOOL [key=value...] (see %s --help)", cmd.CommandPath(), cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			arguments, err := parseArguments(argsJSON, args[1:])
			if err != nil {
				return err
			}
			var header http.Header
			if cmd.Flags().Changed("idempotency-key") {
				header = http.Header{"Idempotency-Key": {idempotencyKey}} // the API checks it
			}
			b, err := c.api.doWith(cmd.Context(), http.MethodPost, c.threadPath("tools", args[0], "call"),
				nil, map[string]any{"arguments": arguments}, 0, header)
			if err != nil {
				return err
			}
			var ans callAnswer
			if err := decodeJSON(b, &ans); err != nil {
				return err
			}
			taskID := submittedTask(ans)
			if c.json {
				fmt.Fprintf(c.stdout, "%s\n", compactJSON(b))
			} else {
				c.printCallAnswer(ans, taskID)
			}
			if ans.IsError {
				if !c.json {
					fmt.Fprintf(c.stderr, "mcpflow: tool %s answered an error\n", args[0])
				}
				return &exitError{code: exitFailed}
			}
			if watch {
				if taskID == "" {
					fmt.Fprintf(c.stderr, "mcpflow: %s started no durable task: nothing to watch\n", args[0])
					return nil
				}
				return c.watchTask(cmd.Context(), taskID, interval)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&argsJSON, "args", "", "the arguments as a JSON object")
	cmd.Flags().StringVar(&idempotencyKey, "idempotency-key", "", "a key (1-255 printable ASCII characters, no spaces) that makes a durable submit answer the same task when run again")
	cmd.Flags().BoolVar(&watch, "watch", false, "when the call starts a durable task, watch it to its end")
	cmd.Flags().DurationVar(&interval, "interval", defaultWatchInterval, "with --watch: how often to read the task")
	return cmd
}

// parseArguments builds a call's arguments from --args and key=value pairs.
func parseArguments(argsJSON string, pairs []string) (map[string]any, error) {
	arguments := map[string]any{}
	if strings.TrimSpace(argsJSON) != "" {
		var v any
		if err := decodeJSON([]byte(argsJSON), &v); err != nil || !json.Valid([]byte(argsJSON)) {
			return nil, usagef("--args must be a JSON object (got %q)", argsJSON)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, usagef("--args must be a JSON object (got %q)", argsJSON)
		}
		arguments = obj
	}
	for _, p := range pairs {
		key, value, ok := strings.Cut(p, "=")
		if !ok || key == "" {
			return nil, usagef("argument %q is not key=value", p)
		}
		arguments[key] = parseValue(value)
	}
	return arguments, nil
}

// parseValue is a key=value pair's value: JSON when it is valid JSON, else
// the string.
func parseValue(s string) any {
	if !json.Valid([]byte(s)) {
		return s
	}
	var v any
	if err := decodeJSON([]byte(s), &v); err != nil {
		return s
	}
	return v
}

// submittedTask returns the task id when the answer is a durable task's
// submit wrapper ({task_id, task_name, status, message}), else "".
func submittedTask(ans callAnswer) string {
	sc, ok := ans.StructuredContent.(map[string]any)
	if !ok || ans.IsError {
		return ""
	}
	id, _ := sc["task_id"].(string)
	_, hasName := sc["task_name"]
	_, hasStatus := sc["status"]
	if id == "" || !hasName || !hasStatus {
		return ""
	}
	return id
}

func (c *cli) printCallAnswer(ans callAnswer, taskID string) {
	if taskID != "" {
		sc := ans.StructuredContent.(map[string]any)
		fmt.Fprintf(c.stdout, "Started task %s (%v), %v: %v\n", taskID, sc["task_name"], sc["status"], sc["message"])
		fmt.Fprintf(c.stdout, "Watch it: %s tasks watch %s%s\n", c.prog, taskID, c.threadFlag())
		return
	}
	for _, raw := range ans.Content {
		var item struct {
			Type string `json:"type"`
			Text string `json:"text"`
			URI  string `json:"uri"`
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &item)
		switch {
		case item.Type == "text":
			fmt.Fprintln(c.stdout, item.Text)
		case item.URI != "":
			fmt.Fprintf(c.stdout, "[%s] %s\n", item.Type, item.URI)
		default:
			fmt.Fprintf(c.stdout, "[%s] %s\n", item.Type, firstLine(string(compactJSON(raw)), 200))
		}
	}
	if ans.StructuredContent != nil {
		fmt.Fprintf(c.stdout, "structured content:\n%s\n", indentJSON(ans.StructuredContent))
	}
}

// firstLine is s's first line, cut to max characters.
func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}
