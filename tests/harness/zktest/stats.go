package zktest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// What the servers say about their clients, through four-letter words: the
// load they see (mntr), each connection (cons) and each session's watches
// (wchc). Tests read them from outside, without a ZooKeeper session of
// their own that a fault could disturb.

// MntrValue reads one integer counter from a server's mntr answer.
func (m *Member) MntrValue(key string) (int64, error) {
	out, err := m.FourLetter("mntr")
	if err != nil {
		return 0, fmt.Errorf("mntr %s: %w", m, err)
	}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if ok && k == key {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("mntr %s: no %s in %q", m, key, out)
}

// PacketsReceived sums zk_packets_received from mntr over the running
// members: every client request and ping a server read (four-letter words
// such as mntr itself are not counted; ZooKeeper reads them before its
// packet accounting).
func (e *Ensemble) PacketsReceived() (int64, error) {
	var sum int64
	for _, m := range e.Members() {
		if !m.Running() {
			continue
		}
		n, err := m.MntrValue("zk_packets_received")
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// Conn is one client connection as cons shows it.
type Conn struct {
	Session  int64         // sid
	Received int64         // recved: packets over the connection's life
	Timeout  time.Duration // to: the negotiated session timeout
	// LastResponse is when the server last answered the session (lresp, a
	// ping included), on the monotonic clock ZooKeeper reads it from (Java's
	// nanoTime): the session's expiry runs from about then.
	LastResponse time.Duration
}

// SinceLastResponse is how long ago the server last answered the session.
// The server runs on this machine, so its monotonic clock is ours.
func (c Conn) SinceLastResponse() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("zktest: monotonic clock: %w", err)
	}
	return time.Duration(ts.Nano()) - c.LastResponse, nil
}

// consLine matches one connection of a cons answer, e.g.
// " /127.0.0.1:51234[1](queued=0,recved=7,sent=8,sid=0x1000a2b3c4d0001,lop=PING,
// est=1700000000000,to=4000,lcxid=0x5,lzxid=0x1a,lresp=1700000001234,...)".
var (
	consLine  = regexp.MustCompile(`\(([^)]*)\)`)
	consField = regexp.MustCompile(`(\w+)=([^,]*)`)
)

// Conns reads cons on every running member: the connections that belong to
// a session (not the four-letter word's own).
func (e *Ensemble) Conns() ([]Conn, error) {
	var out []Conn
	for _, m := range e.Members() {
		if !m.Running() {
			continue
		}
		cs, err := m.Conns()
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// Conns reads cons on the server: its connections that belong to a session.
func (m *Member) Conns() ([]Conn, error) {
	s, err := m.FourLetter("cons")
	if err != nil {
		return nil, fmt.Errorf("cons %s: %w", m, err)
	}
	return parseCons(s), nil
}

func parseCons(s string) []Conn {
	var out []Conn
	for _, g := range consLine.FindAllStringSubmatch(s, -1) {
		var c Conn
		for _, f := range consField.FindAllStringSubmatch(g[1], -1) {
			switch f[1] {
			case "sid":
				v, _ := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
				c.Session = int64(v)
			case "recved":
				c.Received, _ = strconv.ParseInt(f[2], 10, 64)
			case "to":
				ms, _ := strconv.ParseInt(f[2], 10, 64)
				c.Timeout = time.Duration(ms) * time.Millisecond
			case "lresp":
				ms, _ := strconv.ParseInt(f[2], 10, 64)
				c.LastResponse = time.Duration(ms) * time.Millisecond
			}
		}
		if c.Session != 0 {
			out = append(out, c)
		}
	}
	return out
}

// Watches reads wchc on every running member: the paths each session
// watches, sorted. A server counts one watch per (session, path) however
// often a client sets it, so this shows which watches exist, not how many
// channels a client keeps for them.
func (e *Ensemble) Watches() (map[int64][]string, error) {
	out := map[int64][]string{}
	for _, m := range e.Members() {
		if !m.Running() {
			continue
		}
		s, err := m.FourLetter("wchc")
		if err != nil {
			return nil, fmt.Errorf("wchc %s: %w", m, err)
		}
		for sid, paths := range parseWchc(s) {
			out[sid] = append(out[sid], paths...)
		}
	}
	for sid := range out {
		sort.Strings(out[sid])
	}
	return out, nil
}

// parseWchc reads "0x1000...\n\t/a\n\t/b\n0x1000...\n\t/c\n".
func parseWchc(s string) map[int64][]string {
	out := map[int64][]string{}
	var sid int64
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(line, "0x"):
			v, err := strconv.ParseUint(strings.TrimSpace(line[2:]), 16, 64)
			if err != nil {
				sid = 0
				continue
			}
			sid = int64(v)
			out[sid] = out[sid][:0:0]
		case strings.HasPrefix(line, "\t") && sid != 0:
			out[sid] = append(out[sid], strings.TrimSpace(line))
		}
	}
	return out
}

// Pause stops the server (SIGSTOP to its process group): it keeps its
// sockets, so clients see a server that stops answering, not one that
// goes away, until Resume.
func (m *Member) Pause() error { return m.signal("pause", syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (m *Member) Resume() error { return m.signal("resume", syscall.SIGCONT) }

// signal sends sig to the running server's process group; verb names the action in errors.
func (m *Member) signal(verb string, sig syscall.Signal) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	if p := m.current(); p != nil {
		return signalGroup(p, sig)
	}
	return fmt.Errorf("zktest: %s server %d: not running", verb, m.id)
}
