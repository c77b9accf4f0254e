package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

func writeForward(w io.Writer, f *ForwardResult) {
	fmt.Fprintf(w, "\nforwarding proxy, 3 electd processes, each proxy in front of an HTTP app in the bench process, loopback:\n")
	if len(f.Latency) > 0 {
		fmt.Fprintf(w, "  one request at a time on a kept-alive connection (the app answers at once), n=%d each:\n", len(f.Latency[0].Took))
	}
	direct := directLatency(f)
	for _, p := range f.Latency {
		added := ""
		if d, ok := direct[p.Method]; ok && p.Hops > 0 {
			// Requests along different paths are not paired: the cost of a
			// path is the difference of medians, and says so.
			add := p.Took.P50() - d.P50()
			added = fmt.Sprintf("  p50 minus direct p50: %s, per hop %s", us(add), us(add/time.Duration(p.Hops)))
		}
		fmt.Fprintf(w, "  %-4s %-42s p50 %s  p99 %s%s\n", p.Method, p.Name(), us(p.Took.P50()), us(p.Took.P99()), added)
	}
	writePeerHop(w, f)
	if len(f.Saturation) > 0 {
		s := f.Saturation[0]
		fmt.Fprintf(w, "  at saturation: %d kept-alive clients in the bench process, each sending its next request when the answer is read, %v a path;\n", s.Conns, s.Took.Round(100*time.Millisecond))
		fmt.Fprintf(w, "  CPU: user+sys of the path's proxy processes over the run (/proc/PID/stat), per request answered:\n")
		fmt.Fprintf(w, "  %-4s %-42s %12s %10s %10s %10s %12s %7s\n", "", "path", "requests/s", "p50", "p99", "proxy CPU", "CPU/request", "non-200")
	}
	for _, l := range f.Saturation {
		cpu, per := "-", "-"
		if l.Hops > 0 {
			cpu, per = fmt.Sprintf("%.2f s", l.CPU.Seconds()), fmt.Sprintf("%.1f µs", float64(l.CPUPerRequest())/float64(time.Microsecond))
		}
		fmt.Fprintf(w, "  %-4s %-42s %12.0f %10s %10s %10s %12s %7d\n", l.Method, pathName(l.Via, l.Hops, false), l.PerSecond(),
			us(l.Latency.P50()), us(l.Latency.P99()), cpu, per, l.Errors)
	}
	if len(f.Handovers) > 0 {
		fmt.Fprintf(w, "  requests lost per hand-over, %.0f requests/s (GETs and POSTs) through every proxy, session timeout %v, hold time %v:\n",
			f.Rate, f.Session, f.HoldTime)
	}
	for _, l := range f.Handovers {
		total := 0
		for _, n := range l.Requests {
			total += n
		}
		fmt.Fprintf(w, "  %-80s lost %v of %d requests in %d rounds; slowest answer %s\n", l.Kind, l.Failed, total, len(l.Failed), ms(l.Slowest))
	}
	fmt.Fprintf(w, "  requests an application saw from a participant that did not lead (fencing token): %d\n", f.Fenced)
	writeFaults(w, f.Faults)
}

// writePeerHop prints what the hop between two proxies adds (HTTP/2 inside
// the peers' mutual TLS): a follower's path less the leader's, at p50.
func writePeerHop(w io.Writer, f *ForwardResult) {
	for _, method := range []string{"GET", "POST"} {
		var one, two Dist
		for _, p := range f.Latency {
			if p.Method == method && p.Via == viaElectd && p.Hops == 1 {
				one = p.Took
			} else if p.Method == method && p.Via == viaElectd && p.Hops == 2 {
				two = p.Took
			}
		}
		if len(one) > 0 && len(two) > 0 {
			fmt.Fprintf(w, "  %-4s %-42s p50 %s (a follower's path less the leader's)\n", method,
				"electd: the peer hop (HTTP/2, mutual TLS)", us(two.P50()-one.P50()))
		}
	}
}

// directLatency is the direct path's latency by method.
func directLatency(f *ForwardResult) map[string]Dist {
	direct := map[string]Dist{}
	for _, p := range f.Latency {
		if p.Via == viaDirect && !p.Fresh {
			direct[p.Method] = p.Took
		}
	}
	return direct
}

