package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/mcpclient/workspace"
)

// pmFixture is a workspace with files, a directory, symlinks, another
// thread's file and a file outside the root. Placeholders in case strings:
// {U} user-data, {W} workspace, {O} a directory outside the root, {T} the
// other thread's workspace, {V} the virtual root.
type pmFixture struct {
	ws      *workspace.Workspace
	outside string
	other   string
}

func pmSetup(t *testing.T) *pmFixture {
	t.Helper()
	root := t.TempDir()
	ws, err := workspace.Prepare(root, "alice", "t1")
	require.NoError(t, err)
	other, err := workspace.Prepare(root, "alice", "t2")
	require.NoError(t, err)
	outside, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	f := &pmFixture{ws: ws, outside: outside, other: other.Dir}
	for _, p := range []string{
		"{W}/a.txt", "{W}/out/page.png", "{W}/reports/r.md", "{W}/my file.txt",
		"{W}/sub/b.txt", "{W}/page.yml", "{W}/x/dup.yml", "{W}/y/dup.yml",
		"{U}/outputs/result.csv", "{U}/uploads/in.pdf", "{O}/secret.txt", "{T}/a.txt",
	} {
		wsWrite(t, f.expand(p), "data")
	}
	require.NoError(t, os.Symlink(f.expand("{O}/secret.txt"), f.expand("{W}/escape.txt")))
	require.NoError(t, os.Symlink(f.expand("{W}/a.txt"), f.expand("{O}/inward.txt")))
	require.NoError(t, os.Symlink(f.expand("{W}/out"), f.expand("{W}/outlink")))
	return f
}

func (f *pmFixture) expand(s string) string {
	return strings.NewReplacer(
		"{U}", f.ws.UserData, "{W}", f.ws.Dir, "{O}", f.outside, "{T}", f.other, "{V}", workspace.VirtualRoot,
	).Replace(s)
}

func (f *pmFixture) expandAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = f.expand(s)
	}
	return out
}

