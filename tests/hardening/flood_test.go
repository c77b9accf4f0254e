package hardening

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/electd/electd/internal/config"
	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/wait"
	"github.com/electd/electd/tests/zktest"
)

// The floods of issue 14 against the real binary on a real ZooKeeper, with
// GOMEMLIMIT as deploy/k8s/app.yaml ships it. What the design promises,
// and what each flood checks:
//   - open HTTP connections stay at http.max_connections (256): electd's
//     file descriptors stay within that many of its count before the flood;
//   - peak RSS (VmHWM) stays under the container's memory limit (64 MiB);
//   - every probe (/healthz, /healthz/leader, /readyz, /metrics, each on a
//     new connection as the kubelet makes them) answers what it should,
//     200 or 503, throughout; the leader keeps its session.
//
// The floods of issue 37 aim at the leader's forwarding proxy instead:
// its client port (proxy.listen) and its peer port (proxy.peer_listen,
// mutual TLS, so the attacker never completes a handshake), with the
// memory limit and GOMEMLIMIT of deploy/k8s-proxy. They check the same,
// with the fds within proxy.max_connections + proxy.max_peer_connections
// + 32 (the application's connections among them), and a GET through
// each participant's proxy answered 200 by the leader's application in
// every round: the follower's goes through the flooded peer port.
//
// The sizes are the issues' repros. Each flood is held, once in place,
// until -flood.rounds rounds of the probes have been answered (or
// failed) under it; its connections then close. `go test -v -run
// TestFloods ./tests/hardening` prints the figures.
var floodRounds = flag.Int("flood.rounds", 25, "probe rounds each flood of TestFloods is held for")

func parseElectdMemoryLimit(t *testing.T, manifest []byte) int64 {
	t.Helper()
	if q, ok := electdContainer(t, manifest).Resources.Limits["memory"]; ok {
		return q.Value()
	}
	t.Fatal("the manifest sets no memory limit on the electd container")
	return 0
}

// electdContainer is the manifest's electd container (an init container,
// a sidecar), or an empty one.
func electdContainer(t *testing.T, manifest []byte) corev1.Container {
	t.Helper()
	var d appsv1.Deployment
	if err := yaml.Unmarshal(manifest, &d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.InitContainers {
		if c.Name == "electd" {
			return c
		}
	}
	return corev1.Container{}
}

// procStat reads a field of /proc/<pid>/status in bytes (VmRSS, VmHWM).
func procStat(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

func openFDs(pid int) int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(es)
}

// prober asks p's probes every few milliseconds, each on a new connection
// with the readiness probe's 1 s timeout raised to 10 s (a slower answer is
// reported, not failed: the machine is shared), and samples p's fds. With
// proxies it also sends a GET through each of those proxy.listen
// addresses, which the leader's application must answer 200.
type prober struct {
	p        *electdtest.Member
	leader   bool
	proxies  []string
	perRound int // probes in a round
	stop     chan struct{}
	done     chan struct{}

	mu               sync.Mutex // the figures below, read while it runs
	rounds, failures int
	firstFailure     string
	slowest          time.Duration
	maxFDs           int
	maxRSS           int64
}

func startProber(p *electdtest.Member, leader bool, proxies ...string) *prober {
	pr := &prober{p: p, leader: leader, proxies: proxies, perRound: 4 + len(proxies), stop: make(chan struct{}), done: make(chan struct{})}
	go pr.run()
	return pr
}

// probeClient asks each request on a new connection, as the kubelet does.
func probeClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
}

