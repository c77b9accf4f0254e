package bench

import (
	"fmt"
	"regexp"
	"strings"
)

// The regions the docs quote a kept bench report in (quote.go): what each
// says, read from the report's lines.

// Regions are every quoted region.
var Regions = []BenchRegion{
	{File: "README.md", Name: "performance", Render: renderPerformance},
	{File: "BENCHMARKS.md", Name: "run", Render: renderRun},
	{File: "BENCHMARKS.md", Name: "summary", Render: renderSummary},
	{File: "BENCHMARKS.md", Name: "handoff", Render: blockOf("graceful handoff", "Curator 5.4", "ZooKeeper floor in the same rounds", "ZooKeeper floor, two")},
	{File: "BENCHMARKS.md", Name: "crash", Render: blockOf("crash failover")},
	{File: "BENCHMARKS.md", Name: "idle", Render: blockOf("idle ZooKeeper load", "idle electd over")},
	{File: "BENCHMARKS.md", Name: "forward", Render: renderForward},
	{File: "BENCHMARKS.md", Name: "forward-losses", Render: renderLosses},
	{File: "BENCHMARKS.md", Name: "scale", Render: blockOf("scale,")},
	{File: "BENCHMARKS.md", Name: "targets", Render: blockOf("targets (")},
}

func blockOf(prefixes ...string) func(*KeptReport) (string, error) {
	return func(r *KeptReport) (string, error) {
		b, err := r.block(prefixes...)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("From [%s](%s), as printed:\n\n%s", r.Path, r.Path, b), nil
	}
}

func renderRun(r *KeptReport) (string, error) {
	load, err := r.para("machine:")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("The run quoted here is [%s](%s), as `make bench` wrote it; every figure in this file's\nbench regions is copied from it (`make quote` rewrites them from the kept report). Its head:\n\n%s\n\nEach section's load average (1, 5, 15 min) before and after it, and how long it took:\n\n```text\n%s\n```",
		r.Path, r.Path, strings.Join(r.Head, "\n"), strings.Join(load[1:], "\n")), nil
}

var (
	floorRE    = regexp.MustCompile(`delete -> watch (p50 [0-9.]+ ms)  p90 .*; -> getChildren answered (p50 [0-9.]+ ms)  p90 ([0-9.]+ ms)`)
	ratioRE    = regexp.MustCompile(`electd / Curator ([0-9.]+)`)
	boundRE    = regexp.MustCompile(`negotiated session timeout (\S+), tickTime (\S+): .* = ([0-9.]+ ms)`)
	crashRE    = regexp.MustCompile(`p50 ([0-9.]+ ms)  p90 [0-9.]+ ms  max ([0-9.]+ ms)  \(n=([0-9]+)\)`)
	idleRE     = regexp.MustCompile(`electd: leader ([0-9.]+/s), successor ([0-9.]+/s), other followers ([0-9.]+/s) each`)
	curIdleRE  = regexp.MustCompile(`Curator LeaderLatch: ([0-9.]+/s) each`)
	rssRE      = regexp.MustCompile(`leader RSS ([0-9.]+ MiB), CPU ([0-9.]+%) of a core; follower RSS ([0-9.]+ MiB), CPU ([0-9.]+%)`)
	healthRE   = regexp.MustCompile(`([0-9]+) keep-alive connections for (\S+): ([0-9]+) requests/s, .* p99 ([0-9.]+ ms); electd used ([0-9.]+) cores; non-200: ([0-9]+)`)
	pathRE     = regexp.MustCompile(`^  (GET|POST) +(.+?) +p50 ([0-9]+ µs)  p99 ([0-9]+ µs)(?:  p50 minus direct p50: (-?[0-9]+ µs), per hop (-?[0-9]+ µs))?$`)
	satRE      = regexp.MustCompile(`^  (GET|POST) +(.+?) +([0-9]+) +([0-9]+ µs) +([0-9]+ µs) +(\S+ s|-) +(\S+ µs|-) +([0-9]+)$`)
	handoverRE = regexp.MustCompile(`^  (.+?) +lost \[([0-9 ]*)\] of ([0-9]+) requests in ([0-9]+) rounds; slowest answer ([0-9.]+ ms)$`)
	rateRE     = regexp.MustCompile(`([0-9]+) requests/s \(GETs and POSTs\) through every proxy, session timeout (\S+), hold time (\S+):`)
	scaleRE    = regexp.MustCompile(`^  ([0-9]+) (in one election|elections of 3) +(\S+) +p50 ([0-9.]+ ms) p90 ([0-9.]+ ms) +([0-9-]+) `)
	fencedRE   = regexp.MustCompile(`\(fencing token\): ([0-9]+)`)
)

