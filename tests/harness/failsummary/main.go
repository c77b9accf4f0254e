// Command failsummary runs a `go test -json` command, prints its output as
// `go test -v` would, and ends with the output of each test that failed on
// its own account, once more. A long run's failure then stays readable
// where only the end of the log is kept: CI keeps the tail, and after a
// failure tests/harness/nodetest prints thousands of lines of component logs,
// which pushed a failed subtest's message out of view.
//
//	go run ./tests/harness/failsummary -- go test -json ./tests/e2e
//
// It exits with the command's status.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

func main() {
	lines := flag.Int("lines", 60, "print at most this many of each failed test's last lines again")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: failsummary [-lines N] -- go test -json ...")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failsummary:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "failsummary:", err)
		os.Exit(2)
	}
	s := newSummary()
	if err := s.read(out, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "failsummary: reading the command's output:", err)
	}
	err = cmd.Wait()
	s.print(os.Stdout, *lines)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "failsummary:", err)
		os.Exit(2)
	}
}

// event is the part of test2json's record (go doc cmd/test2json) used here.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type key struct{ pkg, test string }

type summary struct {
	own    map[key][]string // each test's own output lines, in order
	failed []key            // in the order they failed
}

func newSummary() *summary { return &summary{own: map[key][]string{}} }

// read copies the output of every event to w as it arrives (lines that are
// not JSON, such as a build failure's, as they are) and remembers each
// test's own lines and which tests failed.
func (s *summary) read(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			io.WriteString(w, e.Output)
			s.own[k] = append(s.own[k], strings.TrimSuffix(e.Output, "\n"))
		case "fail":
			s.failed = append(s.failed, k)
		}
	}
	return sc.Err()
}

// print writes the last n lines of each failure that is not only its
// subtests' (a parent's own output after its subtests is a teardown's, and
// a failed package's is shown only when none of its tests failed).
func (s *summary) print(w io.Writer, n int) {
	var own []key
	for _, k := range s.failed {
		if !s.childFailed(k) {
			own = append(own, k)
		}
	}
	if len(own) == 0 {
		return
	}
	fmt.Fprintf(w, "\n=== failsummary: %d failed on their own account; each one's last %d lines again\n", len(own), n)
	for _, k := range own {
		name := k.pkg
		if k.test != "" {
			name += " " + k.test
		}
		lines := s.own[k]
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(w, "--- %s\n%s\n", name, strings.Join(lines, "\n"))
	}
}

// childFailed: a test of k failed below it (for a package, any of its tests).
func (s *summary) childFailed(k key) bool {
	for _, f := range s.failed {
		if f.pkg != k.pkg || f == k {
			continue
		}
		if k.test == "" || strings.HasPrefix(f.test, k.test+"/") {
			return true
		}
	}
	return false
}
