package deployments_test

// The examples of README.md and of the pages under docs/ are tests. The
// rule, also stated in docs/development.md ("Examples are tests"):
//
//   - A block fenced ```sh runs against make dev's stack; shell that needs
//     anything else is fenced ```shell (or another language) and is not run.
//   - TestREADMEExamples starts deployments/dev/run.sh on free ports with a
//     temporary DEV_DIR and runs every sh block, in order (README.md first,
//     then docs/ page by page in path order), in one bash
//     (set -e -o pipefail; variables carry over from block to block), from a
//     directory whose .dev/ is that DEV_DIR and whose bin/ is the
//     repository's. The default ports in the text (8080, 7233, 8233, 8765
//     after 127.0.0.1:) become the test's; TEMPORAL_ADDRESS and MCPFLOW_URL
//     point at them, as the export lines make dev prints say.
//   - A command is a line, continued by lines ending in "\". Every command
//     must exit 0.
//   - A comment starting with "=>", after the command on its line or on the
//     "#" lines right below it (continued by "#" lines indented by two or
//     more spaces), is what the command must print. It is compared with all
//     whitespace taken out, "…" (or "...") standing for any text. Other
//     comments are remarks.
//   - At the end run.sh gets SIGTERM: it must exit 0 having stopped mcpflow,
//     demo-mcp and Temporal in that order, leave no port open, and no log
//     (mcpflow's output, .dev/temporal.log, .dev/demo-mcp.log) may hold an
//     error line.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/stretchr/testify/require"
)

// exampleCommand is one command of an sh block of README.md or docs/.
type exampleCommand struct {
	file string // the page, relative to the repository's root
	line int    // its first line in file
	src  string // the command as bash reads it (continuation lines included)
	want string // the documented output ("" when none)
}

// defaultPorts are make dev's ports as the README and docs write them.
var defaultPorts = map[string]string{"api": "8080", "temporal": "7233", "ui": "8233", "demo": "8765"}

