package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// a design page named in text: docs/design/<page>.md
	designPage = regexp.MustCompile(`docs/design/([A-Za-z0-9-]+\.md)`)
	// the section name quoted right after it: , "Name" or 's ["Name"] or ("Name")
	quotedSection = regexp.MustCompile(`^(?:'s|,)?\s+\(?\[?"([^"]+)"`)
	// a comment's continuation: a line break and the next line's // or #
	continuation = regexp.MustCompile(`\n[ \t]*(?://|#)?[ \t]*`)
)

// citation is a design section cited by a file of the repository.
type citation struct {
	line          int
	page, section string // section is "" when the page alone is cited
}

// citations finds the design pages and section names text cites, reading a
// comment wrapped over several lines as one line.
func citations(text string) []citation {
	var out []citation
	for _, m := range designPage.FindAllStringSubmatchIndex(text, -1) {
		rest := text[m[1]:min(len(text), m[1]+200)]
		rest = continuation.ReplaceAllString(rest, " ")
		c := citation{line: strings.Count(text[:m[0]], "\n") + 1, page: text[m[2]:m[3]]}
		if q := quotedSection.FindStringSubmatch(rest); q != nil {
			c.section = q[1]
		}
		out = append(out, c)
	}
	return out
}

func TestCitations(t *testing.T) {
	text := "x // election (docs/design/election-and-lease.md, \"A queue\n\t// participant's life\", step 3)\n" +
		"docs/design/proxy.md's [\"Hold\"](design/proxy.md#hold) and docs/design/README.md.\n" +
		`[]string{"docs/design/README.md", "docs/http-api.md"}`
	got := citations(text)
	want := []citation{
		{1, "election-and-lease.md", "A queue participant's life"},
		{3, "proxy.md", "Hold"},
		{3, "README.md", ""},
		{4, "README.md", ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("citations = %+v, want %+v", got, want)
	}
}

// headings lists a Markdown file's heading texts, outside fenced code.
func headings(text string) []string {
	var out []string
	for _, line := range unfenced(text) {
		if m := heading.FindStringSubmatch(line); m != nil {
			out = append(out, m[2])
		}
	}
	return out
}

// Every design page and section cited anywhere in the repository (code
// comments, tests, manifests, docs) exists: the page under docs/design/, and
// a heading of it that starts with the quoted name (docs/development.md,
// "Documentation").
func TestDesignCitationsResolve(t *testing.T) {
	root := repoRoot(t)
	pages := map[string][]string{}
	entries, err := os.ReadDir(filepath.Join(root, "docs", "design"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(root, "docs", "design", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		pages[e.Name()] = headings(string(b))
	}
	exts := []string{".go", ".md", ".yaml", ".yml", ".js", ".tmpl", ".sh", ".py", ".tpl", ".txt"}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.Contains(exts, filepath.Ext(path)) && d.Name() != "Makefile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, c := range citations(string(b)) {
			checked++
			hs, ok := pages[c.page]
			if !ok {
				t.Errorf("%s:%d: docs/design/%s does not exist", rel, c.line, c.page)
				continue
			}
			if c.section != "" && !slices.ContainsFunc(hs, func(h string) bool { return strings.HasPrefix(h, c.section) }) {
				t.Errorf("%s:%d: docs/design/%s has no section %q", rel, c.line, c.page, c.section)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no citation of docs/design/ found: the walk is broken")
	}
	t.Logf("%d citations of %d design pages", checked, len(pages))
}
