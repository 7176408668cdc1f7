package workspace

import (
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// VirtualRoot is where the agent sees a thread's user-data directory: a file
// <UserData>/<relative> is shown as VirtualRoot + "/" + <relative>.
const VirtualRoot = "/mnt/user-data"

// TranslateResult rewrites, in place, the references in res that point to
// existing regular files inside UserData (symlinks followed; escapes, missing
// files and directories untouched) to /mnt/user-data/<relative> (spec §3.10):
//
//   - text content: free-text scan (TranslateText);
//   - ResourceLink: the URI, read as one whole reference;
//   - embedded text resource: the URI (whole reference) and the text (free
//     text); embedded blob resource: the URI.
//
// A rewritten URI is the bare virtual path (not file://, not
// percent-encoded); other content is left alone and files are never copied.
// serverCwd resolves relative references ("" means Dir); changed feeds the
// bare-filename rule (nil disables it).
func (w *Workspace) TranslateResult(res *mcp.CallToolResult, serverCwd string, changed []string) {
	if w == nil || res == nil || w.UserData == "" {
		return
	}
	tr := w.pathmapTranslator(serverCwd, changed)
	for i, c := range res.Content {
		switch v := c.(type) {
		case mcp.TextContent:
			v.Text = tr.text(v.Text)
			res.Content[i] = v
		case *mcp.TextContent:
			if v != nil {
				v.Text = tr.text(v.Text)
			}
		case mcp.ResourceLink:
			v.URI = tr.ref(v.URI)
			res.Content[i] = v
		case *mcp.ResourceLink:
			if v != nil {
				v.URI = tr.ref(v.URI)
			}
		case mcp.EmbeddedResource:
			v.Resource = tr.resource(v.Resource)
			res.Content[i] = v
		case *mcp.EmbeddedResource:
			if v != nil {
				v.Resource = tr.resource(v.Resource)
			}
		}
	}
}

// TranslateText applies the free-text rules of TranslateResult to one string
// (it is also used for error texts): every candidate path is rewritten when it
// resolves to a regular file inside UserData, then, when changed is not nil,
// every bare filename that exactly one changed file has as its basename.
//
// Candidates are absolute paths (optionally file:// URIs) or relative paths
// starting with "./", "../" or "word/", made of characters other than
// whitespace, quotes and < > | * ?. A candidate starts at the beginning of
// such a run of characters or right after one of ( [ { = , ; : inside it.
// Trailing . , ; : ! ? ) ] } > " ' ` are stripped before resolution and kept.
func (w *Workspace) TranslateText(s string, serverCwd string, changed []string) string {
	if w == nil || w.UserData == "" {
		return s
	}
	return w.pathmapTranslator(serverCwd, changed).text(s)
}

// pathmapT holds one translation's state: the resolved cwd, the bare-name
// table and a resolution cache.
type pathmapT struct {
	w     *Workspace
	cwd   string
	bare  map[string]string   // basename → virtual path (unique among changed files)
	first map[byte][]string   // first byte → basenames, longest first
	cache map[string]pathmapR // absolute path → resolution
}

type pathmapR struct {
	virtual string
	ok      bool
}

func (w *Workspace) pathmapTranslator(serverCwd string, changed []string) *pathmapT {
	t := &pathmapT{w: w, cache: map[string]pathmapR{}}
	switch {
	case serverCwd == "":
		t.cwd = w.Dir
	default:
		if abs, err := filepath.Abs(serverCwd); err == nil {
			t.cwd = abs
		}
	}
	if changed == nil {
		return t
	}
	count := map[string]int{}
	for _, p := range changed {
		count[filepath.Base(p)]++
	}
	t.bare = map[string]string{}
	t.first = map[byte][]string{}
	for _, p := range changed {
		name := filepath.Base(p)
		if count[name] != 1 || name == "" || name == "." || name == string(filepath.Separator) || !filepath.IsAbs(p) {
			continue
		}
		if v, ok := t.resolvePath(p); ok {
			t.bare[name] = v
			t.first[name[0]] = append(t.first[name[0]], name)
		}
	}
	for _, names := range t.first {
		sort.Slice(names, func(i, j int) bool {
			if len(names[i]) != len(names[j]) {
				return len(names[i]) > len(names[j])
			}
			return names[i] < names[j]
		})
	}
	return t
}

func (t *pathmapT) resource(rc mcp.ResourceContents) mcp.ResourceContents {
	switch r := rc.(type) {
	case mcp.TextResourceContents:
		r.URI = t.ref(r.URI)
		r.Text = t.text(r.Text)
		return r
	case *mcp.TextResourceContents:
		if r != nil {
			r.URI = t.ref(r.URI)
			r.Text = t.text(r.Text)
		}
	case mcp.BlobResourceContents:
		r.URI = t.ref(r.URI)
		return r
	case *mcp.BlobResourceContents:
		if r != nil {
			r.URI = t.ref(r.URI)
		}
	}
	return rc
}

// ref translates a whole-value reference (a URI field): a bare absolute
// path, a file URI (file:///p, file://localhost/p, file:/p) or a relative
// path resolved against the cwd. Anything else is returned unchanged.
func (t *pathmapT) ref(s string) string {
	if v, ok := t.resolveRef(s); ok {
		return v
	}
	return s
}

func (t *pathmapT) resolveRef(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	if scheme := pathmapScheme(s); scheme != "" {
		if !strings.EqualFold(scheme, "file") {
			return "", false // remote schemes, data:, mailto:, ...
		}
		p, ok := pathmapFileURIPath(s)
		if !ok {
			return "", false
		}
		return t.resolvePath(p)
	}
	return t.resolvePath(s)
}

// pathmapScheme returns the URI scheme s starts with ("" if none).
func pathmapScheme(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return s[:i]
		default:
			return ""
		}
	}
	return ""
}