func TestTranslateText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		cwd     string   // "" = the workspace
		changed []string // nil disables the bare-filename rule
		want    string
	}{
		// Reference forms.
		{name: "absolute path", in: "Saved screenshot to {W}/out/page.png", want: "Saved screenshot to {V}/workspace/out/page.png"},
		{name: "path alone", in: "{W}/a.txt", want: "{V}/workspace/a.txt"},
		{name: "file URI", in: "see file://{W}/a.txt now", want: "see {V}/workspace/a.txt now"},
		{name: "file URI localhost", in: "file://localhost{W}/a.txt", want: "{V}/workspace/a.txt"},
		{name: "file URI upper-case scheme and host", in: "FILE://LOCALHOST{W}/a.txt", want: "{V}/workspace/a.txt"},
		{name: "file URI single slash", in: "file:{W}/a.txt", want: "{V}/workspace/a.txt"},
		{name: "file URI percent-decoded", in: "file://{W}/my%20file.txt", want: "{V}/workspace/my file.txt"},
		{name: "dot-slash against cwd", in: "wrote ./result.csv", cwd: "{U}/outputs", want: "wrote {V}/outputs/result.csv"},
		{name: "dot-slash default cwd", in: "wrote ./a.txt", want: "wrote {V}/workspace/a.txt"},
		{name: "dot-dot-slash", in: "wrote ../a.txt", cwd: "{W}/sub", want: "wrote {V}/workspace/a.txt"},
		{name: "dot-dot to uploads", in: "read ../uploads/in.pdf", want: "read {V}/uploads/in.pdf"},
		{name: "word-slash", in: "wrote reports/r.md", want: "wrote {V}/workspace/reports/r.md"},
		{name: "word-slash against cwd", in: "wrote sub/b.txt", cwd: "{W}", want: "wrote {V}/workspace/sub/b.txt"},
		{name: "absolute path with dot-dot inside", in: "{W}/sub/../a.txt", want: "{V}/workspace/a.txt"},
		{name: "several paths", in: "{W}/a.txt and ./sub/b.txt, {U}/outputs/result.csv", want: "{V}/workspace/a.txt and {V}/workspace/sub/b.txt, {V}/outputs/result.csv"},

		// Punctuation and quoting.
		{name: "final period", in: "Saved to {W}/a.txt.", want: "Saved to {V}/workspace/a.txt."},
		{name: "trailing punctuation run", in: "({W}/a.txt)!?", want: "({V}/workspace/a.txt)!?"},
		{name: "each trailing char", in: "{W}/a.txt, {W}/a.txt; {W}/a.txt: {W}/a.txt] {W}/a.txt}", want: "{V}/workspace/a.txt, {V}/workspace/a.txt; {V}/workspace/a.txt: {V}/workspace/a.txt] {V}/workspace/a.txt}"},
		{name: "double quotes", in: `{"path": "{W}/a.txt"}`, want: `{"path": "{V}/workspace/a.txt"}`},
		{name: "single quotes", in: `open('{W}/a.txt')`, want: `open('{V}/workspace/a.txt')`},
		{name: "backticks", in: "`{W}/a.txt`", want: "`{V}/workspace/a.txt`"},
		{name: "angle brackets", in: "<{W}/a.txt>", want: "<{V}/workspace/a.txt>"},
		{name: "markdown link", in: "[page](file://{W}/out/page.png).", want: "[page]({V}/workspace/out/page.png)."},
		{name: "after equals", in: "path={W}/a.txt", want: "path={V}/workspace/a.txt"},
		{name: "after colon", in: "Saved:{W}/a.txt", want: "Saved:{V}/workspace/a.txt"},
		{name: "space in name splits the token", in: "{W}/my file.txt", want: "{W}/my file.txt"},
		{name: "pipe splits", in: "{W}/a.txt|x", want: "{V}/workspace/a.txt|x"},

		// Left untouched.
		{name: "symlink inside pointing outside", in: "{W}/escape.txt", want: "{W}/escape.txt"},
		{name: "symlink outside pointing inside", in: "{O}/inward.txt", want: "{V}/workspace/a.txt"},
		{name: "file through a symlinked directory", in: "{W}/outlink/page.png", want: "{V}/workspace/out/page.png"},
		{name: "directory", in: "{W}/out and {W}/out/ and ./out", want: "{W}/out and {W}/out/ and ./out"},
		{name: "user-data itself", in: "{U}", want: "{U}"},
		{name: "missing file", in: "{W}/nope.txt ./nope.txt", want: "{W}/nope.txt ./nope.txt"},
		{name: "outside file", in: "{O}/secret.txt", want: "{O}/secret.txt"},
		{name: "other thread", in: "{T}/a.txt", want: "{T}/a.txt"},
		{name: "dot-dot escape to other thread", in: "../../../t2/user-data/workspace/a.txt", want: "../../../t2/user-data/workspace/a.txt"},
		{name: "http URL", in: "http://localhost{W}/a.txt", want: "http://localhost{W}/a.txt"},
		{name: "https URL", in: "see https://example.com/a.txt.", want: "see https://example.com/a.txt."},
		{name: "data URI", in: "data:text/plain,{W}/a.txt", want: "data:text/plain,{W}/a.txt"},
		{name: "relative file URI", in: "file:a.txt file:./a.txt file:sub/b.txt", want: "file:a.txt file:./a.txt file:sub/b.txt"},
		{name: "file URI remote host", in: "file://example.com{W}/a.txt", want: "file://example.com{W}/a.txt"},
		{name: "malformed file URI", in: "file://{W}/a%zz.txt", want: "file://{W}/a%zz.txt"},
		{name: "file URI with fragment", in: "file://{W}/a.txt#top", want: "file://{W}/a.txt#top"},
		{name: "empty file URI", in: "file:// file:", want: "file:// file:"},
		{name: "bare word without slash", in: "a.txt", want: "a.txt"},
		{name: "prefix is not a start", in: "x{W}/a.txt", want: "x{W}/a.txt"},
		{name: "virtual path stays", in: "{V}/workspace/a.txt", want: "{V}/workspace/a.txt"},
		{name: "empty", in: "", want: ""},

		// Bare filenames.
		{name: "bare filename", in: "Saved as page.yml", changed: []string{"{W}/page.yml"}, want: "Saved as {V}/workspace/page.yml"},
		{name: "bare filename final period", in: "Saved as page.yml.", changed: []string{"{W}/page.yml"}, want: "Saved as {V}/workspace/page.yml."},
		{name: "bare filename start and parens", in: "page.yml (page.yml), 'page.yml'", changed: []string{"{W}/page.yml"}, want: "{V}/workspace/page.yml ({V}/workspace/page.yml), '{V}/workspace/page.yml'"},
		{name: "bare filename in output dir", in: "wrote result.csv", changed: []string{"{U}/outputs/result.csv"}, want: "wrote {V}/outputs/result.csv"},
		{name: "bare .bak suffix", in: "page.yml.bak", changed: []string{"{W}/page.yml"}, want: "page.yml.bak"},
		{name: "bare followed by slash", in: "page.yml/inner.txt", changed: []string{"{W}/page.yml"}, want: "page.yml/inner.txt"},
		{name: "bare followed by backslash", in: `page.yml\inner.txt`, changed: []string{"{W}/page.yml"}, want: `page.yml\inner.txt`},
		{name: "bare followed by dash or word", in: "page.yml-old page.ymlx", changed: []string{"{W}/page.yml"}, want: "page.yml-old page.ymlx"},
		{name: "bare preceded by dash", in: "x-page.yml", changed: []string{"{W}/page.yml"}, want: "x-page.yml"},
		{name: "bare preceded by word, dot or separator", in: "apage.yml my.page.yml dir/page.yml dir\\page.yml", changed: []string{"{W}/page.yml"}, want: "apage.yml my.page.yml dir/page.yml dir\\page.yml"},
		{name: "bare case-sensitive", in: "Page.yml PAGE.YML", changed: []string{"{W}/page.yml"}, want: "Page.yml PAGE.YML"},
		{name: "bare ambiguous basename", in: "Saved dup.yml", changed: []string{"{W}/x/dup.yml", "{W}/y/dup.yml"}, want: "Saved dup.yml"},
		{name: "bare rule disabled", in: "Saved as page.yml", want: "Saved as page.yml"},
		{name: "bare rule needs a changed file", in: "Saved as page.yml", changed: []string{"{W}/a.txt"}, want: "Saved as page.yml"},
		{name: "bare changed file outside", in: "Saved secret.txt", changed: []string{"{O}/secret.txt"}, want: "Saved secret.txt"},
		{name: "bare and full path together", in: "{W}/page.yml is page.yml", changed: []string{"{W}/page.yml"}, want: "{V}/workspace/page.yml is {V}/workspace/page.yml"},
		{name: "bare with spaces in name", in: "Saved my file.txt.", changed: []string{"{W}/my file.txt"}, want: "Saved {V}/workspace/my file.txt."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := pmSetup(t)
			got := f.ws.TranslateText(f.expand(tt.in), f.expand(tt.cwd), f.expandAll(tt.changed))
			require.Equal(t, f.expand(tt.want), got)
		})
	}
}

