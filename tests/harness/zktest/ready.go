package zktest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/electd/electd/tests/harness/wait"
)

// WaitReady waits until every running member serves and the ensemble has a leader
// (standalone: mode standalone; ensemble: exactly one leader, all others follower). It
// fails at once when a member's JVM exited without Stop or Kill (the error carries the
// tail of its log), when no member runs, or when ctx ends (the error says which member was
// in which mode).
func (e *Ensemble) WaitReady(ctx context.Context) error {
	lastLogCheck := time.Now()
	state, futile := "", false
	err := wait.Until(ctx, 0, pollInterval, func() error {
		s, err := e.readiness()
		switch {
		case err != nil:
			futile = true
			return wait.Stop(err)
		case s == "":
			return nil
		}
		state = s
		if time.Since(lastLogCheck) > time.Second {
			lastLogCheck = time.Now()
			for _, m := range e.members {
				if m.Running() && m.portCollision() {
					futile = true
					return wait.Stop(fmt.Errorf("%w: %s, log %s:\n%s", errPortCollision, m, m.logPath, m.logTail(20)))
				}
			}
		}
		return errors.New(s)
	})
	if err != nil && !futile {
		return fmt.Errorf("zktest: ensemble not ready (%s): %w", state, ctx.Err())
	}
	return err
}

// readiness returns "" when ready, else what is missing; an error when waiting is futile.
func (e *Ensemble) readiness() (string, error) {
	var running []*Member
	for _, m := range e.members {
		if err := m.exitError(); err != nil {
			return "", err
		}
		if m.Running() {
			running = append(running, m)
		}
	}
	if len(running) == 0 {
		return "", errors.New("zktest: WaitReady: no server is running")
	}
	modes := modesOf(running)
	var leaders int
	var desc []string
	ok := true
	for i, m := range running {
		mode := modes[i]
		switch mode {
		case "leader", "standalone":
			leaders++
		case "follower", "observer":
		default:
			ok = false
			mode = "not serving"
		}
		desc = append(desc, fmt.Sprintf("server %d: %s", m.id, mode))
	}
	if len(e.members) == 1 {
		ok = ok && modes[0] == "standalone"
	} else {
		ok = ok && leaders == 1 && !slices.Contains(modes, "standalone")
	}
	if ok {
		return "", nil
	}
	return strings.Join(desc, ", "), nil
}

// modesOf asks every member for its mode, concurrently.
func modesOf(ms []*Member) []string {
	modes := make([]string, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			modes[i] = m.Mode()
		}()
	}
	wg.Wait()
	return modes
}

// Leader returns the member whose srvr mode is leader or standalone, or nil. Right after a
// partition two members may briefly both say leader (the cut-off one has not noticed yet):
// then it returns the first in member order.
func (e *Ensemble) Leader() *Member {
	var running []*Member
	for _, m := range e.members {
		if m.Running() {
			running = append(running, m)
		}
	}
	for i, mode := range modesOf(running) {
		if mode == "leader" || mode == "standalone" {
			return running[i]
		}
	}
	return nil
}

// LeaderEpoch returns the epoch of the ensemble's leader (the high 32 bits of
// the zxid its srvr reports), false when no leader answers. A new epoch means
// the ensemble elected again: it lost its leader or its quorum meanwhile.
func (e *Ensemble) LeaderEpoch() (int64, bool) {
	l := e.Leader()
	if l == nil {
		return 0, false
	}
	out, err := l.FourLetter("srvr")
	if err != nil {
		return 0, false
	}
	z, err := strconv.ParseInt(strings.TrimPrefix(srvrField(out, "Zxid"), "0x"), 16, 64)
	return z >> 32, err == nil
}

// consConn matches one connection of a server's `cons` answer: its session
// id and, once established, when (ms since the epoch, server clock).
var consConn = regexp.MustCompile(`sid=0x([0-9a-fA-F]+)(?:[^)]*?\best=(\d+))?`)

// ServerOfSession returns the member whose `cons` output lists the session (sid=0x...), or
// nil.
func (e *Ensemble) ServerOfSession(sessionID int64) *Member {
	m, _ := e.Connection(sessionID)
	return m
}

// Connection returns the member holding the session's connection (nil when
// none does) and when that connection was established, as the member's
// `cons` says (zero when it does not).
func (e *Ensemble) Connection(sessionID int64) (*Member, time.Time) {
	for _, m := range e.members {
		if !m.Running() {
			continue
		}
		out, err := m.FourLetter("cons")
		if err != nil {
			continue
		}
		for _, c := range consConn.FindAllStringSubmatch(out, -1) {
			if id, err := strconv.ParseUint(c[1], 16, 64); err != nil || int64(id) != sessionID {
				continue
			}
			var est time.Time
			if ms, err := strconv.ParseInt(c[2], 10, 64); err == nil {
				est = time.UnixMilli(ms)
			}
			return m, est
		}
	}
	return nil, time.Time{}
}
