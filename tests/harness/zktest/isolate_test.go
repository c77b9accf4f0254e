package zktest

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/wait"
)

// peerConns looks at every established connection to a server's real quorum or election
// port and reports how many were opened by this process (the peer proxies) and which were
// opened by someone else (a JVM talking to a peer directly, bypassing the proxies).
func peerConns(t *testing.T, e *Ensemble) (proxied int, direct []string) {
	t.Helper()
	peerPorts := map[int]string{}
	for _, m := range e.Members() {
		peerPorts[m.quorum.port] = m.String() + " quorum port"
		peerPorts[m.election.port] = m.String() + " election port"
	}
	own := map[string]bool{}
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			own[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Skipf("cannot read /proc/net/tcp: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Scan() // header
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 10 || fields[3] != "01" { // ESTABLISHED
			continue
		}
		rem := fields[2]
		port, err := strconv.ParseInt(rem[strings.IndexByte(rem, ':')+1:], 16, 32)
		if err != nil {
			continue
		}
		what, ok := peerPorts[int(port)]
		if !ok {
			continue
		}
		if own[fields[9]] {
			proxied++
		} else {
			direct = append(direct, "a connection to "+what)
		}
	}
	return proxied, direct
}

func TestIsolate(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Servers: 3, PeerProxies: true})

	// Every peer connection crosses a proxy, election connect-backs included.
	proxied, direct := peerConns(t, e)
	if len(direct) > 0 || proxied == 0 {
		t.Fatalf("%d proxied peer connections; direct ones: %v", proxied, direct)
	}

	old := e.Leader()
	if old == nil {
		t.Fatal("no leader")
	}
	start := time.Now()
	e.Isolate(old)
	var newLeader *Member
	wait.For(t, 20*time.Second, "the other two servers to elect a new leader", func() bool {
		newLeader = nil
		followers := 0
		for _, m := range e.Members() {
			if m == old {
				continue
			}
			switch m.Mode() {
			case "leader":
				newLeader = m
			case "follower":
				followers++
			}
		}
		return newLeader != nil && followers == 1 && old.Mode() != "leader"
	})
	t.Logf("isolated the leader, %v; %v leads after %v", old, newLeader, time.Since(start))

	// The isolated server stays out while the partition lasts, though its JVM runs and its
	// client port answers.
	syncTime := time.Duration(e.Options().SyncLimit) * e.TickTime()
	never(t, syncTime, "the isolated server serves", func() bool {
		m := old.Mode()
		return m == "leader" || m == "follower"
	})
	if out, err := old.FourLetter("ruok"); err != nil || out != "imok" || !old.Running() {
		t.Fatalf("isolated server: ruok = %q, %v; Running() = %v", out, err, old.Running())
	}
	if e.Leader() != newLeader {
		t.Fatalf("Leader() = %v, want %v", e.Leader(), newLeader)
	}

	start = time.Now()
	e.Rejoin(old)
	waitReady(t, e)
	t.Logf("rejoined after %v", time.Since(start))
	if got := old.Mode(); got != "follower" {
		t.Fatalf("rejoined server is %q, want follower", got)
	}

	// An isolated follower loses its leader; the other two carry on.
	leader := e.Leader()
	follower := old
	start = time.Now()
	e.Isolate(follower)
	wait.For(t, 20*time.Second, "the isolated follower to stop serving", func() bool { return follower.Mode() == "" })
	t.Logf("the isolated follower stopped serving after %v", time.Since(start))
	if e.Leader() != leader {
		t.Fatalf("leader changed from %v to %v when a follower was isolated", leader, e.Leader())
	}
	e.Rejoin(follower)
	waitReady(t, e)
	if e.Leader() != leader || follower.Mode() != "follower" {
		t.Fatalf("after Rejoin: leader %v (want %v), rejoined server %q", e.Leader(), leader, follower.Mode())
	}
}

func TestIsolateNeedsPeerProxies(t *testing.T) {
	e := &Ensemble{}
	defer func() {
		if recover() == nil {
			t.Fatal("Isolate without peer proxies did not panic")
		}
	}()
	e.Isolate(&Member{id: 1})
}