func TestTranslateTextWithChangedFromSnapshot(t *testing.T) {
	t.Parallel()
	ws := wsPrepare(t)
	start := time.Now()
	wsWrite(t, filepath.Join(ws.Dir, "page.yml"), "p")
	wsWrite(t, filepath.Join(ws.Dir, ".mcp", "page2.yml"), "p")
	changed := ws.ChangedSince(start)
	require.Equal(t, "Saved as /mnt/user-data/workspace/page.yml. Also page2.yml.",
		ws.TranslateText("Saved as page.yml. Also page2.yml.", "", changed))
}

func TestTranslateResult(t *testing.T) {
	t.Parallel()
	f := pmSetup(t)
	x := f.expand
	size := int64(4)
	textPtr := &mcp.TextContent{Type: mcp.ContentTypeText, Text: x("ptr ./a.txt")}
	linkPtr := &mcp.ResourceLink{Type: mcp.ContentTypeLink, URI: x("{W}/a.txt"), Name: "a"}
	blobPtr := &mcp.BlobResourceContents{URI: x("file://{W}/out/page.png"), Blob: "AA=="}
	structured := map[string]any{"path": x("{W}/a.txt")}
	res := &mcp.CallToolResult{
		Content: []mcp.Content{
			mcp.NewTextContent(x("Saved as page.yml and {W}/out/page.png.")),
			mcp.NewImageContent(x("{W}/a.txt"), "image/png"),
			mcp.NewAudioContent(x("{W}/a.txt"), "audio/wav"),
			mcp.ResourceLink{Type: mcp.ContentTypeLink, URI: x("file://{W}/out/page.png"), Name: x("{W}/out/page.png"), MIMEType: "image/png", Size: &size},
			mcp.NewResourceLink("reports/r.md", "r", "", "text/markdown"),
			mcp.NewResourceLink("https://example.com/a.txt", "remote", "", "text/plain"),
			mcp.NewResourceLink(x("file:a.txt"), "relative file URI", "", "text/plain"),
			mcp.NewResourceLink(x("{O}/secret.txt"), "outside", "", "text/plain"),
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: x("file://localhost{W}/a.txt"), MIMEType: "text/plain", Text: x("see {W}/sub/b.txt and page.yml")}),
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "data:text/plain,hi", Text: x("{W}/escape.txt")}),
			mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: x("{U}/outputs/result.csv"), Blob: "AA=="}),
			mcp.NewEmbeddedResource(blobPtr),
			textPtr,
			linkPtr,
		},
		StructuredContent: structured,
	}

	f.ws.TranslateResult(res, f.ws.Dir, []string{x("{W}/page.yml")})

	want := []mcp.Content{
		mcp.NewTextContent("Saved as /mnt/user-data/workspace/page.yml and /mnt/user-data/workspace/out/page.png."),
		mcp.NewImageContent(x("{W}/a.txt"), "image/png"),
		mcp.NewAudioContent(x("{W}/a.txt"), "audio/wav"),
		mcp.ResourceLink{Type: mcp.ContentTypeLink, URI: "/mnt/user-data/workspace/out/page.png", Name: x("{W}/out/page.png"), MIMEType: "image/png", Size: &size},
		mcp.NewResourceLink("/mnt/user-data/workspace/reports/r.md", "r", "", "text/markdown"),
		mcp.NewResourceLink("https://example.com/a.txt", "remote", "", "text/plain"),
		mcp.NewResourceLink("file:a.txt", "relative file URI", "", "text/plain"),
		mcp.NewResourceLink(x("{O}/secret.txt"), "outside", "", "text/plain"),
		mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "/mnt/user-data/workspace/a.txt", MIMEType: "text/plain", Text: "see /mnt/user-data/workspace/sub/b.txt and /mnt/user-data/workspace/page.yml"}),
		mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "data:text/plain,hi", Text: x("{W}/escape.txt")}),
		mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: "/mnt/user-data/outputs/result.csv", Blob: "AA=="}),
		mcp.NewEmbeddedResource(blobPtr),
		textPtr,
		linkPtr,
	}
	require.Equal(t, want, res.Content)
	require.Equal(t, "ptr /mnt/user-data/workspace/a.txt", textPtr.Text)
	require.Equal(t, "/mnt/user-data/workspace/a.txt", linkPtr.URI)
	require.Equal(t, "/mnt/user-data/workspace/out/page.png", blobPtr.URI)
	require.Equal(t, map[string]any{"path": x("{W}/a.txt")}, res.StructuredContent, "structured content is left alone")

	// Files are never copied: the workspace holds the same files as before.
	_, err := os.Stat(filepath.Join(f.ws.UserData, "mnt"))
	require.True(t, os.IsNotExist(err))

	f.ws.TranslateResult(nil, "", nil) // no panic
}

