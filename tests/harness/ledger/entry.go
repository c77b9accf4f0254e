package ledger

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/electd/electd/tests/harness/proxykit"
)

// Events of a ledger line.
const (
	// Arrive: the request's headers are in; nothing of its body was read.
	Arrive = "arrive"
	// Done: its body and trailers were read; the answer follows.
	Done = "done"
)

// Entry is one line of an application's ledger. Header names are lower case.
type Entry struct {
	Ev     string `json:"ev"`
	App    string `json:"app"`
	Lang   string `json:"lang"`
	ID     string `json:"id"`     // X-Request-Id, else Electd-Request-Id; "" when neither came
	Token  string `json:"token"`  // Electd-Fencing-Token as received
	Leader string `json:"leader"` // Electd-Leader-Id as received
	Method string `json:"method"`
	Path   string `json:"path"`
	Proto  string `json:"proto"` // HTTP/1.1, HTTP/2.0, ...
	At     int64  `json:"at"`    // Unix nanoseconds: one clock for every process of the machine

	Header   map[string][]string `json:"header,omitempty"`
	Trailer  map[string][]string `json:"trailer,omitempty"` // Done only
	BodySize int64               `json:"body_size"`         // Done only
}

// Time is when the line was written.
func (e Entry) Time() time.Time { return time.Unix(0, e.At) }

// Get is the first value of header name (any case) as the application got it.
func (e Entry) Get(name string) string {
	if v := e.Header[strings.ToLower(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (e Entry) String() string {
	return fmt.Sprintf("%s %s %s %s %s id=%q token=%s leader=%s at %s", e.Ev, e.App, e.Lang, e.Method, e.Path, e.ID, e.Token,
		e.Leader, e.Time().Format("15:04:05.000"))
}

// Read reads ledger files, in the order of their lines' times. A file that
// does not exist yet is empty; a line cut short (a process killed in the
// middle of its one write cannot cut it, but a full disk can) is an error.
func Read(paths ...string) ([]Entry, error) {
	var out []Entry
	for _, p := range paths {
		es, err := readFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	slices.SortStableFunc(out, func(a, b Entry) int { return cmp.Compare(a.At, b.At) })
	return out, nil
}

// readFile reads one ledger. A last line without its newline may be one
// write still being copied into the file by a live application (a reader
// can see a line that crosses a page boundary half written), so the file
// is read again for a second before that counts as a cut line.
func readFile(p string) ([]Entry, error) {
	deadline := time.Now().Add(time.Second)
	for {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		es, err := parse(p, b)
		if err == nil || len(b) == 0 || b[len(b)-1] == '\n' || time.Now().After(deadline) {
			return es, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func parse(p string, b []byte) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("ledger %s line %d: %w", p, n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ledger %s: %w", p, err)
	}
	return out, nil
}

// Arrivals are the entries that count a request as executed.
func Arrivals(entries []Entry) []Entry {
	var out []Entry
	for _, e := range entries {
		if e.Ev == Arrive {
			out = append(out, e)
		}
	}
	return out
}

// ByID groups the arrivals by request id ("" left out).
func ByID(entries []Entry) map[string][]Entry {
	out := map[string][]Entry{}
	for _, e := range Arrivals(entries) {
		if e.ID != "" {
			out[e.ID] = append(out[e.ID], e)
		}
	}
	return out
}

// Twice lists the requests that reached an application more than once: a
// request that is not safe to repeat must run at most once (issue 28, must
// have 2). only, when set, limits it to the ids it accepts (the POSTs).
func Twice(entries []Entry, only func(id string) bool) []string {
	var out []string
	for id, es := range ByID(entries) {
		if len(es) < 2 || (only != nil && !only(id)) {
			continue
		}
		var where []string
		for _, e := range es {
			where = append(where, fmt.Sprintf("%s(token %s) at %s", e.App, e.Token, e.Time().Format("15:04:05.000")))
		}
		out = append(out, fmt.Sprintf("%s %s ran %d times: %s", es[0].Method, id, len(es), strings.Join(where, ", ")))
	}
	slices.Sort(out)
	return out
}

// Unfenced lists the arrivals a fenced storage would refuse, checked in the
// order they reached the applications as tests/harness/proxykit's Fence checks them:
// a token lower than one seen before, a token seen at another application,
// a leader id that is not the application's own. A request that came with no
// token at all (the proxy did not hand it over) is one too.
func Unfenced(entries []Entry) []string {
	stale, other := UnfencedStale(entries)
	return append(stale, other...)
}

// UnfencedStale is Unfenced, the arrivals with a token lower than one seen
// before (a stale leader's, which a fenced storage refuses: what a leader
// whose electd was stopped between its lease check and its write delivers
// once it goes on) apart from the others.
func UnfencedStale(entries []Entry) (stale, other []string) {
	f := proxykit.NewFence()
	for _, e := range Arrivals(entries) {
		f.Check(e.App, e.Leader, e.Token)
	}
	stale = f.Stale()
	return stale, f.Violations()[len(stale):]
}
