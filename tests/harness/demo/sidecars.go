package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
)

// sidecar is one electd process of the demo.
type sidecar struct {
	id   string
	proc *electdtest.Proc
	gone bool // stopped by the demo
}

func (s *sidecar) running() bool { return !s.gone && s.proc.Alive() }

// probe is what one round of questions found.
type probe struct {
	is      map[string]string // id: yes, no, down, "? (code)"
	seen    map[string]string // id: the leader it names on /leader
	tokens  map[string]int64  // id: fencing token of a 200
	leaders []string          // ids answering 200 on /healthz/leader
	agreed  string            // the one leader every running sidecar names, or ""
}

// ask puts one question to s, bounded so a stuck sidecar cannot stall the demo.
func ask[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return f(ctx)
}

// probeAll asks every running sidecar whether it leads and whom it names.
func (d *demo) probeAll(ctx context.Context) probe {
	p := probe{is: map[string]string{}, seen: map[string]string{}, tokens: map[string]int64{}}
	named := map[string]bool{}
	for _, s := range d.sidecars {
		if !s.running() {
			p.is[s.id], p.seen[s.id] = "down", "-"
			continue
		}
		h, err := ask(ctx, s.proc.LeaderHealth)
		switch {
		case err != nil:
			p.is[s.id] = "? (no answer)"
		case h.Status == http.StatusOK:
			p.is[s.id] = "yes"
			p.leaders = append(p.leaders, s.id)
			p.tokens[s.id] = h.FencingToken
		case h.Status == http.StatusServiceUnavailable:
			p.is[s.id] = "no"
		default:
			p.is[s.id] = fmt.Sprintf("? (%d)", h.Status)
		}
		p.seen[s.id] = "(none)"
		if v, err := ask(ctx, s.proc.View); err == nil && v.LeaderID() != "" {
			p.seen[s.id] = v.LeaderID()
		}
		named[p.seen[s.id]] = true
	}
	if len(p.leaders) == 1 && len(named) == 1 && named[p.leaders[0]] {
		p.agreed = p.leaders[0]
	}
	return p
}

// table prints who says what.
func (d *demo) table(p probe) {
	d.out.info(fmt.Sprintf("%-8s %-10s %s", "id", "is_leader", "leader seen"))
	for _, s := range d.sidecars {
		d.out.info(fmt.Sprintf("%-8s %-10s %s", s.id, p.is[s.id], p.seen[s.id]))
	}
}

// errTwoLeaders is waitAgreed's finding of two leaders at once.
var errTwoLeaders = errors.New("two leaders at once")

// waitAgreed polls until exactly one sidecar leads, it is not not, and every running
// sidecar names it. Two leaders fail at once when the first, asked again after the
// second answered, still leads with the same fencing token: that they were seen in one
// round may only be a handoff between two questions.
func (d *demo) waitAgreed(ctx context.Context, not string, within time.Duration) (probe, error) {
	var p probe
	err := wait.Until(ctx, within, poll, func() error {
		p = d.probeAll(ctx)
		if len(p.leaders) > 1 {
			first := d.byID(p.leaders[0])
			if h, err := ask(ctx, first.proc.LeaderHealth); err == nil && h.Status == http.StatusOK && h.FencingToken == p.tokens[first.id] {
				d.table(p)
				return wait.Stop(fmt.Errorf("%w: %s", errTwoLeaders, strings.Join(p.leaders, " and ")))
			}
		}
		if p.agreed != "" && p.agreed != not {
			return nil
		}
		return errors.New("no single agreed leader")
	})
	switch {
	case err == nil, ctx.Err() != nil:
		return p, ctx.Err()
	case errors.Is(err, errTwoLeaders):
		return p, err
	}
	d.table(p)
	return p, fmt.Errorf("no single agreed leader within %v", within)
}

// waitNewLeader polls /healthz/leader of the running sidecars but not until one
// answers 200, and returns it.
func (d *demo) waitNewLeader(ctx context.Context, not string, within time.Duration) (*sidecar, error) {
	var found *sidecar
	err := wait.Until(ctx, within, 10*time.Millisecond, func() error {
		for _, s := range d.sidecars {
			if s.id == not || !s.running() {
				continue
			}
			if h, err := ask(ctx, s.proc.LeaderHealth); err == nil && h.Status == http.StatusOK {
				found = s
				return nil
			}
		}
		return errors.New("no new leader")
	})
	switch {
	case err == nil:
		return found, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("no new leader within %v after %s let go", within, not)
}

func (d *demo) byID(id string) *sidecar {
	for _, s := range d.sidecars {
		if s.id == id {
			return s
		}
	}
	return nil
}

// electedAt is when s's electd logged that it was elected (its last such line), from
// its log in text format (time=... level=INFO msg=elected ...).
func electedAt(s *sidecar) (time.Time, bool) {
	f, err := os.Open(s.proc.LogPath)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	var last time.Time
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[2] != "msg=elected" {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(fields[0], "time=")); err == nil {
			last, found = t, true
		}
	}
	return last, found
}

// electedNote says when by its own log s was elected after t0, for the figures the
// demo prints (which include its polling).
// The line may reach the log a little after the leadership shows over HTTP
// (electd logs through a buffer), so it is read again for up to 2 s.
func electedNote(s *sidecar, t0 time.Time) string {
	var at time.Time
	err := wait.Until(context.Background(), 2*time.Second, 20*time.Millisecond, func() error {
		var ok bool
		if at, ok = electedAt(s); !ok || at.Before(t0.Truncate(time.Millisecond)) {
			return errors.New("no elected line after t0 yet")
		}
		return nil
	})
	if err != nil {
		return ""
	}
	return fmt.Sprintf(" (by %s's log: elected %d ms after it; the rest is polling)", s.id, at.Sub(t0).Milliseconds())
}
