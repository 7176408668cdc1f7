package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// Stdio launch policy (spec §5): screens the stdio servers that an API write
// would enable, so that the admin API cannot become a way to run arbitrary
// code. Configuration files on disk are not screened. It is defense in
// depth, not a trust boundary: an allowed launcher still runs whatever
// package it is pointed at.

// Environment variables that extend the stdio command allowlist
// (comma-separated executable names).
const (
	EnvStdioAllowlist         = "MCPFLOW_MCP_STDIO_COMMAND_ALLOWLIST"
	EnvDeerFlowStdioAllowlist = "DEER_FLOW_MCP_STDIO_COMMAND_ALLOWLIST"
)

// Facts of spec §5.2.
var (
	defaultStdioCommands = []string{"npx", "uvx"}
	// arbitraryExecArgs run code given on the command line.
	arbitraryExecArgs = setOf("-c", "--call", "-e", "--eval", "--print", "--shell", "--node-arg", "--node-options")
	// uvxExecArgs are the long spellings only (uv's -c and -p mean other
	// things): a tripwire.
	uvxExecArgs = setOf("--call", "--eval", "--print", "--shell", "--node-arg", "--node-options")
	// clusteredExecLetters are the letters of -c, -e and -p, looked for in
	// short-option clusters such as -Ic or -we of other commands.
	clusteredExecLetters = "cep"
	// codeInjectingEnv run code when any process starts.
	codeInjectingEnv = setOf("BASH_ENV", "DYLD_INSERT_LIBRARIES", "ENV", "LD_AUDIT", "LD_PRELOAD",
		"NODE_OPTIONS", "PERL5OPT", "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "RUBYOPT")
)

func setOf(items ...string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[s] = true
	}
	return m
}

// PolicyError is a stdio server the launch policy refuses. Flag is the
// normalized option that would run code ("" for command and env
// violations); the message never contains an argument's payload.
type PolicyError struct {
	Server  string
	Flag    string
	Message string
}

func (e *PolicyError) Error() string { return e.Message }

// LaunchPolicy holds the stdio command allowlist.
type LaunchPolicy struct {
	allow map[string]bool
}

// NewLaunchPolicy returns the policy with the default allowlist {npx, uvx}
// extended (never narrowed) by MCPFLOW_MCP_STDIO_COMMAND_ALLOWLIST and
// DEER_FLOW_MCP_STDIO_COMMAND_ALLOWLIST. A nil env reads nothing.
func NewLaunchPolicy(env func(string) (string, bool)) *LaunchPolicy {
	p := &LaunchPolicy{allow: setOf(defaultStdioCommands...)}
	if env == nil {
		return p
	}
	for _, name := range []string{EnvStdioAllowlist, EnvDeerFlowStdioAllowlist} {
		v, _ := env(name)
		for _, c := range strings.Split(v, ",") {
			if c = strings.TrimSpace(c); c != "" {
				p.allow[c] = true
			}
		}
	}
	return p
}

// Allowed returns the allowlist, sorted.
func (p *LaunchPolicy) Allowed() []string {
	return slices.Sorted(maps.Keys(p.allow))
}

// isStdio reports whether an API server object is a stdio server: its type
// (or, when type is absent or empty, a truthy transport) lower-cased is
// "stdio", or neither is set.
func isStdio(server *Object) bool {
	return strings.EqualFold(apiTransport(server), TransportStdio)
}

// apiTransport applies the transport alias rule to an API server object.
func apiTransport(server *Object) string {
	if server == nil {
		return TransportStdio
	}
	if t, ok := server.Get("type"); ok {
		if s, ok := t.(string); ok && s != "" {
			return s
		}
	}
	if t, ok := server.Get("transport"); ok && !falsy(t) {
		if s, ok := t.(string); ok {
			return s
		}
	}
	return TransportStdio
}

