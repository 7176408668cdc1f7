package config_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// The launch policy's npx grammar pinned against the real launcher: for
// allowed vectors npx hands the tokens after the package to the package's
// own argv, and for refused ones npx itself runs the payload (a harmless
// marker file). Everything is local: a stub package in a directory, npx
// --offline with its own cache.
func TestNpxVerdictsMatchTheRealLauncher(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		testenv.MissingDependency(t, "npx is not installed: the launcher check needs it (install Node.js; the policy's own vectors run in api tests)")
	}
	t.Parallel()
	dir := t.TempDir()
	stub := filepath.Join(dir, "stub")
	require.NoError(t, os.MkdirAll(stub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stub, "package.json"),
		[]byte(`{"name": "mcpflow-stub-server", "version": "1.0.0", "bin": {"mcpflow-stub-server": "index.js"}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(stub, "index.js"),
		[]byte("#!/usr/bin/env node\nrequire('fs').writeFileSync(process.env.ARGV_OUT, JSON.stringify(process.argv.slice(2)))\n"), 0o755))

	run := func(t *testing.T, args []string) (argv []string, out string) {
		t.Helper()
		argvFile := filepath.Join(t.TempDir(), "argv.json")
		cmd := exec.Command(npx, append([]string{"--offline"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "ARGV_OUT="+argvFile, "npm_config_cache="+filepath.Join(dir, "cache"),
			"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false")
		done := make(chan struct{})
		var b []byte
		go func() { b, _ = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if data, err := os.ReadFile(argvFile); err == nil {
			require.NoError(t, json.Unmarshal(data, &argv))
		}
		return argv, string(b)
	}
	policy := config.NewLaunchPolicy(nil)
	check := func(args []string) error {
		s := config.NewObject()
		s.Set("type", "stdio")
		s.Set("command", "npx")
		a := make([]any, len(args))
		for i, x := range args {
			a[i] = x
		}
		s.Set("args", a)
		return policy.Check("s", s, func(string) (string, bool) { return "", false })
	}

	// Allowed: the tokens after the package reach the server (vectors 33,
	// 36, 37, 38, 40, 41, 42).
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-y", "PKG", "-name", "value"}, []string{"-name", "value"}},
		{[]string{"-y", "PKG", "-c", "config.json"}, []string{"-c", "config.json"}},
		{[]string{"-y", "PKG", "-e", "production"}, []string{"-e", "production"}},
		{[]string{"-y", "PKG", "--", "-c", "config.json"}, []string{"-c", "config.json"}},
		{[]string{"PKG", "--call", "not-a-launcher-flag"}, []string{"--call", "not-a-launcher-flag"}},
		{[]string{"--yes", "PKG", "--eval", "expr"}, []string{"--eval", "expr"}},
		{[]string{"--parseable", "PKG", "-c", "config.json"}, []string{"-c", "config.json"}},
	} {
		args := replace(tc.args, "PKG", stub)
		require.NoError(t, check(args), "the policy allows %v", tc.args)
		argv, out := run(t, args)
		require.NotNil(t, argv, "npx did not run the stub for %v: %s", tc.args, out)
		require.True(t, containsSeq(argv, tc.want), "npx passed %v through for %v (argv %v)", tc.want, tc.args, argv)
	}

	// Refused: npx itself would run the payload (vectors 8, 9, 12, 46, 47, 50).
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"-c", "MARK"}, "-c"},
		{[]string{"--yes", "-c", "MARK"}, "-c"},
		{[]string{"-c=MARK"}, "-c"},
		{[]string{"-p", "PKG", "-c", "MARK"}, "-c"},
		{[]string{"--package", "PKG", "--call", "MARK"}, "--call"},
		{[]string{"--loglevel", "silly", "-c", "MARK"}, "-c"},
	} {
		marker := filepath.Join(t.TempDir(), "pwned")
		args := replace(replace(tc.args, "PKG", stub), "MARK", "touch "+marker)
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "=MARK", "=touch "+marker)
		}
		err := check(args)
		var pe *config.PolicyError
		require.ErrorAs(t, err, &pe, "the policy refuses %v", tc.args)
		require.Equal(t, tc.flag, pe.Flag)
		_, out := run(t, args)
		_, statErr := os.Stat(marker)
		require.NoError(t, statErr, "npx ran the payload of %v, so refusing it is right (output: %s)", tc.args, out)
	}
}

func replace(args []string, from, to string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if a == from {
			out[i] = to
		}
	}
	return out
}

func containsSeq(s, seq []string) bool {
	for i := 0; i+len(seq) <= len(s); i++ {
		if slices.Equal(s[i:i+len(seq)], seq) {
			return true
		}
	}
	return false
}
