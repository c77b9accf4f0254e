package hardening

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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
// The sizes are the repros. Each flood is held, once in place,
// until -flood.rounds rounds of the four probes have been answered (or
// failed) under it. `go test -v -run TestFloods ./tests/hardening` prints the
// figures.
var floodRounds = flag.Int("flood.rounds", 25, "probe rounds each flood of TestFloods is held for")

func parseElectdMemoryLimit(t *testing.T, manifest []byte) int64 {
	t.Helper()
	var d appsv1.Deployment
	if err := yaml.Unmarshal(manifest, &d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.InitContainers {
		if c.Name == "electd" {
			if q, ok := c.Resources.Limits["memory"]; ok {
				return q.Value()
			}
		}
	}
	t.Fatal("app.yaml: no memory limit on the electd container")
	return 0
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
// reported, not failed: the machine is shared), and samples p's fds.
type prober struct {
	p      *electdtest.Member
	leader bool
	stop   chan struct{}
	done   chan struct{}

	mu               sync.Mutex // the figures below, read while it runs
	rounds, failures int
	firstFailure     string
	slowest          time.Duration
	maxFDs           int
	maxRSS           int64
}

func startProber(p *electdtest.Member, leader bool) *prober {
	pr := &prober{p: p, leader: leader, stop: make(chan struct{}), done: make(chan struct{})}
	go pr.run()
	return pr
}

func (pr *prober) run() {
	defer close(pr.done)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	leaderCode := http.StatusServiceUnavailable
	if pr.leader {
		leaderCode = http.StatusOK
	}
	probes := []struct {
		path string
		code int
	}{{"/healthz", 200}, {"/healthz/leader", leaderCode}, {"/readyz", 200}, {"/metrics", 200}}
	for {
		select {
		case <-pr.stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		for _, pb := range probes {
			start := time.Now()
			resp, err := client.Get("http://" + pr.p.Addr + pb.path)
			code := 0
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				code = resp.StatusCode
			}
			pr.record(pb.path, pb.code, code, err, time.Since(start))
		}
		pid := pr.p.Pid()
		fds, rss := openFDs(pid), procStat(pid, "VmRSS")
		pr.mu.Lock()
		pr.rounds++
		pr.maxFDs, pr.maxRSS = max(pr.maxFDs, fds), max(pr.maxRSS, rss)
		pr.mu.Unlock()
	}
}

func (pr *prober) record(path string, want, code int, err error, took time.Duration) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.slowest = max(pr.slowest, took)
	if code != want {
		pr.failures++
		if pr.firstFailure == "" {
			pr.firstFailure = fmt.Sprintf("%s: %d %v, want %d", path, code, err, want)
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
	var wg sync.WaitGroup
	chunk := []byte(strings.Repeat("a", 1<<10))
	d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: attackerAddr}
	for range conns {
		wg.Go(func() {
			for {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					return
				}
				_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: electd\r\nX-Pad: ")
				for sent := 0; err == nil && sent < 1<<20; sent += len(chunk) {
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
	rounds, failures  int
	slowest           time.Duration
	evicted, refused  float64
}

func TestFloods(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a real electd; skipped with -short")
	}
	bin := electdtest.Plain(t)
	zk := zktest.Standalone(t)
	limit := memoryLimit(t)
	maxConns := config.Defaults().HTTP.MaxConnections
	var figures []floodFigures
	t.Cleanup(func() {
		t.Logf("GOMEMLIMIT=%d (app.yaml), max_connections %d", limit, maxConns)
		t.Logf("%-40s %10s %9s %9s %11s %7s %7s %8s %8s %8s", "flood", "RSS before", "VmHWM", "max RSS", "fds bef/max",
			"probes", "failed", "slowest", "evicted", "refused")
		mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
		for _, f := range figures {
			t.Logf("%-40s %10s %9s %9s %5d/%-5d %7d %7d %8s %8.0f %8.0f", f.name, mib(f.rssBefore), mib(f.hwm), mib(f.maxRSS),
				f.fdsBefore, f.maxFDs, f.rounds*4, f.failures, f.slowest.Round(time.Millisecond), f.evicted, f.refused)
		}
	})

	floods := []struct {
		name     string
		follower bool // flood the follower (waits return at once on a leader)
		// attack puts the flood in place and returns; what it started
		// lasts until stop is closed or the attacker's connections are.
		attack func(addr string, a *attacker, stop <-chan struct{})
	}{
		{"300 conns x 1 MiB slow headers", false, func(addr string, _ *attacker, stop <-chan struct{}) {
			go slowHeaders(addr, 300, stop)
		}},
		{"8000 /events streams", false, func(addr string, a *attacker, _ <-chan struct{}) {
			a.hold(addr, 8000, "GET /events HTTP/1.1\r\nHost: electd\r\n\r\n")
		}},
		{"8000 /healthz/leader?wait=5m (follower)", true, func(addr string, a *attacker, _ <-chan struct{}) {
			a.hold(addr, 8000, "GET /healthz/leader?wait=5m HTTP/1.1\r\nHost: electd\r\n\r\n")
		}},
		{"18000 idle connections", false, func(addr string, a *attacker, _ <-chan struct{}) {
			a.hold(addr, 18000, "")
		}},
	}
	for i, fl := range floods {
		t.Run(fl.name, func(t *testing.T) {
			path := fmt.Sprintf("/flood/%d", i)
			var ps []*electdtest.Member
			for _, id := range []string{"p0", "p1"} {
				addr := electdtest.MustFreeAddr(t)
				log := filepath.Join(t.TempDir(), id+".log")
				f, err := os.Create(log)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				ps = append(ps, startBin(t, bin, id, addr, log, f, electdtest.MemberArgs(zk, path, id, "latch", addr),
					[]string{"GOMEMLIMIT=" + strconv.FormatInt(limit, 10)}))
			}
			electdtest.WaitOK(t, "/readyz", 20*time.Second, ps...)
			leader := electdtest.OneLeader(t, ps, 15*time.Second)
			target := leader
			if fl.follower {
				target = electdtest.Others(ps, leader)[0]
			}
			pid := target.Pid()
			fig := floodFigures{name: fl.name, fdsBefore: openFDs(pid), rssBefore: procStat(pid, "VmRSS")}
			leaderProbe := startProber(leader, true)
			pr := leaderProbe
			if target != leader {
				pr = startProber(target, false)
			}

			a := &attacker{}
			stop := make(chan struct{})
			fl.attack(target.Addr, a, stop)
			from := pr.roundsDone()
			wait.For(t, 5*time.Minute, fmt.Sprintf("%d probe rounds under the flood", *floodRounds), func() bool {
				return pr.roundsDone() >= from+*floodRounds
			})
			pr.finish()
			if pr != leaderProbe {
				leaderProbe.finish()
			}
			fig.hwm = procStat(pid, "VmHWM")
			fig.evicted, _ = target.MetricValue("electd_http_connections_evicted_total")
			for _, reason := range []string{"streams", "waiters"} {
				n, _ := target.MetricValue("electd_http_requests_refused_total", "reason", reason)
				fig.refused += n
			}
			close(stop)
			a.closeAll()
			fig.maxRSS, fig.maxFDs, fig.rounds, fig.failures, fig.slowest = pr.maxRSS, pr.maxFDs, pr.rounds, pr.failures, pr.slowest
			figures = append(figures, fig)

			if pr.rounds == 0 {
				t.Fatal("no probe round completed during the flood")
			}
			for _, p := range []*prober{pr, leaderProbe} {
				if p.failures > 0 {
					t.Errorf("%s: %d of %d probes failed during the flood; first: %s", p.p.Name, p.failures, p.rounds*4, p.firstFailure)
				}
			}
			if fig.hwm <= 0 || fig.hwm >= limit {
				t.Errorf("peak RSS %d bytes, want under the memory limit %d", fig.hwm, limit)
			}
			if bound := fig.fdsBefore + maxConns + 8; fig.maxFDs > bound {
				t.Errorf("%d fds open during the flood, want at most %d (%d before + max_connections + 8)", fig.maxFDs, bound, fig.fdsBefore)
			}
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