// parseExamples returns the commands of the sh blocks of the page file
// (named relative to the repository's root), in order.
func parseExamples(file, text string) ([]exampleCommand, error) {
	var (
		out     []exampleCommand
		inBlock bool
		cont    bool // the previous line ended in "\"
		inWant  bool // the previous line belonged to an output comment
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !inBlock {
			inBlock = strings.TrimSpace(line) == "```sh"
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if cont {
				return nil, fmt.Errorf("%s:%d: the block ends inside a command continued with \\", file, n)
			}
			inBlock, inWant = false, false
			continue
		}
		if cont {
			last := &out[len(out)-1]
			last.src += "\n" + line
			cont = strings.HasSuffix(line, `\`)
			if !cont {
				last.want = outputComment(line)
				inWant = last.want != ""
			}
			continue
		}
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			inWant = false
		case strings.HasPrefix(trimmed, "# =>"):
			if len(out) == 0 {
				return nil, fmt.Errorf("%s:%d: an output comment before any command", file, n)
			}
			last := &out[len(out)-1]
			last.want += " " + trimmed[len("# =>"):]
			inWant = true
		case inWant && strings.HasPrefix(trimmed, "#  "):
			out[len(out)-1].want += " " + trimmed[1:]
		case strings.HasPrefix(trimmed, "#"):
			inWant = false // a remark
		default:
			out = append(out, exampleCommand{file: file, line: n, src: line})
			cont = strings.HasSuffix(line, `\`)
			inWant = false
			if !cont {
				out[len(out)-1].want = outputComment(line)
				inWant = out[len(out)-1].want != ""
			}
		}
	}
	if inBlock {
		return nil, fmt.Errorf("%s: an sh block is not closed", file)
	}
	return out, sc.Err()
}

// examplePages returns the examples of README.md and then of every page
// under docs/, in path order: the order TestREADMEExamples runs them in.
func examplePages(root string) ([]exampleCommand, error) {
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			pages = append(pages, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var cmds []exampleCommand
	for _, p := range pages {
		text, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return nil, err
		}
		c, err := parseExamples(p, string(text))
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c...)
	}
	return cmds, nil
}

// outputComment returns the "=> …" part of line's trailing comment, or "".
// A "#" starts a comment outside quotes, at the start or after a blank.
func outputComment(line string) string {
	var quote rune
	escaped := false
	prev := ' '
	for i, r := range line {
		switch {
		case escaped:
			escaped = false
		case r == '\\' && quote != '\'':
			escaped = true
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && unicode.IsSpace(prev):
			c := strings.TrimSpace(line[i+1:])
			if strings.HasPrefix(c, "=>") {
				return strings.TrimSpace(c[len("=>"):])
			}
			return ""
		}
		prev = r
	}
	return ""
}

// wantPattern turns a documented output into an anchored regular
// expression over the whitespace-free output.
func wantPattern(want string) *regexp.Regexp {
	want = strings.ReplaceAll(stripSpace(want), "...", "…")
	parts := strings.Split(want, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?s)\A` + strings.Join(parts, ".*?") + `\z`)
}

func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// withPorts replaces make dev's default ports in text with ports.
func withPorts(text string, ports map[string]string) string {
	for k, def := range defaultPorts {
		text = strings.ReplaceAll(text, "127.0.0.1:"+def, "127.0.0.1:"+ports[k])
	}
	return text
}

func TestREADMEParsesExamples(t *testing.T) {
	t.Parallel()
	cmds, err := parseExamples("x.md", "x\n```sh\nA=1   # a remark\n"+
		"curl -s \\\n  -d '{\"a\": \"# no\"}' http://127.0.0.1:8080/x   # => {\"a\":…}\n"+
		"# a remark\nfoo | bar\n# => 1\n#    2\n# not output\n#    nor this\n```\n```shell\nmake dev\n```\n")
	require.NoError(t, err)
	require.Len(t, cmds, 3)
	require.Equal(t, exampleCommand{file: "x.md", line: 3, src: "A=1   # a remark"}, cmds[0])
	require.Equal(t, 4, cmds[1].line)
	require.Equal(t, "{\"a\":…}", cmds[1].want)
	require.Equal(t, "foo | bar", cmds[2].src)
	require.Equal(t, "12", stripSpace(cmds[2].want))
	require.True(t, wantPattern(cmds[1].want).MatchString(stripSpace(`{"a": 1, "b": [2]}`)))
	require.False(t, wantPattern(`{"a":1}`).MatchString(`{"a":1}x`), "anchored")
	require.Equal(t, "curl http://127.0.0.1:18080/x 127.0.0.1:7", withPorts("curl http://127.0.0.1:8080/x 127.0.0.1:7",
		map[string]string{"api": "18080", "temporal": "1", "ui": "2", "demo": "3"}))
	_, err = parseExamples("x.md", "```sh\nfoo \\\n```\n")
	require.ErrorContains(t, err, "x.md:3:")
}

// The examples come from README.md and every page under docs/, README.md
// first, and every page's sh blocks parse.
func TestExamplePages(t *testing.T) {
	t.Parallel()
	cmds, err := examplePages("..")
	require.NoError(t, err)
	require.NotEmpty(t, cmds)
	require.Equal(t, "README.md", cmds[0].file)
	seen := map[string]bool{}
	for i, c := range cmds {
		if i > 0 && c.file != cmds[i-1].file {
			require.False(t, seen[c.file], "%s's examples run together", c.file)
			require.True(t, strings.HasPrefix(c.file, "docs/"), c.file)
			if cmds[i-1].file != "README.md" {
				require.Less(t, cmds[i-1].file, c.file, "docs/ in path order")
			}
		}
		seen[c.file] = true
	}
	for _, p := range []string{"docs/agent-developers.md", "docs/mcp-servers.md"} {
		require.True(t, seen[p], "%s has examples that run", p)
	}
}

// The ports and the state directory of make dev are make variables passed to
// run.sh under the same names, and the README names each.
func TestDevVariables(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	run, err := os.ReadFile("dev/run.sh")
	require.NoError(t, err)
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	for _, v := range []string{"DEV_API_PORT", "DEV_TEMPORAL_PORT", "DEV_UI_PORT", "DEV_DEMO_PORT", "DEV_DIR"} {
		require.Regexp(t, `(?m)^`+v+`\s+\?=`, string(mk), "the Makefile defines %s", v)
		require.Contains(t, string(mk), v+"='$("+v+")'", "make dev passes %s to run.sh", v)
		require.Contains(t, string(run), "${"+v+":-", "run.sh reads %s", v)
		require.Contains(t, string(readme), "`"+v+"`", "the README names %s", v)
	}
}

// freePort is a free port below the kernel's ephemeral range, from which
// the Temporal dev server takes its own random ports: a port from that
// range could be taken while the stack starts (make dev stops then, naming
// it).
func freePort(t *testing.T) string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	for range 1000 {
		if low <= 20000 {
			break
		}
		p := 20000 + rand.IntN(low-20000)
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			l.Close()
			return strconv.Itoa(p)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// hermeticEnv is the test's environment without what would steer mcpflow,
// the Temporal CLI, make dev or the examples elsewhere, plus extra.
func hermeticEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "MCPFLOW_") || strings.HasPrefix(k, "TEMPORAL_") || strings.HasPrefix(k, "DEV_") ||
			strings.HasPrefix(k, "DEER_FLOW_") || k == "MAKELEVEL" || k == "MAKEFLAGS" || k == "MFLAGS" || k == "TOKEN" || k == "ADMIN" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// bannerExport matches a variable make dev's banner says to export
// (export NAME=value, several on a line).
var bannerExport = regexp.MustCompile(`\b(TEMPORAL_ADDRESS|MCPFLOW_URL)=([^\s)]+)`)

// errorLine matches a log line that reports an error.
var errorLine = regexp.MustCompile(`(?i)\blevel=(error|fatal|panic|dpanic)\b|"level":\s*"(error|fatal|panic|dpanic)"|^panic:|^fatal error:|make dev: .* exited`)

func TestREADMEExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("starts make dev's stack (-short)")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	for _, b := range []string{"mcpflow", "demo-mcp", "temporal"} {
		if _, err := os.Stat(filepath.Join(root, "bin", b)); err != nil {
			testenv.MissingDependency(t, "bin/%s is missing: run make build tools (make test does)", b)
		}
	}
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.MissingDependency(t, "%s is not installed: the examples of the README and docs/ need it", tool)
		}
	}
	t.Parallel()
	cmds, err := examplePages(root)
	require.NoError(t, err)
	pages := map[string]int{}
	for _, c := range cmds {
		pages[strings.SplitN(c.file, "/", 2)[0]]++
	}
	require.NotZero(t, pages["README.md"], "README.md has examples")
	require.NotZero(t, pages["docs"], "docs/ has examples")

	ports := map[string]string{}
	for k := range defaultPorts {
		ports[k] = freePort(t)
	}
	work := t.TempDir()
	devDir := filepath.Join(work, ".dev")
	require.NoError(t, os.Symlink(filepath.Join(root, "bin"), filepath.Join(work, "bin")))

	// The stack, as make dev starts it.
	var stackOut testenv.SyncBuffer
	stack := exec.Command(filepath.Join(root, "deployments/dev/run.sh"))
	stack.Dir = root
	stack.Env = hermeticEnv("DEV_API_PORT="+ports["api"], "DEV_TEMPORAL_PORT="+ports["temporal"],
		"DEV_UI_PORT="+ports["ui"], "DEV_DEMO_PORT="+ports["demo"], "DEV_DIR="+devDir)
	stack.Stdout, stack.Stderr = &stackOut, &stackOut
	require.NoError(t, stack.Start())
	exited := make(chan error, 1)
	go func() { exited <- stack.Wait() }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		_ = stack.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			return err
		case <-time.After(90 * time.Second):
			_ = stack.Process.Kill()
			return errors.New("run.sh did not exit within 90 s of SIGTERM")
		}
	}
	t.Cleanup(func() { _ = stop() })
	logs := func() string {
		out := "--- run.sh and mcpflow ---\n" + stackOut.String()
		for _, f := range []string{"temporal.log", "demo-mcp.log"} {
			b, _ := os.ReadFile(filepath.Join(devDir, f))
			out += "--- " + f + " ---\n" + string(b)
		}
		return out
	}

	api := "http://127.0.0.1:" + ports["api"]
	ready := false
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline) && !ready; {
		select {
		case err := <-exited:
			require.FailNow(t, "run.sh exited before the stack was ready", "%v\n%s", err, logs())
		case <-time.After(250 * time.Millisecond):
		}
		if resp, err := http.Get(api + "/readyz"); err == nil {
			ready = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
	}
	require.True(t, ready, "the stack was not ready within 3 minutes\n%s", logs())

	// The examples run with what make dev's banner tells a user to export
	// for bin/temporal and bin/mcpflow on these ports.
	exports := map[string]string{}
	for _, m := range bannerExport.FindAllStringSubmatch(stackOut.String(), -1) {
		exports[m[1]] = m[2]
	}
	require.Equal(t, "127.0.0.1:"+ports["temporal"], exports["TEMPORAL_ADDRESS"], "make dev's banner\n%s", logs())
	require.Equal(t, api, exports["MCPFLOW_URL"], "make dev's banner\n%s", logs())

	// The examples, in one bash, each command followed by a marker with its index.
	const marker = "\x1eEXAMPLE-DONE "
	var script strings.Builder
	script.WriteString("set -e -o pipefail\n")
	for i, c := range cmds {
		fmt.Fprintf(&script, "%s\nprintf '\\n%s%d\\n'\n", withPorts(c.src, ports), strings.ReplaceAll(marker, "\x1e", `\036`), i)
	}
	scriptPath := filepath.Join(t.TempDir(), "readme.sh")
	require.NoError(t, os.WriteFile(scriptPath, []byte(script.String()), 0o600))
	emptyToml := filepath.Join(t.TempDir(), "temporal.toml")
	require.NoError(t, os.WriteFile(emptyToml, nil, 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	sh := exec.CommandContext(ctx, "bash", scriptPath)
	sh.Dir = work
	sh.Env = hermeticEnv("TEMPORAL_ADDRESS="+exports["TEMPORAL_ADDRESS"], "TEMPORAL_CONFIG_FILE="+emptyToml,
		"MCPFLOW_URL="+exports["MCPFLOW_URL"])
	sh.Stdout, sh.Stderr = &stdout, &stderr
	runErr := sh.Run()

	// Split the output by command; the command after the last marker failed.
	outputs := make([]string, 0, len(cmds))
	rest := stdout.String()
	for i := range cmds {
		m := marker + strconv.Itoa(i) + "\n"
		j := strings.Index(rest, m)
		if j < 0 {
			break
		}
		outputs = append(outputs, strings.TrimSpace(rest[:j]))
		rest = rest[j+len(m):]
	}
	for i, out := range outputs {
		c := cmds[i]
		if c.want == "" {
			continue
		}
		want := withPorts(c.want, ports)
		if !wantPattern(want).MatchString(stripSpace(out)) {
			t.Errorf("%s:%d: the output differs from the page\ncommand: %s\npage:    %s\nprinted: %s",
				c.file, c.line, withPorts(c.src, ports), strings.TrimSpace(want), out)
		}
	}
	if runErr != nil || len(outputs) < len(cmds) {
		require.Less(t, len(outputs), len(cmds), "bash failed after the last command: %v", runErr)
		c := cmds[len(outputs)]
		require.FailNow(t, "an example failed", "%s:%d: %v\n%s\n--- its output ---\n%s\n--- stderr ---\n%s\n%s",
			c.file, c.line, runErr, withPorts(c.src, ports), strings.TrimSpace(rest), stderr.String(), logs())
	}

	// One SIGTERM stops mcpflow, then demo-mcp, then Temporal, cleanly.
	require.NoError(t, stop(), "run.sh exits 0 after SIGTERM\n%s", logs())
	out := stackOut.String()
	last := -1
	for _, s := range []string{"make dev: stopped mcpflow\n", "make dev: stopped demo-mcp\n", "make dev: stopped Temporal\n", "make dev: stopped.\n"} {
		i := strings.Index(out, s)
		require.Greater(t, i, last, "%q after the previous stop\n%s", s, logs())
		last = i
	}
	require.NotContains(t, out, "did not stop")
	for _, f := range []string{"", "temporal.log", "demo-mcp.log"} {
		text := out
		if f != "" {
			b, err := os.ReadFile(filepath.Join(devDir, f))
			require.NoError(t, err)
			text = string(b)
		}
		for _, line := range strings.Split(text, "\n") {
			where := f
			if where == "" {
				where = "run.sh's and mcpflow's output"
			}
			require.False(t, errorLine.MatchString(line), "an error line in %s: %s\n%s", where, line, logs())
		}
	}
	for k, p := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:"+p)
		require.NoError(t, err, "the %s port %s is free after the stop", k, p)
		l.Close()
	}
}