// get asks client for url and returns the status, or 0 and the error.
func get(client *http.Client, url string) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (pr *prober) run() {
	defer close(pr.done)
	client := probeClient()
	leaderCode := http.StatusServiceUnavailable
	if pr.leader {
		leaderCode = http.StatusOK
	}
	type probe struct {
		url  string
		code int
	}
	probes := []probe{{pr.p.Addr + "/healthz", 200}, {pr.p.Addr + "/healthz/leader", leaderCode}, {pr.p.Addr + "/readyz", 200}, {pr.p.Addr + "/metrics", 200}}
	for _, addr := range pr.proxies {
		probes = append(probes, probe{addr + "/through", 200})
	}
	for {
		select {
		case <-pr.stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		for _, pb := range probes {
			start := time.Now()
			code, err := get(client, "http://"+pb.url)
			pr.record(pb.url, pb.code, code, err, time.Since(start))
		}
		pid := pr.p.Pid()
		fds, rss := openFDs(pid), procStat(pid, "VmRSS")
		pr.mu.Lock()
		pr.rounds++
		pr.maxFDs, pr.maxRSS = max(pr.maxFDs, fds), max(pr.maxRSS, rss)
		pr.mu.Unlock()
	}
}

func (pr *prober) record(url string, want, code int, err error, took time.Duration) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.slowest = max(pr.slowest, took)
	if code != want {
		pr.failures++
		if pr.firstFailure == "" {
			pr.firstFailure = fmt.Sprintf("%s: %d %v, want %d", url, code, err, want)
		}
	}
}

func (pr *prober) roundsDone() int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.rounds
}

func (pr *prober) finish() {
	close(pr.stop)
	<-pr.done
}

// attacker holds the connections of one flood and closes them with a
// reset (no TIME_WAIT left on this side to exhaust the ports).
type attacker struct {
	mu      sync.Mutex
	conns   []net.Conn
	dialErr int
}

func (a *attacker) add(c net.Conn) {
	a.mu.Lock()
	a.conns = append(a.conns, c)
	a.mu.Unlock()
}

func (a *attacker) closeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
	a.conns = nil
}

// attackerAddr is where the floods come from: another address than the
// probes' 127.0.0.1, as an attacker on the pod network has another address
// than the kubelet on the node.
var attackerAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}

// hold dials n connections (from 8 dialers) and sends each req, if any.
func (a *attacker) hold(addr string, n int, req string) {
	var wg sync.WaitGroup
	per := n / 8
	for range 8 {
		wg.Go(func() {
			d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: attackerAddr}
			for range per {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					a.mu.Lock()
					a.dialErr++
					a.mu.Unlock()
					continue
				}
				if req != "" {
					_, _ = io.WriteString(c, req) // evicted already: fine
				}
				a.add(c)
			}
		})
	}
	wg.Wait()
}

// slowHeaders has conns connections each send up to 1 MiB of one header,
// 1 KiB every 50 ms, reconnecting whenever the server closes one, until stop.
func slowHeaders(addr string, conns int, stop <-chan struct{}) {
	trickle(addr, conns, "GET /healthz HTTP/1.1\r\nHost: electd\r\nX-Pad: ", []byte(strings.Repeat("a", 1<<10)), 1<<20, stop)
}

// trickle has conns connections each send head, then chunk every 50 ms
// until total bytes of chunks are sent, reconnecting whenever the server
// closes one, until stop.
func trickle(addr string, conns int, head string, chunk []byte, total int, stop <-chan struct{}) {
	var wg sync.WaitGroup
	d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: attackerAddr}
	for range conns {
		wg.Go(func() {
			for {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					return
				}
				_, err = io.WriteString(c, head)
				for sent := 0; err == nil && sent < total; sent += len(chunk) {
					select {
					case <-stop:
						c.(*net.TCPConn).SetLinger(0)
						c.Close()
						return
					case <-time.After(50 * time.Millisecond):
					}
					_, err = c.Write(chunk)
				}
				c.Close()
			}
		})
	}
	wg.Wait()
}

type floodFigures struct {
	name              string
	rssBefore         int64
	hwm, maxRSS       int64
	fdsBefore, maxFDs int
	probes, failures  int
	slowest           time.Duration
	evicted, refused  float64
}

// What the floods on the proxy's ports send (docs/design/proxy.md, "Forwarding"):
// requests the application answers, pipelined, each with a header of 8
// KiB (a quarter of proxy.max_header_bytes); bytes that are no TLS record
// (an h2c preface and noise, as a peer without the key might send); and
// the start of a 512-byte TLS record holding a ClientHello, whose rest
// trickle sends a byte every 50 ms.
var (
	pipelined   = "GET /pipelined HTTP/1.1\r\nHost: app\r\nX-Pad: " + strings.Repeat("a", 8<<10) + "\r\n\r\n"
	peerGarbage = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + strings.Repeat("\xde\xad\xbe\xef", 1<<10)
	slowHello   = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc"
)

