package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// The client commands (tools, call, tasks, events) talk to a running
// mcpflow's REST API as a user. Their exit codes:
const (
	exitOK          = 0   // done; a watched task completed
	exitFailed      = 1   // an API, network or tool error; a watched task failed
	exitUsage       = 2   // bad command line, or no token to call the API with
	exitCancelled   = 3   // a watched task was cancelled
	exitInterrupted = 130 // Ctrl-C (the context ended) before a watched task ended
)

// Client defaults: `make dev` serves on this URL and writes the user's
// token into this file (relative to the working directory).
const (
	defaultAPIURL    = "http://127.0.0.1:8080"
	defaultTokenFile = ".dev/user.token"
	// defaultThread is the thread of the client commands without --thread
	// or $MCPFLOW_THREAD. The API names no user's default thread
	// (default@<user id>) to a client that knows only its token, so the CLI
	// keeps its own.
	defaultThread = "cli"
)

// cliCommands are the first words of the command line that the client
// handles; cliGlobalFlags may come before them.
var (
	cliCommands    = []string{"tools", "call", "tasks", "events", "audit", "approvals"}
	cliGlobalFlags = []string{"--url", "--token", "--thread", "--json"}
)

// isCLI reports whether args are a client command line.
func isCLI(args []string) bool {
	return len(args) > 0 && (slices.Contains(cliCommands, args[0]) || slices.ContainsFunc(cliGlobalFlags, func(f string) bool {
		return args[0] == f || strings.HasPrefix(args[0], f+"=")
	}))
}

// usageError is a bad command line: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// exitError ends a command with code after it printed what it had to say.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// cli holds what every client command needs: the process's environment,
// its output and, once the flags are parsed, the API client.
type cli struct {
	env            func(string) (string, bool)
	stdout, stderr io.Writer
	tokenFile      string

	url, token, thread string
	json               bool
	prog               string // how the user ran mcpflow, for the commands hints show

	api *apiClient
}

// runCLI runs a client command (tools, call, tasks, events) and returns the
// process exit code.
func runCLI(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) int {
	c := &cli{env: env, stdout: stdout, stderr: stderr, tokenFile: defaultTokenFile, prog: progName(os.Args[0])}
	root := c.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	return c.exitCode(err)
}

// exitCode prints err (when there is something to print) and maps it to
// an exit code.
func (c *cli) exitCode(err error) int {
	var ue *usageError
	var ee *exitError
	var ae *apiError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(c.stderr, "mcpflow: %s\n", oneLine(ue.msg))
		return exitUsage
	case errors.As(err, &ae):
		fmt.Fprintf(c.stderr, "mcpflow: %s\n", oneLine(ae.Error()))
		return exitFailed
	default:
		fmt.Fprintf(c.stderr, "mcpflow: %s\n", oneLine(err.Error()))
		return exitFailed
	}
}

func (c *cli) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "mcpflow",
		Short: "mcpflow's command-line client",
		Long: `The client commands call a running mcpflow's REST API as a user.

--url    default $MCPFLOW_URL, else ` + defaultAPIURL + ` (make dev)
--token  default $MCPFLOW_TOKEN, else the file ` + defaultTokenFile + ` (make dev writes it)
--thread default $MCPFLOW_THREAD, else "` + defaultThread + `": tools and tasks are per thread
--json   the API's JSON (one object per line for events --follow and tasks watch)

Exit codes: 0 ok (a watched task completed), 1 API or network error, tool
error or a watched task failed, 2 usage error or no token, 3 a watched task
was cancelled, 130 interrupted.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown client command %q: use tools, call, tasks, events or audit (see mcpflow --help)", args[0])
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error {
			return usagef("missing command: tools, call, tasks, events or audit (see mcpflow --help)")
		},
		SilenceErrors:     true,
		SilenceUsage:      true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return c.setup(cmd) },
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usagef("%s: %v (see %s --help)", cmd.CommandPath(), err, cmd.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVar(&c.url, "url", "", "mcpflow's base URL (default $MCPFLOW_URL, else "+defaultAPIURL+")")
	pf.StringVar(&c.token, "token", "", "user token (default $MCPFLOW_TOKEN, else the file "+defaultTokenFile+")")
	pf.StringVar(&c.thread, "thread", "", `thread id (default $MCPFLOW_THREAD, else "`+defaultThread+`")`)
	pf.BoolVar(&c.json, "json", false, "print the API's JSON")
	root.AddCommand(c.toolsCommand(), c.callCommand(), c.tasksCommand(), c.eventsCommand(), c.auditCommand(), c.approvalsCommand())
	return root
}

// setup resolves --url, --token and --thread from the flags, the
// environment and the token file, and builds the API client.
func (c *cli) setup(cmd *cobra.Command) error {
	c.url = c.pick(cmd, "url", "MCPFLOW_URL", defaultAPIURL)
	c.thread = c.pick(cmd, "thread", "MCPFLOW_THREAD", defaultThread)
	if c.thread == "" {
		return usagef("--thread must not be empty")
	}
	c.token = c.pick(cmd, "token", "MCPFLOW_TOKEN", "")
	if c.token == "" && !cmd.Flags().Changed("token") {
		if b, err := os.ReadFile(c.tokenFile); err == nil {
			c.token = strings.TrimSpace(string(b))
		}
	}
	if c.token == "" {
		return usagef("no API token: pass --token, set MCPFLOW_TOKEN, or run `make dev` (it writes %s, read from the working directory)", c.tokenFile)
	}
	api, err := newAPIClient(c.url, c.token)
	if err != nil {
		return err
	}
	c.api = api
	return nil
}

// pick returns the flag's value when it was given, else the environment
// variable's when set and not empty, else def.
func (c *cli) pick(cmd *cobra.Command, flag, envName, def string) string {
	if cmd.Flags().Changed(flag) {
		v, _ := cmd.Flags().GetString(flag)
		return strings.TrimSpace(v)
	}
	if v, ok := c.env(envName); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return def
}

// threadPath is the API path of the current thread.
func (c *cli) threadPath(parts ...string) string {
	p := "/api/threads/" + url.PathEscape(c.thread)
	for _, s := range parts {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// threadFlag is what a printed hint adds so that it runs on the same
// thread.
// progName is the program as the user ran it when its name is mcpflow
// ("bin/mcpflow" in a checkout), so that a hint's command runs as shown;
// else "mcpflow".
func progName(argv0 string) string {
	if filepath.Base(argv0) == "mcpflow" {
		return argv0
	}
	return "mcpflow"
}

func (c *cli) threadFlag() string {
	if c.thread == defaultThread {
		return ""
	}
	return " --thread " + c.thread
}

// exactArgs and rangeArgs are cobra's argument checks as usage errors.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("usage: %s %s (see %s --help)", cmd.CommandPath(), names, cmd.CommandPath())
		}
		return nil
	}
}

func rangeArgs(lo, hi int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usagef("usage: %s %s (see %s --help)", cmd.CommandPath(), names, cmd.CommandPath())
		}
		return nil
	}
}