// us prints a duration in microseconds.
func us(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// forwardTargets are issue 22's and issue 28's: a forward adds well under
// a millisecond at p50 on loopback (a hop through the leader's proxy under
// half of one, the two hops through a follower's under one); a hop within
// HAProxy's p50 + 50 µs and CPU per request within 1.5 x HAProxy's, one hop
// and two; graceful hand-overs lose no request, a crash loses only what was
// in flight (at most one request per worker of the load).
func forwardTargets(f *ForwardResult) []target {
	var out []target
	add := func(name string, met bool, format string, args ...any) {
		out = append(out, target{name, fmt.Sprintf(format, args...), met})
	}
	direct := directLatency(f)
	for _, p := range f.Latency {
		d, ok := direct[p.Method]
		if !ok || p.Via != viaElectd {
			continue
		}
		added := p.Took.P50() - d.P50()
		switch p.Hops {
		case 1:
			add(fmt.Sprintf("one forward: p50 minus direct p50 < 0.5 ms (%s via the leader's proxy)", p.Method), added < 500*time.Microsecond, "%s", us(added))
		case 2:
			add(fmt.Sprintf("two forwards: p50 minus direct p50 < 1 ms (%s via a follower's)", p.Method), added < time.Millisecond, "%s", us(added))
		}
	}
	out = append(out, haproxyTargets(f)...)
	for _, l := range f.Handovers {
		lost := 0
		for _, n := range l.Failed {
			lost = max(lost, n)
		}
		if l.Graceful {
			add("no request lost: "+l.Kind, lost == 0, "worst round %d", lost)
		} else {
			add(fmt.Sprintf("a crash loses what is in flight only (<= %d, the load's workers): %s", forwardWorkers, l.Kind), lost <= forwardWorkers, "worst round %d", lost)
		}
	}
	add("no request answered by a participant that did not lead", f.Fenced == 0, "%d", f.Fenced)
	return out
}

// hopSlack is issue 28's allowance over HAProxy per hop at p50, and
// cpuAllowance its bound on CPU per request, as a multiple of HAProxy's.
const (
	hopSlack     = 50 * time.Microsecond
	cpuAllowance = 1.5
)

// haproxyTargets judges electd's paths against HAProxy's with as many hops.
func haproxyTargets(f *ForwardResult) []target {
	var out []target
	add := func(name string, met bool, format string, args ...any) {
		out = append(out, target{name, fmt.Sprintf(format, args...), met})
	}
	hops := func(n int) string {
		if n == 1 {
			return "one hop"
		}
		return "two hops"
	}
	for _, p := range f.Latency {
		if p.Via != viaElectd {
			continue
		}
		for _, h := range f.Latency {
			if h.Via == floorHAProxy && h.Hops == p.Hops && h.Method == p.Method {
				bound := h.Took.P50() + time.Duration(p.Hops)*hopSlack
				add(fmt.Sprintf("%s p50 <= HAProxy's + %d µs a hop (%s)", hops(p.Hops), hopSlack/time.Microsecond, p.Method),
					p.Took.P50() <= bound, "%s vs HAProxy %s", us(p.Took.P50()), us(h.Took.P50()))
			}
		}
	}
	for _, l := range f.Saturation {
		if l.Via != viaElectd {
			continue
		}
		for _, h := range f.Saturation {
			if h.Via == floorHAProxy && h.Hops == l.Hops && h.Method == l.Method && h.Requests > 0 {
				e, hp := l.CPUPerRequest(), h.CPUPerRequest()
				add(fmt.Sprintf("CPU per request <= %.1f x HAProxy's, %s (%s)", cpuAllowance, hops(l.Hops), l.Method),
					float64(e) <= cpuAllowance*float64(hp), "%.1f µs vs %.1f µs (%.2f x)",
					float64(e)/float64(time.Microsecond), float64(hp)/float64(time.Microsecond), ratio(e, hp))
			}
		}
	}
	return out
}

// writeFaults prints what clients saw under each fault.
func writeFaults(w io.Writer, fs []*FaultResult) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(w, "  what a client sees under each fault: %d requests/s through the proxies (every other one a POST with a body), Go applications in processes of their own keeping a ledger by request id,\n", faultRate)
	fmt.Fprintf(w, "  session timeout %v, hold time %v, response timeout %v; each fault lasts %v, then heals; counted: the requests in flight at the fault or sent until every proxy routes to one leader after the heal; the client gives up after %v:\n",
		faultSession, faultHold, faultResponse, fs[0].Window, faultPatience)
	for _, f := range fs {
		moved := make([]string, len(f.Moved))
		for i, d := range f.Moved {
			moved[i] = "-"
			if d > 0 {
				moved[i] = fmt.Sprintf("%.2f s", d.Seconds())
			}
		}
		fmt.Fprintf(w, "  %s (%d rounds)\n", f.Kind, f.Rounds)
		fmt.Fprintf(w, "    every proxy routes to a new leader after: %s; %d requests (%d POSTs), time to answer p50 %s, max %s\n",
			strings.Join(moved, ", "), f.Requests, f.Posts, ms(f.Took.P50()), ms(f.Took.Max()))
		fmt.Fprintf(w, "    answers: 200 %d; clean 503/504 with Retry-After %d; 502/503 \"may or may not have been processed\" %d; other %d%s\n",
			f.OK, f.Clean, f.Maybe, f.Other, others(f.Others))
		for _, k := range sortedKinds(f.Others) {
			fmt.Fprintf(w, "      e.g. %s\n", f.Example[k])
		}
		fmt.Fprintf(w, "    ledgers: reached an application without a 200 to the client %d; POSTs run twice %d; GETs run twice %d; answered by a participant not leading %d; Electd-* headers shown to clients %d\n",
			f.RanNo200, f.PostsTwice, f.GetsTwice, f.Unfenced, f.Leaks)
	}
}

// others lists the other answers by kind, most first: " (504 without
// Retry-After 12, connection failed 3)".
func others(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	kinds := sortedKinds(m)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// sortedKinds are m's keys, the most counted first.
func sortedKinds(m map[string]int) []string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	return kinds
}
