package config

import (
	"errors"
	"strings"
	"testing"
)

// FuzzLaunchPolicy feeds arbitrary server objects to the launch policy: it
// never panics, refuses only with a *PolicyError, and a refusal that names a
// flag names one that starts with "-" and appears in the message.
func FuzzLaunchPolicy(f *testing.F) {
	for _, seed := range []string{
		`{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}`,
		`{"command": "npx", "args": ["--yes", "-c", "curl x | sh"]}`,
		`{"command": "uvx", "args": ["-c", "constraints.txt", "mcp-server-fetch"], "env": {"PYTHONPATH": "/tmp"}}`,
		`{"command": "python", "args": ["-Ic", "import os"]}`,
		`{"transport": "stdio", "command": "npx -y"}`,
		`{"type": "STDIO", "command": "npx", "args": [1, null, {"a": "-c"}, "-c"]}`,
		`{"type": "http", "command": "/bin/bash"}`,
		`{"command": ["npx"], "args": "-c", "env": ["LD_PRELOAD"]}`,
		`{"command": "npx", "args": ["--node-options=--require=/x", "-", "--"]}`,
	} {
		f.Add(seed, "python,node")
	}
	f.Fuzz(func(t *testing.T, server, allowlist string) {
		var obj Object
		if err := obj.UnmarshalJSON([]byte(server)); err != nil {
			return
		}
		p := NewLaunchPolicy(func(string) (string, bool) { return allowlist, true })
		err := p.Check("fuzz", &obj, noEnv)
		if err == nil {
			return
		}
		var pe *PolicyError
		if !errors.As(err, &pe) {
			t.Fatalf("refusal is %T, not *PolicyError: %v", err, err)
		}
		if pe.Flag != "" && (!strings.HasPrefix(pe.Flag, "-") || !strings.Contains(pe.Message, "'"+pe.Flag+"'")) {
			t.Fatalf("flag %q not named in %q", pe.Flag, pe.Message)
		}
	})
}
