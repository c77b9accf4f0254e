package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Build is the commit a run measured and whether the work tree differed
// from it; read before the run starts (GitBuild).
type Build struct {
	Commit string
	Clean  bool
}

// GitBuild is root's HEAD, abbreviated, and whether tracked files other
// than Markdown match it; "unknown" (not clean) outside a git work tree.
func GitBuild(root string) Build {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return Build{Commit: "unknown"}
	}
	// Documents do not change what was measured: a report written at a
	// commit whose docs are being edited is still that commit's.
	st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)*.md").Output()
	return Build{Commit: strings.TrimSpace(string(out)), Clean: err == nil && len(bytes.TrimSpace(st)) == 0}
}

// ReportKind names a run's report: "bench" for every section, else the
// sections joined by "+".
func (r *Report) ReportKind() string {
	if len(r.Config.Only) > 0 {
		return strings.Join(r.Config.Only, "+")
	}
	return "bench"
}

// ReportFile writes the report as printed into dir, as <kind>-<commit>.md,
// headed by what it was measured on: the command, the commit and whether
// the tree was clean, the machine, its load at the start and the end, and
// the date. The documentation quotes these files (docs/bench/), never
// figures typed by hand. Only the newest report of a kind is kept: the
// older ones of the same kind in dir are removed (git keeps them).
func (r *Report) ReportFile(dir string, b Build, args []string) (string, error) {
	kind := r.ReportKind()
	name := b.Commit
	if !b.Clean {
		name += "-dirty"
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# electd-bench report: %s at %s\n\n", kind, name)
	fmt.Fprintf(&buf, "Written by `make bench` (tests/bench/cmd) as it printed it; not edited.\n\n")
	fmt.Fprintf(&buf, "- command: `go run ./tests/bench/cmd %s` (what `make bench` runs)\n", strings.Join(args, " "))
	clean := "yes"
	if !b.Clean {
		clean = "no (tracked files other than Markdown differed from the commit)"
	}
	fmt.Fprintf(&buf, "- commit: %s; clean tree: %s\n", b.Commit, clean)
	m := r.Machine
	fmt.Fprintf(&buf, "- machine: %d CPUs, %s, %.0f GiB, %s\n", m.CPUs, m.Model, m.MemGB, m.Go)
	fmt.Fprintf(&buf, "- load average (1, 5, 15 min): at the start %s, at the end %s\n", r.StartLoad, r.EndLoad)
	fmt.Fprintf(&buf, "- date: %s UTC, took %s\n\n", r.Started.UTC().Format("2006-01-02 15:04"), r.Took.Round(time.Second))
	buf.WriteString("```text\n")
	r.Write(&buf)
	buf.WriteString("```\n")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, kind+"-"+name+".md")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return path, removeOlder(dir, kind, path)
}

// removeOlder removes dir's reports of kind other than keep.
func removeOlder(dir, kind, keep string) error {
	same := regexp.MustCompile(`^` + regexp.QuoteMeta(kind) + `-[0-9a-f]+(-dirty)?\.md$`)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if same.MatchString(e.Name()) && p != keep {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}