func TestTranslateResourceLinkURIForms(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, uri, cwd, want string }{
		{"absolute path", "{W}/a.txt", "", "{V}/workspace/a.txt"},
		{"file URI", "file://{W}/a.txt", "", "{V}/workspace/a.txt"},
		{"file URI localhost", "file://localhost{W}/a.txt", "", "{V}/workspace/a.txt"},
		{"file URI percent-encoded", "file://{W}/my%20file.txt", "", "{V}/workspace/my file.txt"},
		{"whole value keeps spaces", "{W}/my file.txt", "", "{V}/workspace/my file.txt"},
		{"relative name", "result.csv", "{U}/outputs", "{V}/outputs/result.csv"},
		{"relative dot-dot", "../uploads/in.pdf", "", "{V}/uploads/in.pdf"},
		{"relative file URI", "file:a.txt", "", "file:a.txt"},
		{"remote host", "file://host{W}/a.txt", "", "file://host{W}/a.txt"},
		{"http", "http://localhost{W}/a.txt", "", "http://localhost{W}/a.txt"},
		{"data", "data:text/plain;base64,AAAA", "", "data:text/plain;base64,AAAA"},
		{"malformed", "file://{W}/%zz", "", "file://{W}/%zz"},
		{"empty", "", "", ""},
		{"directory", "file://{W}/out", "", "file://{W}/out"},
		{"missing", "{W}/missing.txt", "", "{W}/missing.txt"},
		{"symlink escape", "file://{W}/escape.txt", "", "file://{W}/escape.txt"},
		{"trailing period is part of a whole value", "{W}/a.txt.", "", "{W}/a.txt."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := pmSetup(t)
			res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewResourceLink(f.expand(tt.uri), "n", "", "")}}
			f.ws.TranslateResult(res, f.expand(tt.cwd), nil)
			require.Equal(t, f.expand(tt.want), res.Content[0].(mcp.ResourceLink).URI)
		})
	}
}