// Check screens one API server object named name; sse/http servers pass
// untouched. It checks the command, then the args, then env, and returns
// the first violation as a *PolicyError.
//
// The runtime resolves $VAR placeholders (with env; nil: os.LookupEnv)
// before it launches anything, so a server is screened when it is stdio as
// written or once resolved (a "type": "$UNSET" is stdio), and its args are
// screened resolved too. The command must be written out (a "$" refuses
// it; a command that is a placeholder is named in the message). Messages
// never contain a resolved value.
func (p *LaunchPolicy) Check(name string, server *Object, env func(string) (string, bool)) error {
	resolved, _ := ResolveEnv(server, env).(*Object)
	if !isStdio(server) && !isStdio(resolved) {
		return nil
	}
	cmdVal, _ := server.Get("command")
	command, _ := cmdVal.(string)
	if strings.TrimSpace(command) == "" {
		return &PolicyError{Server: name, Message: fmt.Sprintf("MCP server '%s' with stdio transport requires a command.", name)}
	}
	if strings.HasPrefix(command, "$") {
		// A placeholder: name it (its value may be anything, even a
		// secret, and is never shown).
		return &PolicyError{Server: name, Message: fmt.Sprintf("MCP server '%s' command '%s' is a $VAR placeholder; the stdio launch policy needs the command written out as a single executable name on the allowlist (%s; %s extends it).",
			name, command, strings.Join(p.Allowed(), ", "), EnvStdioAllowlist)}
	}
	if command != strings.TrimSpace(command) || strings.ContainsAny(command, "/\\;|&`$<>\n\r") || strings.ContainsFunc(command, unicode.IsSpace) {
		return &PolicyError{Server: name, Message: fmt.Sprintf("MCP server '%s' command must be a single executable name; put parameters in args instead.", name)}
	}
	if !p.allow[command] {
		return &PolicyError{Server: name, Message: fmt.Sprintf("MCP server '%s' uses disallowed stdio command '%s'. Allowed commands: %s. Configure %s to extend this list.",
			name, command, strings.Join(p.Allowed(), ", "), EnvStdioAllowlist)}
	}
	for _, obj := range []*Object{server, resolved} {
		v, _ := obj.Get("args")
		args, _ := v.([]any)
		if flag := execFlag(command, args); flag != "" {
			return &PolicyError{Server: name, Flag: flag, Message: fmt.Sprintf("MCP server '%s' passes '%s' to '%s', which would run arbitrary code. Point the server at a package or module instead.", name, flag, command)}
		}
	}
	if env, ok := objectAt(server, "env"); ok {
		for _, k := range env.Keys() {
			if n := strings.ToUpper(strings.TrimSpace(k)); codeInjectingEnv[n] {
				return &PolicyError{Server: name, Message: fmt.Sprintf("MCP server '%s' sets environment variable '%s', which would run arbitrary code at process startup.", name, n)}
			}
		}
	}
	return nil
}

// execFlag returns the normalized option of args that would make command
// run code given on its command line, or "".
func execFlag(command string, args []any) string {
	switch strings.ToLower(command) {
	case "npx":
		return launcherExecFlag(args, arbitraryExecArgs, func(flag string) bool { return !npxBooleanArgs[flag] })
	case "uvx":
		return launcherExecFlag(args, uvxExecArgs, func(flag string) bool { return uvxValueArgs[flag] })
	}
	for _, a := range args {
		s, ok := a.(string)
		if !ok {
			continue
		}
		flag, _, _ := strings.Cut(s, "=")
		flag = strings.ToLower(strings.TrimSpace(flag))
		if arbitraryExecArgs[flag] || flag == "-p" {
			return flag
		}
		if strings.HasPrefix(flag, "-") && !strings.HasPrefix(flag, "--") {
			for _, r := range flag[1:] {
				if strings.ContainsRune(clusteredExecLetters, r) {
					return "-" + string(r)
				}
			}
		}
	}
	return ""
}

// launcherExecFlag screens the option region of a package launcher: the
// options before the package name (or "--"/"-"); what follows is the
// server's own argv and is never screened. consumes tells whether an option
// without "=" takes the next token as its value.
func launcherExecFlag(args []any, exec map[string]bool, consumes func(flag string) bool) string {
	for i := 0; i < len(args); i++ {
		s, ok := args[i].(string)
		if !ok {
			return ""
		}
		tok := strings.TrimSpace(s)
		if tok == "--" || tok == "-" || !strings.HasPrefix(tok, "-") {
			return ""
		}
		flag, _, hasValue := strings.Cut(tok, "=")
		if strings.HasPrefix(flag, "--") {
			flag = strings.ToLower(flag)
		}
		if exec[flag] {
			return flag
		}
		if !hasValue && consumes(flag) {
			i++ // the option's value, not the package
		}
	}
	return ""
}

// CheckAll screens the servers of an API payload in request order and
// returns the first violation.
func (p *LaunchPolicy) CheckAll(servers *Object, env func(string) (string, bool)) error {
	for _, name := range servers.Keys() {
		v, _ := servers.Get(name)
		obj, _ := v.(*Object)
		if err := p.Check(name, obj, env); err != nil {
			return err
		}
	}
	return nil
}