// figures are the numbers the README and the summary quote, by name.
type figures map[string]string

// read returns the report's figures and hand-overs; the first missing line
// is the error.
func read(r *KeptReport) (figures, [][]string, error) {
	f := figures{}
	get := func(prefix, s string, re *regexp.Regexp, names ...string) error {
		m, err := r.find(prefix, s, re)
		if err != nil {
			return err
		}
		for i, n := range names {
			f[n] = m[i]
		}
		return nil
	}
	for _, g := range []struct {
		prefix, s string
		re        *regexp.Regexp
		names     []string
	}{
		{"graceful handoff", "(n=", crashRE, []string{"h50", "hmax", "hn"}},
		{"graceful handoff", "(n=", distRE, []string{"", "h90"}},
		{"Curator 5.4", "(n=", distRE, []string{"c50", "c90", "cmax", "cn"}},
		{"ZooKeeper floor in the same rounds", "delete -> watch", floorRE, []string{"fwatch", "fread"}},
		{"ZooKeeper floor in the same rounds", "ratios", ratioRE, []string{"ratio"}},
		{"crash failover", "(n=", crashRE, []string{"k50", "kmax", "kn"}},
		{"crash failover", "negotiated", boundRE, []string{"ktimeout", "ktick", "kbound"}},
		{"idle ZooKeeper load", "electd:", idleRE, []string{"ileader", "isucc", "ifollower"}},
		{"idle ZooKeeper load", "Curator", curIdleRE, []string{"icurator"}},
		{"idle electd over", "(log level info)", rssRE, []string{"rssl", "cpul", "rssf", "cpuf"}},
		{"idle electd over", "/healthz/leader", healthRE, []string{"hconns", "hdur", "hrate", "hp99", "hcores", "hnon200"}},
		{"forwarding proxy", "through every proxy", rateRE, []string{"frate", "fsession", "fhold"}},
		{"forwarding proxy", "(fencing token)", fencedRE, []string{"fenced"}},
	} {
		if err := get(g.prefix, g.s, g.re, g.names...); err != nil {
			return nil, nil, err
		}
	}
	delete(f, "")
	p, err := r.para("forwarding proxy")
	if err != nil {
		return nil, nil, err
	}
	for _, l := range p {
		if m := pathRE.FindStringSubmatch(l); m != nil && m[5] != "" {
			f[m[1]+" "+m[2]] = m[5]
			f[m[1]+" "+m[2]+" hop"] = m[6]
		}
	}
	s, err := r.para("scale,")
	if err != nil {
		return nil, nil, err
	}
	// The largest election of the scale section (the two-participant
	// baseline aside) and its many small elections.
	biggest := 2
	for _, l := range s {
		m := scaleRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var n int
		fmt.Sscan(m[1], &n)
		switch {
		case m[2] == "in one election" && n > biggest:
			biggest = n
			f["oneN"], f["one p50"], f["one p90"], f["one req"] = thousands(n), m[4], m[5], m[6]
		case m[2] == "elections of 3":
			f["manyN"], f["many p50"], f["many p90"] = thousands(n), m[4], m[5]
		}
	}
	for _, k := range []string{"GET electd: the leader's proxy", "GET electd: a follower's, then the leader's", "GET bare ReverseProxy, one hop", "GET HAProxy, one hop",
		"POST electd: the leader's proxy", "POST electd: a follower's, then the leader's", "one p50", "many p50"} {
		if f[k] == "" {
			return nil, nil, fmt.Errorf("%s: no figure for %q", r.Path, k)
		}
	}
	hs, err := handovers(r)
	return f, hs, err
}

