package docs

import (
	"bufio"
	"fmt"
	"io/fs"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

var (
	// inline links and images: [text](target) or [text](target "title")
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// reference definitions: [label]: target
	refDef = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// ATX headings: ## text ##
	heading = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$`)
	// explicit anchors: <a id="x"> or <a name="x">
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	codeSpan   = regexp.MustCompile("(`+)(.+?)(`+)")
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// link is one link found in a Markdown file.
type link struct {
	line   int
	target string
}

// page is what a Markdown file offers and asks for.
type page struct {
	anchors map[string]bool
	links   []link
}

// parse reads a Markdown file's headings (as GitHub's anchors) and links,
// outside fenced code blocks and code spans.
func parse(text string) page {
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	for n, line := range unfenced(text) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			p.anchors[m[1]] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			if k := seen[s]; k > 0 {
				p.anchors[fmt.Sprintf("%s-%d", s, k)] = true
			} else {
				p.anchors[s] = true
			}
			seen[s]++
		}
		plain := codeSpan.ReplaceAllString(line, "code")
		for _, m := range inlineLink.FindAllStringSubmatch(plain, -1) {
			p.links = append(p.links, link{n, m[1]})
		}
		if m := refDef.FindStringSubmatch(plain); m != nil {
			p.links = append(p.links, link{n, m[1]})
		}
	}
	return p
}

// unfenced yields a Markdown text's lines outside fenced code blocks, with
// their numbers from 1; the fences' own lines are left out too.
func unfenced(text string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		fence := ""
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			trimmed := strings.TrimLeft(sc.Text(), " ")
			if fence != "" {
				if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" ") == "" {
					fence = ""
				}
				continue
			}
			if f := fenceOf(trimmed); f != "" {
				fence = f
				continue
			}
			if !yield(n, sc.Text()) {
				return
			}
		}
	}
}

// fenceOf is the fence a line opens (``` or ~~~, at least three), or "".
func fenceOf(line string) string {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// slug is the id GitHub gives a heading: its text as rendered (code spans,
// links and HTML reduced to their text), lower case, every character that
// is not a letter, a mark, a digit, "_", "-" or a space dropped, and each
// space turned into "-".
func slug(h string) string {
	h = codeSpan.ReplaceAllString(h, "$2")
	h = mdLink.ReplaceAllString(h, "$1")
	h = htmlTag.ReplaceAllString(h, "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Start here", "start-here"},
		{"`GET /leader`: who leads", "get-leader-who-leads"},
		{"CLI: `electd status`, `electd release`", "cli-electd-status-electd-release"},
		{"Exec mode: `electd run -- CMD`", "exec-mode-electd-run----cmd"},
		{"`election.on_suspend`: `hold` or `step-down`", "electionon_suspend-hold-or-step-down"},
		{"Where this departs from the starting contract, and why", "where-this-departs-from-the-starting-contract-and-why"},
		{"The label flavour: `kubectl apply -k deploy/k8s-label`", "the-label-flavour-kubectl-apply--k-deployk8s-label"},
		{"See [the design](docs/design/README.md) *now*", "see-the-design-now"},
		{"Größe über 10 × 2", "größe-über-10--2"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	p := parse("# A\n\n## A\n\nsee [b](b.md#x) and `[not](a link)`\n\n```sh\n# not a heading\n[no](link.md)\n```\n\n[ref]: c/d.md\n![pic](e.png \"t\")\n")
	for _, a := range []string{"a", "a-1"} {
		if !p.anchors[a] {
			t.Errorf("no anchor %q in %v", a, p.anchors)
		}
	}
	if p.anchors["not-a-heading"] {
		t.Error("a line in a code block was read as a heading")
	}
	var got []string
	for _, l := range p.links {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.target))
	}
	if want := []string{"5:b.md#x", "12:c/d.md", "13:e.png"}; !slices.Equal(got, want) {
		t.Errorf("links %v, want %v", got, want)
	}
}

// repoRoot is the module's root: the nearest directory above with a go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// markdownFiles lists the repository's *.md files, relative to root,
// outside .git and testdata.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Every relative link in the repository's Markdown resolves: the file or
// directory exists inside the repository, and an anchor names a heading of
// the Markdown file it points into.
func TestLinksResolve(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	for _, want := range []string{"README.md", "docs/design/README.md", "docs/http-api.md", "docs/configuration.md"} {
		if !slices.Contains(files, want) {
			t.Errorf("%s is missing", want)
		}
	}
	pages := map[string]page{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		pages[f] = parse(string(b))
	}
	checked := 0
	for _, f := range files {
		for _, l := range pages[f].links {
			if err := resolve(root, f, l.target, pages); err != nil {
				t.Errorf("%s:%d: %s: %v", f, l.line, l.target, err)
			}
			checked++
		}
	}
	t.Logf("%d links in %d files", checked, len(files))
}

// resolve checks one link target of the Markdown file from (relative to
// root); external links pass unchecked.
func resolve(root, from, target string, pages map[string]page) error {
	if target == "" {
		return fmt.Errorf("empty link")
	}
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return nil
	}
	rawPath, fragment, _ := strings.Cut(target, "#")
	p, err := url.PathUnescape(rawPath)
	if err != nil {
		return err
	}
	rel := from
	if p != "" {
		if strings.HasPrefix(p, "/") {
			rel = strings.TrimPrefix(p, "/")
		} else {
			rel = filepath.ToSlash(filepath.Join(filepath.Dir(from), p))
		}
		rel = strings.TrimSuffix(rel, "/")
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("points outside the repository")
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return fmt.Errorf("no such file or directory %s", rel)
		}
	}
	if fragment == "" || !strings.HasSuffix(rel, ".md") {
		return nil
	}
	if !pages[rel].anchors[fragment] {
		return fmt.Errorf("%s has no heading with the anchor #%s", rel, fragment)
	}
	return nil
}