// pathmapFileURIPath returns the percent-decoded absolute path of a local
// file URI. Malformed URIs, relative file: URIs (file:x, file:./x), remote
// hosts, user info, queries, fragments and empty paths are refused.
func pathmapFileURIPath(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", false
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return "", false
	}
	if !strings.HasPrefix(u.Path, "/") {
		return "", false
	}
	return u.Path, true
}

// resolvePath resolves a filesystem path (relative ones against the cwd) and
// returns its virtual path when it is an existing regular file inside
// UserData, symlinks followed.
func (t *pathmapT) resolvePath(p string) (string, bool) {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return "", false
	}
	if !filepath.IsAbs(p) {
		if t.cwd == "" {
			return "", false
		}
		p = filepath.Join(t.cwd, p)
	}
	p = filepath.Clean(p)
	if r, ok := t.cache[p]; ok {
		return r.virtual, r.ok
	}
	var r pathmapR
	if resolved, err := filepath.EvalSymlinks(p); err == nil {
		if fi, err := os.Stat(resolved); err == nil && fi.Mode().IsRegular() {
			if rel, err := filepath.Rel(t.w.UserData, resolved); err == nil && wsWithin(t.w.UserData, resolved) && rel != "." {
				r = pathmapR{virtual: VirtualRoot + "/" + filepath.ToSlash(rel), ok: true}
			}
		}
	}
	t.cache[p] = r
	return r.virtual, r.ok
}

func (t *pathmapT) text(s string) string {
	s = t.scanPaths(s)
	if len(t.bare) > 0 {
		s = t.scanBare(s)
	}
	return s
}

// pathmapExcluded reports the characters that never belong to a candidate:
// whitespace, quotes and < > | * ?.
func pathmapExcluded(r rune) bool {
	switch r {
	case '"', '\'', '`', '<', '>', '|', '*', '?', '\u2018', '\u2019', '\u201c', '\u201d':
		return true
	}
	return unicode.IsSpace(r)
}

// pathmapTrailing reports the punctuation stripped from the end of a
// candidate before resolution.
func pathmapTrailing(r rune) bool {
	switch r {
	case '.', ',', ';', ':', '!', '?', ')', ']', '}', '>', '"', '\'', '`', '\u2019', '\u201d':
		return true
	}
	return false
}

// pathmapOpener reports the characters after which a candidate may start in
// the middle of a run.
func pathmapOpener(c byte) bool {
	switch c {
	case '(', '[', '{', '=', ',', ';', ':':
		return true
	}
	return false
}

