package chaos

import (
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/invariant"
)

// faultCut (fault 1) cuts the leader off from ZooKeeper for frac x the
// session timeout: blackhole (connections stay open, nothing is forwarded)
// or refuse (connections are closed, new ones refused).
func faultCut(kind string, frac float64) func(*run) {
	return func(r *run) {
		l := r.setup(3, nil)
		d := time.Duration(frac * float64(r.timeout))
		pxs := r.proxiesOf(l)
		t0 := r.now()
		for _, px := range pxs {
			if kind == "blackhole" {
				px.Blackhole()
			} else {
				px.Refuse()
			}
		}
		r.event("cut leader %s off from ZooKeeper (%s) for %s = %.1f x session timeout", l.Name, kind, d, frac)
		if d > r.timeout {
			r.expectLeader("another leader while "+l.Name+" is cut off", t0, l)
		}
		r.holdUntil(t0 + d)
		th := r.now()
		for _, px := range pxs {
			px.Heal()
		}
		r.event("healed %s's connection", l.Name)
		if d > r.timeout {
			r.noClaims(l, t0+r.timeout, th, "its session had certainly expired")
		}
		r.expectLeader("leader after heal", th)
		r.finish()
	}
}

// noClaims fails the run if who answered 200 to a request sent in [from, to).
func (r *run) noClaims(who *electdtest.Proc, from, to time.Duration, why string) {
	r.t.Helper()
	name := ""
	if who != nil {
		name = who.Name
	}
	if bad := invariant.Claims(r.obs.Samples(), name, from, to); len(bad) > 0 {
		r.errorf(window(from-time.Second, to), "%d answers of 200 in [%s, %s], when %s; first %v, last %v",
			len(bad), invariant.Ms(from), invariant.Ms(to), why, bad[0], bad[len(bad)-1])
	}
}

// faultPause (fault 2) stops the leader with SIGSTOP for longer than the
// session timeout. Right after SIGCONT a request goes out on a connection
// the kernel accepted while the process was stopped: the very first answer
// must be 503, whatever the process has or has not yet learnt from ZooKeeper.
func faultPause(r *run) {
	l := r.setup(3, nil)
	t0 := r.now()
	if err := r.pause(l); err != nil {
		r.fatalf("SIGSTOP %s: %v", l.Name, err)
	}
	r.event("SIGSTOP leader %s", l.Name)
	r.expectLeader("another leader while "+l.Name+" is stopped", t0, l)
	r.holdUntil(t0 + r.timeout*3/2 + r.env.tick)
	conn, err := net.DialTimeout("tcp", l.Addr, 2*time.Second)
	if err != nil {
		r.fatalf("connect to stopped %s: %v", l.Name, err)
	}
	defer conn.Close()
	tc := r.now()
	if err := r.resume(l); err != nil {
		r.fatalf("SIGCONT %s: %v", l.Name, err)
	}
	s := electdtest.ProbeOn(conn, r.now)
	s.Who = l.Name
	r.obs.Record(s)
	r.event("SIGCONT %s after %s stopped; first answer: %v (sent %s after SIGCONT)", l.Name, invariant.Ms(tc-t0), s, invariant.Ms(s.Send-tc))
	if !s.Answered || s.State != "503" {
		r.errorf(window(tc-time.Second, s.Recv+time.Second),
			"first answer of %s after SIGCONT is %v, want a 503: a paused leader must not claim leadership on resuming", l.Name, s)
	}
	r.expectLeader("leader after resume", tc)
	r.finish()
}

// faultKill (fault 3) kills the leader with SIGKILL.
func faultKill(r *run) {
	l := r.setup(3, nil)
	t0 := r.now()
	r.kill(l)
	r.event("kill -9 leader %s", l.Name)
	r.expectLeader("another leader after kill -9 of "+l.Name, t0, l)
	r.finish()
}

// faultChurn (fault 8) cuts random participants' connections (reset, or
// refuse for a random while) while participants join, leave (SIGTERM) and
// crash (SIGKILL), from a logged seed. At the end: one leader, no orphans.
func faultChurn(dur time.Duration) func(*run) {
	return func(r *run) {
		seed := r.spec.Seed
		r.event("churn for %s, seed %d (repeat: -run '%s' -args -chaos.seed %d)", dur, seed, r.t.Name(), seed)
		rng := rand.New(rand.NewPCG(uint64(seed), 0x63686173))
		r.setup(3, nil)
		var stops, heals sync.WaitGroup
		var mu sync.Mutex
		refused := map[string]bool{}
		end := r.now() + dur
		for r.now() < end {
			r.holdUntil(r.now() + time.Duration(150+rng.IntN(450))*time.Millisecond)
			live := r.live()
			if len(live) == 0 {
				r.fatalf("churn: no live participant left")
			}
			p := live[rng.IntN(len(live))]
			switch x := rng.IntN(100); {
			case x < 30:
				for _, px := range r.proxiesOf(p) {
					px.Reset()
				}
				r.event("churn: reset %s's connections", p.Name)
			case x < 50:
				mu.Lock()
				busy := refused[p.Name]
				refused[p.Name] = true
				mu.Unlock()
				if busy {
					continue
				}
				d := time.Duration(100+rng.IntN(int(r.timeout*6/5/time.Millisecond))) * time.Millisecond
				for _, px := range r.proxiesOf(p) {
					px.Refuse()
				}
				r.event("churn: refuse %s's connections for %s", p.Name, d)
				heals.Add(1)
				r.bg.Add(1)
				time.AfterFunc(d, func() {
					defer r.bg.Done()
					defer heals.Done()
					for _, px := range r.proxiesOf(p) {
						px.Heal()
					}
					mu.Lock()
					delete(refused, p.Name)
					mu.Unlock()
					r.event("churn: healed %s", p.Name)
				})
			case x < 70:
				if len(live) < 5 {
					r.start(-1)
				}
			case x < 90:
				if len(live) > 2 {
					r.event("churn: SIGTERM %s", p.Name)
					r.stopAsync(p, &stops)
				}
			default:
				if len(live) > 2 {
					r.kill(p)
					r.event("churn: kill -9 %s", p.Name)
				}
			}
		}
		heals.Wait()
		stops.Wait()
		te := r.now()
		r.event("churn over")
		r.expectLeader("leader after churn", te)
		r.finish()
	}
}