// handovers are the forward section's hand-over lines: kind, lost per
// round, requests, rounds.
func handovers(r *KeptReport) ([][]string, error) {
	p, err := r.para("forwarding proxy")
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, l := range p {
		if m := handoverRE.FindStringSubmatch(l); m != nil {
			out = append(out, m[1:])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no hand-over lines", r.Path)
	}
	return out, nil
}

// lostSum adds a round list "0 1 0".
func lostSum(s string) int {
	n := 0
	for _, f := range strings.Fields(s) {
		var x int
		fmt.Sscan(f, &x)
		n += x
	}
	return n
}

// compare says how a ratio a/b reads.
func compare(ratio string) string {
	var x float64
	fmt.Sscan(ratio, &x)
	switch {
	case x < 1:
		return "below"
	case x > 1:
		return "above"
	}
	return "equal to"
}

func renderSummary(r *KeptReport) (string, error) {
	f, hs, err := read(r)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| measured | in this run |\n|---|---|\n")
	row := func(what, format string, args ...any) {
		fmt.Fprintf(&b, "| %s | %s |\n", what, fmt.Sprintf(format, args...))
	}
	row("graceful handoff, electd processes over HTTP, `election.handoff: next` (SIGTERM to the leader until the next one's `/healthz/leader?wait=` answers 200)",
		"p50 %s, p90 %s, max %s (n=%s)", f["h50"], f["h90"], f["hmax"], f["hn"])
	row("Curator 5.4 `LeaderLatch` in one JVM, the same rounds (`close()` until the next `isLeader()`)", "p50 %s, p90 %s, max %s (n=%s)", f["c50"], f["c90"], f["cmax"], f["cn"])
	row("electd p50 / Curator p50", "%s: electd's median %s Curator's in this run", f["ratio"], compare(f["ratio"]))
	row("ZooKeeper's floor in the same rounds: a delete, the other client's watch, its getChildren answered", "%s", f["fread"])
	row(fmt.Sprintf("SIGKILL of the leader, session timeout %s, tickTime %s, until the next one answers 200", f["ktimeout"], f["ktick"]),
		"p50 %s, max %s (n=%s); bound (timeout + 1.5 x tickTime + 100 ms) %s", f["k50"], f["kmax"], f["kn"], f["kbound"])
	row("idle ZooKeeper packets a second per session", "electd leader %s, successor %s, other followers %s each; Curator `LeaderLatch` %s each", f["ileader"], f["isucc"], f["ifollower"], f["icurator"])
	row("idle electd, log level info", "leader RSS %s, CPU %s of a core; follower RSS %s, CPU %s", f["rssl"], f["cpul"], f["rssf"], f["cpuf"])
	row(fmt.Sprintf("`/healthz/leader` on the leader, %s keep-alive connections for %s", f["hconns"], f["hdur"]), "%s requests/s, p99 %s, %s cores; non-200: %s", f["hrate"], f["hp99"], f["hcores"], f["hnon200"])
	for _, m := range []string{"GET", "POST"} {
		row(fmt.Sprintf("forwarding proxy, %ss one at a time on loopback: p50 minus the direct p50 (a difference of medians)", m),
			"leader's proxy (one hop) %s; a follower's, then the leader's (two hops) %s", f[m+" electd: the leader's proxy"], f[m+" electd: a follower's, then the leader's"])
	}
	row("the same for a bare `httputil.ReverseProxy` and HAProxy, one hop (GET)", "%s and %s", f["GET bare ReverseProxy, one hop"], f["GET HAProxy, one hop"])
	for _, h := range hs {
		row(fmt.Sprintf("forwarding proxy, %s requests/s (GETs and POSTs) through every proxy: %s", f["frate"], h[0]), "lost %d of %s requests in %s rounds (per round: %s)", lostSum(h[1]), h[2], h[3], h[1])
	}
	row("requests an application saw from a participant that did not lead", "%s", f["fenced"])
	row(fmt.Sprintf("handoff in one election of %s in-process participants (`Resign` until `Await`)", f["oneN"]), "p50 %s, p90 %s; %s ZooKeeper requests per change (median)", f["one p50"], f["one p90"], f["one req"])
	row(fmt.Sprintf("handoff in %s elections of 3, in-process", f["manyN"]), "p50 %s, p90 %s", f["many p50"], f["many p90"])
	return b.String(), nil
}

func renderForward(r *KeptReport) (string, error) {
	p, err := r.para("forwarding proxy")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("One request at a time on a kept-alive connection; the cost of a path is its median minus the direct path's (a difference of medians, not a median of differences):\n\n")
	b.WriteString("| method | path | p50 | p99 | p50 minus direct p50 | per hop |\n|---|---|---|---|---|---|\n")
	n := 0
	for _, l := range p {
		if m := pathRE.FindStringSubmatch(l); m != nil {
			add, hop := m[5], m[6]
			if add == "" {
				add, hop = "-", "-"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", m[1], m[2], m[3], m[4], add, hop)
			n++
		}
	}
	b.WriteString("\nAt saturation, CPU of the path's proxy processes per request answered:\n\n")
	b.WriteString("| method | path | requests/s | p50 | p99 | proxy CPU | CPU/request | non-200 |\n|---|---|---|---|---|---|---|---|\n")
	for _, l := range p {
		if m := satRE.FindStringSubmatch(l); m != nil {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(m[1:], " | "))
			n++
		}
	}
	if n == 0 {
		return "", fmt.Errorf("%s: no forward paths", r.Path)
	}
	return b.String(), nil
}

func renderPerformance(r *KeptReport) (string, error) {
	f, hs, err := read(r)
	if err != nil {
		return "", err
	}
	var graceful, crash []string
	for _, h := range hs {
		s := fmt.Sprintf("%s %d of %s", h[0], lostSum(h[1]), h[2])
		if strings.HasPrefix(h[0], "SIGKILL") {
			crash = append(crash, s)
		} else {
			graceful = append(graceful, s)
		}
	}
	return fmt.Sprintf("From the kept run of `make bench` ([%s](%s): its commit, machine and load are in its\n"+
		"head; [BENCHMARKS.md](BENCHMARKS.md) has the method and every table), ZooKeeper 3.8 on loopback. A\n"+
		"graceful handoff between electd processes (SIGTERM to the leader until the next one's\n"+
		"`/healthz/leader?wait=` answers 200, over HTTP, `election.handoff: next`) took p50 %s, p90 %s\n"+
		"(n=%s). Apache Curator 5.4's `LeaderLatch` handing over inside one JVM took p50 %s, p90 %s in the\n"+
		"same rounds: electd's median was %s Curator's in this run (ratio %s), and ZooKeeper's own floor\n"+
		"of a delete, a watch and one read was %s. After a SIGKILL of the leader (session timeout %s)\n"+
		"the next leader answered after p50 %s, max %s. Idle, a follower that is not the successor sent\n"+
		"ZooKeeper packets at %s (a Curator participant at %s); an idle electd held %s (leader) and %s\n"+
		"(follower) of RSS and used %s and %s of a core; `/healthz/leader` answered %s requests a second over %s\n"+
		"keep-alive connections (p99 %s). Every follower reads the new leader's node on each change, so\n"+
		"a change costs one read per participant: in one election of %s in-process participants a\n"+
		"handoff took p50 %s.\n\n"+
		"The forwarding proxy, one request at a time on loopback, raised a GET's median by %s through the\n"+
		"leader's proxy (one hop) and by %s through a follower's (two hops, as a Service sends most\n"+
		"requests with three replicas); for a POST, %s and %s. These are differences of medians; in the\n"+
		"same run HAProxy adds %s for one hop and a bare `httputil.ReverseProxy` %s (GET). Requests\n"+
		"lost under %s requests a second of GETs\n"+
		"and POSTs through every proxy, over all rounds: graceful hand-overs, %s; not graceful, %s.",
		r.Path, r.Path, f["h50"], f["h90"], f["hn"], f["c50"], f["c90"], compare(f["ratio"]), f["ratio"], f["fread"], f["ktimeout"],
		f["k50"], f["kmax"], f["ifollower"], f["icurator"], f["rssl"], f["rssf"], f["cpul"], f["cpuf"], f["hrate"], f["hconns"], f["hp99"],
		f["oneN"], f["one p50"],
		f["GET electd: the leader's proxy"], f["GET electd: a follower's, then the leader's"],
		f["POST electd: the leader's proxy"], f["POST electd: a follower's, then the leader's"],
		f["GET HAProxy, one hop"], f["GET bare ReverseProxy, one hop"], f["frate"], strings.Join(graceful, "; "), strings.Join(crash, "; ")), nil
}

// renderLosses quotes the forward section from its hand-overs on: what
// each hand-over and each fault cost the clients.
func renderLosses(r *KeptReport) (string, error) {
	p, err := r.para("forwarding proxy")
	if err != nil {
		return "", err
	}
	for i, l := range p {
		if strings.Contains(l, "requests lost per hand-over") {
			return fmt.Sprintf("From [%s](%s), as printed:\n\n```text\n%s\n```", r.Path, r.Path, strings.Join(p[i:], "\n")), nil
		}
	}
	return "", fmt.Errorf("%s: no hand-over lines", r.Path)
}

// thousands prints n with a comma every three digits, as the docs do.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