// pathmapWord reports a word character (\w): letters, numbers, underscore.
func pathmapWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// scanPaths rewrites the path candidates of s; each run of non-excluded
// characters holds at most one candidate, which extends to the end of the run.
func (t *pathmapT) scanPaths(s string) string {
	var b strings.Builder
	done := 0 // s[:done] has been written to b
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if pathmapExcluded(r) {
			i += n
			continue
		}
		start := i
		end := i
		for end < len(s) {
			r, n := utf8.DecodeRuneInString(s[end:])
			if pathmapExcluded(r) {
				break
			}
			end += n
		}
		if cs, ce, v, ok := t.runCandidate(s, start, end); ok {
			b.WriteString(s[done:cs])
			b.WriteString(v)
			done = ce
		}
		i = end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// runCandidate finds the candidate of the run s[start:end] and resolves it;
// it returns the candidate's span (trailing punctuation excluded) and its
// virtual path.
func (t *pathmapT) runCandidate(s string, start, end int) (int, int, string, bool) {
	for p := start; p < end; p++ {
		if p != start && !pathmapOpener(s[p-1]) {
			continue
		}
		rest := s[p:end]
		if scheme := pathmapScheme(rest); scheme != "" {
			after := rest[len(scheme)+1:]
			switch {
			case strings.EqualFold(scheme, "file"):
				ce := p + pathmapStripTrailing(rest)
				v, ok := t.resolveRef(s[p:ce])
				return p, ce, v, ok
			case strings.EqualFold(scheme, "data"), strings.HasPrefix(after, "//"):
				return 0, 0, "", false // a URL or data: URI owns the rest of the run
			}
			// "Saved:/x/y.txt": a candidate may start after the colon.
			p += len(scheme) // the loop's p++ steps over the colon
			continue
		}
		if !pathmapPathStart(rest) {
			continue
		}
		ce := p + pathmapStripTrailing(rest)
		if ce == p {
			return 0, 0, "", false
		}
		v, ok := t.resolvePath(s[p:ce])
		return p, ce, v, ok
	}
	return 0, 0, "", false
}

// pathmapPathStart reports whether s starts like a path candidate: "/",
// "./", "../" or "word/".
func pathmapPathStart(s string) bool {
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") {
		return true
	}
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !pathmapWord(r) {
			break
		}
		i += n
	}
	return i > 0 && i < len(s) && s[i] == '/'
}

// pathmapStripTrailing returns the length of s without its trailing
// punctuation.
func pathmapStripTrailing(s string) int {
	e := len(s)
	for e > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:e])
		if !pathmapTrailing(r) {
			break
		}
		e -= n
	}
	return e
}

// scanBare rewrites bare filenames of changed files (leftmost, longest
// first) where they stand alone: not preceded by a word character, '.', '/',
// '\' or '-', and not followed by a word character, '/', '\', '-' or '.'
// plus a word character.
func (t *pathmapT) scanBare(s string) string {
	var b strings.Builder
	done := 0
	for i := 0; i < len(s); i++ {
		names := t.first[s[i]]
		if len(names) == 0 || !pathmapBareBefore(s[:i]) {
			continue
		}
		for _, name := range names {
			if strings.HasPrefix(s[i:], name) && pathmapBareAfter(s[i+len(name):]) {
				b.WriteString(s[done:i])
				b.WriteString(t.bare[name])
				done = i + len(name)
				i = done - 1
				break
			}
		}
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

func pathmapBareBefore(prefix string) bool {
	if prefix == "" {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(prefix)
	return !(pathmapWord(r) || r == '.' || r == '/' || r == '\\' || r == '-')
}

func pathmapBareAfter(rest string) bool {
	if rest == "" {
		return true
	}
	r, n := utf8.DecodeRuneInString(rest)
	if pathmapWord(r) || r == '/' || r == '\\' || r == '-' {
		return false
	}
	if r == '.' {
		if next, _ := utf8.DecodeRuneInString(rest[n:]); n < len(rest) && pathmapWord(next) {
			return false
		}
	}
	return true
}
