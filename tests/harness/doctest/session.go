package doctest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rewrite is what a session changes in the docs' commands so that they run
// beside everything else on the machine, and changes back in what they
// print: the ports the docs name (each group of ten, 4040-4049, moved
// together, so that a port derived as "the next one" stays the next one)
// and paths (/tmp/electd to a directory of the test's).
type Rewrite struct {
	ports map[int]int // the doc's port: the test's
	paths [][2]string // the doc's path, the test's
}

// portRE is a port in a command or an output: after ":" (host:port) or "="
// (clientPort=2181).
var portRE = regexp.MustCompile(`([:=])(\d{4,5})\b`)

// NewRewrite maps every port that steps name (commands and outputs) to a
// free one, and each path of paths (doc: test) as given.
func NewRewrite(steps []Step, paths map[string]string) (*Rewrite, error) {
	r := &Rewrite{ports: map[int]int{}}
	decades := map[int]bool{}
	for _, s := range steps {
		for _, text := range append([]string{s.Command}, s.Want...) {
			for _, m := range portRE.FindAllStringSubmatch(text, -1) {
				if p, _ := strconv.Atoi(m[2]); p >= 1024 && p <= 65535 {
					decades[p/10] = true
				}
			}
		}
	}
	for d := range decades {
		base, err := freeDecade(len(strconv.Itoa(d * 10)))
		if err != nil {
			return nil, err
		}
		for i := range 10 {
			r.ports[d*10+i] = base + i
		}
	}
	for doc, test := range paths {
		r.paths = append(r.paths, [2]string{doc, test})
	}
	// The longest first, so that a path is never replaced inside another.
	slices.SortFunc(r.paths, func(a, b [2]string) int { return len(b[0]) - len(a[0]) })
	return r, nil
}

// reserved are the decades handed out to the sessions of this test
// binary: sessions that run side by side must not pick the same free ports
// before either binds them.
var reserved = struct {
	sync.Mutex
	bases map[int]bool
}{bases: map[int]bool{}}

// freeDecade finds ten consecutive free loopback ports whose numbers have
// as many digits as the doc's (so that a table's columns keep their widths
// when its ports are rewritten back), below the kernel's ephemeral range
// (32768 and up) so that no connection's own port takes one, and that no
// other session of this binary has.
func freeDecade(digits int) (int, error) {
	lo, n := 20000, 1200 // 20000-31990
	if digits == 4 {
		lo, n = 1100, 888 // 1100-9970
	}
	reserved.Lock()
	defer reserved.Unlock()
	for range 200 {
		base := lo + rand.IntN(n)*10
		if reserved.bases[base] {
			continue
		}
		if allFree(base) {
			reserved.bases[base] = true
			return base, nil
		}
	}
	return 0, fmt.Errorf("doctest: no ten free consecutive %d-digit ports", digits)
}

func allFree(base int) bool {
	for i := range 10 {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// Command is command as the test runs it.
func (r *Rewrite) Command(command string) string {
	for _, p := range r.paths {
		command = strings.ReplaceAll(command, p[0], p[1])
	}
	return replacePorts(command, r.ports)
}

// Output is what a command printed, as the docs' commands would print it.
func (r *Rewrite) Output(out string) string {
	back := map[int]int{}
	for doc, test := range r.ports {
		back[test] = doc
	}
	for _, p := range r.paths {
		out = strings.ReplaceAll(out, p[1], p[0])
	}
	return replacePorts(out, back)
}

func replacePorts(s string, m map[int]int) string {
	return portRE.ReplaceAllStringFunc(s, func(match string) string {
		p, _ := strconv.Atoi(match[1:])
		if to, ok := m[p]; ok {
			return match[:1] + strconv.Itoa(to)
		}
		return match
	})
}

// Result is one step's outcome.
type Result struct {
	Step   Step
	Got    []string // what it printed, rewritten back (Rewrite.Output)
	Status int      // its exit status
	Err    error    // it did not end (ErrTimeout), or the shell died
	Diff   string   // why Got is not Step.Want, or ""
}

// OK reports a step that ended and printed what its block shows.
func (r Result) OK() bool { return r.Err == nil && r.Diff == "" }

// Run runs step in sh, rewritten by rw, and compares what it printed with
// what its block shows (a script: nothing).
func Run(sh *Shell, rw *Rewrite, step Step, timeout time.Duration) Result {
	out, status, err := sh.Run(rw.Command(step.Command), timeout)
	res := Result{Step: step, Got: Lines(rw.Output(out)), Status: status, Err: err}
	if err == nil {
		if ok, diff := Compare(step.Want, res.Got); !ok {
			res.Diff = diff
		}
	}
	return res
}

// Lines splits output into lines, without the last newline's empty line.
func Lines(out string) []string {
	out = strings.TrimSuffix(out, "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// Report says where a step is and what went wrong, for a test failure.
func (r Result) Report() string {
	what := r.Diff
	if r.Err != nil {
		what = fmt.Sprintf("%v; it printed:\n%s", r.Err, strings.Join(r.Got, "\n"))
	}
	return fmt.Sprintf("%s:%d: $ %s\n(exit status %d) %s", r.Step.Block.File, r.Step.Line, r.Step.Command, r.Status, what)
}