// The port a flood is aimed at.
type port int

const (
	apiPort   port = iota // http.addr
	proxyPort             // proxy.listen
	peerPort              // proxy.peer_listen
)

func TestFloods(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a real electd; skipped with -short")
	}
	bin := electdtest.Plain(t)
	zk := zktest.Standalone(t)
	limit := memoryLimit(t)
	px := proxyFlavour(t)
	maxConns := config.Defaults().HTTP.MaxConnections
	proxyConns, peerConns := config.Defaults().Proxy.MaxConnections, config.Defaults().Proxy.MaxPeerConnections
	var figures []floodFigures
	t.Cleanup(func() {
		t.Logf("GOMEMLIMIT=%d (app.yaml), max_connections %d", limit, maxConns)
		t.Logf("proxy: GOMEMLIMIT=%s, memory limit %d (k8s-proxy), proxy.max_connections %d, proxy.max_peer_connections %d",
			px.gomemlimit, px.limit, proxyConns, peerConns)
		t.Logf("%-48s %10s %9s %9s %11s %7s %7s %8s %8s %8s", "flood", "RSS before", "VmHWM", "max RSS", "fds bef/max",
			"probes", "failed", "slowest", "evicted", "refused")
		mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
		for _, f := range figures {
			t.Logf("%-48s %10s %9s %9s %5d/%-5d %7d %7d %8s %8.0f %8.0f", f.name, mib(f.rssBefore), mib(f.hwm), mib(f.maxRSS),
				f.fdsBefore, f.maxFDs, f.probes, f.failures, f.slowest.Round(time.Millisecond), f.evicted, f.refused)
		}
	})

	floods := []struct {
		name     string
		port     port
		follower bool // flood the follower (waits return at once on a leader)
		// attack puts the flood in place and returns; what it started
		// lasts until stop is closed or the attacker's connections are.
		attack func(addr string, a *attacker, stop <-chan struct{})
	}{
		{"300 conns x 1 MiB slow headers", apiPort, false, func(addr string, _ *attacker, stop <-chan struct{}) {
			go slowHeaders(addr, 300, stop)
		}},
		{"8000 /events streams", apiPort, false, func(addr string, a *attacker, _ <-chan struct{}) {
			a.hold(addr, 8000, "GET /events HTTP/1.1\r\nHost: electd\r\n\r\n")
		}},
		{"8000 /healthz/leader?wait=5m (follower)", apiPort, true, func(addr string, a *attacker, _ <-chan struct{}) {
			a.hold(addr, 8000, "GET /healthz/leader?wait=5m HTTP/1.1\r\nHost: electd\r\n\r\n")
		}},
		{"18000 idle connections", apiPort, false, func(addr string, a *attacker, _ <-chan struct{}) {
			a.hold(addr, 18000, "")
		}},
		{"proxy: 300 conns x 1 MiB slow headers", proxyPort, false, func(addr string, _ *attacker, stop <-chan struct{}) {
			go slowHeaders(addr, 300, stop)
		}},
		{"proxy: 4000 idle connections", proxyPort, false, func(addr string, a *attacker, _ <-chan struct{}) {
			a.hold(addr, 4000, "")
		}},
		{"proxy: 200 conns x 50 pipelined 8 KiB GETs", proxyPort, false, func(addr string, a *attacker, _ <-chan struct{}) {
			a.hold(addr, 200, strings.Repeat(pipelined, 50))
		}},
		{"peer: 2000 silent connections", peerPort, false, func(addr string, a *attacker, _ <-chan struct{}) {
			a.hold(addr, 2000, "")
		}},
		{"peer: 2000 conns of garbage", peerPort, false, func(addr string, a *attacker, _ <-chan struct{}) {
			a.hold(addr, 2000, peerGarbage)
		}},
		{"peer: 300 conns x slow TLS hello", peerPort, false, func(addr string, _ *attacker, stop <-chan struct{}) {
			go trickle(addr, 300, slowHello, []byte{0}, 1<<9, stop)
		}},
	}
	for i, fl := range floods {
		t.Run(fl.name, func(t *testing.T) {
			mem, env, fdCap := limit, "GOMEMLIMIT="+strconv.FormatInt(limit, 10), maxConns+8
			if fl.port != apiPort {
				mem, env, fdCap = px.limit, "GOMEMLIMIT="+px.gomemlimit, proxyConns+peerConns+32
			}
			pp := startPair(t, bin, zk, fmt.Sprintf("/flood/%d", i), fl.port != apiPort, env)
			ps := pp.ps
			electdtest.WaitOK(t, "/readyz", 20*time.Second, ps...)
			leader := electdtest.OneLeader(t, ps, 15*time.Second)
			pp.waitProxies(t)
			target := leader
			if fl.follower {
				target = electdtest.Others(ps, leader)[0]
			}
			pid := target.Pid()
			fig := floodFigures{name: fl.name, fdsBefore: openFDs(pid), rssBefore: procStat(pid, "VmRSS")}
			leaderProbe := startProber(leader, true, pp.proxies...)
			pr := leaderProbe
			if target != leader {
				pr = startProber(target, false)
			}

			a := &attacker{}
			stop := make(chan struct{})
			fl.attack(pp.addr(target, fl.port), a, stop)
			from := pr.roundsDone()
			wait.For(t, 5*time.Minute, fmt.Sprintf("%d probe rounds under the flood", *floodRounds), func() bool {
				return pr.roundsDone() >= from+*floodRounds
			})
			pr.finish()
			if pr != leaderProbe {
				leaderProbe.finish()
			}
			fig.hwm = procStat(pid, "VmHWM")
			fig.evicted, fig.refused = turnedAway(target, fl.port)
			close(stop)
			a.closeAll()
			fig.maxRSS, fig.maxFDs, fig.probes, fig.failures, fig.slowest = pr.maxRSS, pr.maxFDs, pr.rounds*pr.perRound, pr.failures, pr.slowest
			figures = append(figures, fig)

			if pr.rounds == 0 {
				t.Fatal("no probe round completed during the flood")
			}
			for _, p := range []*prober{pr, leaderProbe} {
				if p.failures > 0 {
					t.Errorf("%s: %d of %d probes failed during the flood; first: %s", p.p.Name, p.failures, p.rounds*p.perRound, p.firstFailure)
				}
			}
			if fig.hwm <= 0 || fig.hwm >= mem {
				t.Errorf("peak RSS %d bytes, want under the memory limit %d", fig.hwm, mem)
			}
			if bound := fig.fdsBefore + fdCap; fig.maxFDs > bound {
				t.Errorf("%d fds open during the flood, want at most %d (%d before + the connection caps and a margin)", fig.maxFDs, bound, fig.fdsBefore)
			}
			// What the flood opened goes once the attacker is gone.
			wait.For(t, 30*time.Second, "the target's descriptors back within 16 of before the flood", func() bool {
				return openFDs(pid) <= fig.fdsBefore+16
			})
			if exp, err := leader.MetricValue("electd_zk_session_expirations_total"); err != nil || exp != 0 {
				t.Errorf("the leader's session expirations = %v %v, want 0", exp, err)
			}
			if !leader.Leads() {
				t.Error("the leader no longer leads after the flood")
			}
			for _, p := range ps {
				p.Send(syscall.SIGTERM)
				if status := electdtest.ExitStatus(p.WaitExit(15 * time.Second)); status != 0 {
					t.Errorf("%s: exit status %d after the flood and SIGTERM", p.Name, status)
				}
			}
		})
	}
}

// turnedAway reads what target counted evicted and refused on the port.
func turnedAway(target *electdtest.Member, p port) (evicted, refused float64) {
	if p != apiPort {
		evicted, _ = target.MetricValue("electd_proxy_connections_total", "result", "evicted")
		refused, _ = target.MetricValue("electd_proxy_connections_total", "result", "refused")
		return evicted, refused
	}
	evicted, _ = target.MetricValue("electd_http_connections_evicted_total")
	for _, reason := range []string{"streams", "waiters"} {
		n, _ := target.MetricValue("electd_http_requests_refused_total", "reason", reason)
		refused += n
	}
	return evicted, refused
}
