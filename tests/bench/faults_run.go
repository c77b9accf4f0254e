package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/tests/harness/ledger"
)

// faultKind is one fault: do injects it on the leader l, heal ends it after
// the fault's window (restarting what it stopped).
type faultKind struct {
	key, name string
	do, heal  func(ctx context.Context, r *faultRig, l *faultMember) error
}

var faultKinds = []faultKind{
	{key: "stall", name: "stall: the leader's electd stopped (SIGSTOP), its application running",
		do: func(_ context.Context, r *faultRig, l *faultMember) error {
			l.out = true // its clients wait for it: nothing can answer them
			return l.proc.Pause()
		},
		heal: func(_ context.Context, r *faultRig, l *faultMember) error {
			l.out = false
			return l.proc.Resume()
		}},
	{key: "crash", name: "crash: the leader's electd killed (SIGKILL)",
		do: func(_ context.Context, r *faultRig, l *faultMember) error {
			l.out = true // its port refuses from now on
			l.proc.Kill()
			return nil
		},
		heal: func(ctx context.Context, r *faultRig, l *faultMember) error {
			l.out = false
			return r.launch(ctx, l)
		}},
	{key: "appkill", name: "the leader's application killed (SIGKILL)",
		do: func(_ context.Context, r *faultRig, l *faultMember) error {
			l.app.Proc.Kill()
			return nil
		},
		heal: func(_ context.Context, r *faultRig, l *faultMember) error {
			return l.app.Relaunch()
		}},
	{key: "apphang", name: "the leader's application hung (SIGSTOP: accepts, never answers)",
		do: func(_ context.Context, r *faultRig, l *faultMember) error {
			return l.app.Proc.Pause()
		},
		heal: func(_ context.Context, r *faultRig, l *faultMember) error {
			return l.app.Proc.Resume()
		}},
	{key: "partition", name: "partition: the followers cut off from the leader's proxy (its peer port blackholed)",
		do: func(_ context.Context, r *faultRig, l *faultMember) error {
			l.relay.Blackhole()
			return nil
		},
		heal: func(_ context.Context, r *faultRig, l *faultMember) error {
			l.relay.Heal()
			return nil
		}},
	{key: "zk", name: "ZooKeeper lost by the leader (its link blackholed)",
		do: func(_ context.Context, r *faultRig, l *faultMember) error {
			l.blind = true
			l.zk.Blackhole()
			return nil
		},
		heal: func(_ context.Context, r *faultRig, l *faultMember) error {
			l.blind = false
			l.zk.Heal()
			return nil
		}},
}

// FaultKeys names the faults, for -faults.
func FaultKeys() []string {
	var out []string
	for _, k := range faultKinds {
		out = append(out, k.key)
	}
	return out
}

// FaultResult is what clients saw through the proxies in the rounds of one
// fault: every request sent while the fault lasted, or in flight when it
// began, until every proxy routed to one leader again after it healed.
type FaultResult struct {
	Key, Kind string
	Rounds    int
	Window    time.Duration // how long each round's fault lasted
	// Moved: how long after the fault every proxy able to know routed to a
	// new leader, each round; 0 when leadership did not move while it
	// lasted.
	Moved    []time.Duration
	Requests int
	Posts    int
	// Took is every such request's time to an answer, or to the client's
	// giving up (faultPatience) or its connection's failure.
	Took Dist
	// The answers: the application's 200; a clean 503/504 with
	// Retry-After; a 502/503 saying the request may or may not have been
	// processed; anything else (no answer within the client's patience, a
	// connection reset, a 502 or 504 without Retry-After).
	OK, Clean, Maybe, Other int
	// Others counts the other answers by kind (otherKind); Example is the
	// first of each kind, as the client saw it.
	Others  map[string]int
	Example map[string]string
	// From the applications' ledgers: requests that reached an application
	// and got no 200; POSTs and GETs that reached an application more than
	// once; arrivals a fenced storage would refuse.
	RanNo200, PostsTwice, GetsTwice, Unfenced int
	Leaks                                     int // answers that showed the client an Electd-* header
}

// runFaults runs every fault cfg.FaultRounds times on a fresh rig.
func runFaults(ctx context.Context, env *env) ([]*FaultResult, error) {
	r, err := startFaultRig(ctx, env)
	if err != nil {
		return nil, err
	}
	defer r.close()
	var out []*FaultResult
	for _, k := range faultKinds {
		if len(env.cfg.Faults) > 0 && !slices.Contains(env.cfg.Faults, k.key) {
			continue
		}
		res := &FaultResult{Key: k.key, Kind: k.name, Window: env.cfg.FaultWindow, Others: map[string]int{}, Example: map[string]string{}}
		for i := range env.cfg.FaultRounds {
			if err := r.round(ctx, k, fmt.Sprintf("%s-%d", k.key, i+1), res); err != nil {
				return out, fmt.Errorf("fault %s, round %d: %w", k.key, i+1, err)
			}
			env.progress("forward fault %s, round %d/%d: %d requests, %d answered 200, moved after %v", k.key, i+1,
				env.cfg.FaultRounds, res.Requests, res.OK, res.Moved[len(res.Moved)-1].Round(time.Millisecond))
		}
		out = append(out, res)
	}
	return out, nil
}

