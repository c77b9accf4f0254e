package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ReportFile writes the report as printed into dir, as
// <sections>-<commit>.md ("bench" for every section), headed by what it
// was measured on: the command, the commit (and whether the work tree had
// changes: a build that is not the commit), the date, the machine and its
// load. The documentation quotes these files (docs/bench/), never figures
// typed by hand. root is the repository the commit is read from; it
// returns the file's path.
func (r *Report) ReportFile(dir, root string, args []string) (string, error) {
	commit, dirty := gitCommit(root)
	name := "bench"
	if len(r.Config.Only) > 0 {
		name = strings.Join(r.Config.Only, "+")
	}
	if dirty {
		commit += "-dirty"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# electd-bench report: %s at %s\n\n", name, commit)
	fmt.Fprintf(&b, "Written by `electd-bench` (`make bench`, BENCHMARKS.md) as it printed it; not edited.\n\n")
	fmt.Fprintf(&b, "- command: `electd-bench %s`\n", strings.Join(args, " "))
	fmt.Fprintf(&b, "- commit: %s", commit)
	if dirty {
		fmt.Fprintf(&b, " (the work tree had uncommitted changes)")
	}
	fmt.Fprintf(&b, "\n- date: %s UTC, took %s\n", r.Started.UTC().Format("2006-01-02 15:04"), r.Took.Round(time.Second))
	m := r.Machine
	fmt.Fprintf(&b, "- machine: %d CPUs, %s, %.0f GiB, %s; load average (1, 5, 15 min) at the start %s\n\n", m.CPUs, m.Model, m.MemGB, m.Go, r.StartLoad)
	b.WriteString("```text\n")
	r.Write(&b)
	b.WriteString("```\n")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+"-"+commit+".md")
	return path, os.WriteFile(path, b.Bytes(), 0o644)
}

// gitCommit is root's HEAD, abbreviated, and whether tracked files other
// than Markdown differ from it; "unknown" outside a git work tree.
func gitCommit(root string) (string, bool) {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	// Documents do not change what was measured: a report written at a
	// commit whose docs are being edited is still that commit's.
	st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)*.md").Output()
	return strings.TrimSpace(string(out)), err != nil || len(bytes.TrimSpace(st)) > 0
}