// round runs the load for a second, injects k on the leader for the
// fault window, heals it, waits until every proxy routes to one leader
// again, runs the load a second more, and adds what the affected requests
// got to res.
func (r *faultRig) round(ctx context.Context, k faultKind, prefix string, res *FaultResult) error {
	l, err := r.settled(ctx, nil, time.Minute)
	if err != nil || l == nil {
		return fmt.Errorf("no leader that every proxy routes to within a minute (%v)", err)
	}
	ld := ledger.StartLoad(ledger.LoadConfig{Rate: faultRate, PostEvery: 2, Timeout: faultPatience, Prefix: prefix}, r.targets()...)
	defer ld.Stop()
	if err := sleep(ctx, time.Second); err != nil {
		return err
	}
	at := time.Now()
	if err := k.do(ctx, r, l); err != nil {
		return err
	}
	ld.Targets(r.targets()...)
	window := r.env.cfg.FaultWindow
	moved := time.Duration(0)
	if nl, err := r.settled(ctx, l, window); err != nil {
		return err
	} else if nl != nil {
		moved = time.Since(at)
	}
	if err := sleep(ctx, time.Until(at.Add(window))); err != nil {
		return err
	}
	if err := k.heal(ctx, r, l); err != nil {
		return err
	}
	if nl, err := r.settled(ctx, nil, time.Minute); err != nil || nl == nil {
		return fmt.Errorf("no leader that every proxy routes to within a minute of the heal (%v)", err)
	}
	ld.Targets(r.targets()...)
	end := time.Now()
	if err := sleep(ctx, time.Second); err != nil {
		return err
	}
	reqs := ld.Stop()
	entries, err := r.entries(prefix)
	if err != nil {
		return err
	}
	res.Rounds++
	res.Moved = append(res.Moved, moved)
	res.add(affected(reqs, at, end), entries)
	return nil
}

// affected are the requests in flight at the fault or sent before the
// cluster settled after its heal.
func affected(reqs []ledger.Request, at, end time.Time) []ledger.Request {
	var out []ledger.Request
	for _, q := range reqs {
		if q.End.After(at) && q.Start.Before(end) {
			out = append(out, q)
		}
	}
	return out
}

// entries reads every application's ledger lines of one round's requests.
func (r *faultRig) entries(prefix string) ([]ledger.Entry, error) {
	var paths []string
	for _, m := range r.members {
		paths = append(paths, m.app.Ledger)
	}
	all, err := ledger.Read(paths...)
	if err != nil {
		return nil, err
	}
	var out []ledger.Entry
	for _, e := range all {
		if strings.HasPrefix(e.ID, prefix+"-") {
			out = append(out, e)
		}
	}
	return out, nil
}

// otherKind names an answer that is neither a 200 nor one the proxy
// promises: the client gave up, the connection failed, or a status.
func otherKind(q ledger.Request) string {
	var ne net.Error
	switch {
	case q.Err != nil && errors.As(q.Err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %v", faultPatience)
	case q.Err != nil:
		return "connection failed"
	case q.Code == http.StatusServiceUnavailable || q.Code == http.StatusGatewayTimeout:
		return fmt.Sprintf("%d without Retry-After", q.Code)
	}
	return strconv.Itoa(q.Code)
}

// add counts what reqs got, and what the ledger says of them.
func (res *FaultResult) add(reqs []ledger.Request, entries []ledger.Entry) {
	byID := ledger.ByID(entries)
	posts := ledger.Posts(reqs)
	for _, q := range reqs {
		res.Requests++
		res.Took = append(res.Took, q.Latency())
		ok := q.Err == nil && q.Code == 200
		switch {
		case ok:
			res.OK++
		case ledger.SaysMaybe(q):
			res.Maybe++
		case ledger.Clean(q):
			res.Clean++
		default:
			res.Other++
			kind := otherKind(q)
			if res.Others[kind]++; res.Example[kind] == "" {
				res.Example[kind] = q.String()
			}
		}
		if posts[q.ID] {
			res.Posts++
		}
		if !ok && len(byID[q.ID]) > 0 {
			res.RanNo200++
		}
		if n := len(byID[q.ID]); n > 1 && posts[q.ID] {
			res.PostsTwice++
		} else if n > 1 {
			res.GetsTwice++
		}
	}
	res.Unfenced += len(ledger.Unfenced(entries))
	res.Leaks += len(ledger.Leaks(reqs))
}
