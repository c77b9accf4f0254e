package proxy

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/ledger"
	"github.com/electd/electd/tests/harness/wait"
)

// The sizes of issue 28's failure 3.
const (
	maxConnections = 40
	dribblers      = 45
	dribbleEvery   = 5 * time.Second
	// fdSlack is what a proxy may hold beyond its connection cap and its
	// descriptors at rest: its pool of connections to the leader's proxy
	// and to its application, and the listeners.
	fdSlack = 16
	// heapSlack bounds the growth of a proxy's heap under the flood: the
	// flood's bodies are 45 KB in all, so this is far above what it may
	// cost and far below what an unbounded buffer would.
	heapSlack = 32 << 20
)

// Issue 28, failure 3: "One slow client takes the service down." With
// proxy.max_connections 40, 45 POSTs declaring 1000 bytes of body and
// sending one byte every 5 s to one follower. Must have 3: a slow client
// exhausts only what is reserved for it: small bodies are received whole
// before they are forwarded (so a dribbling client holds no connection at
// the leader), peers' forwards do not share the leader's cap with clients,
// and the slowest is evicted when a cap is reached. So GETs through the
// other follower, straight to the leader's proxy, and through the flooded
// follower itself (evicting a dribbler) all succeed, and every proxy's file
// descriptors and heap stay bounded.
func TestSlowClients(t *testing.T) {
	c := startCluster(t, setup{n: 3, tune: func(cfg *electdtest.Config) { cfg.ProxyMaxConnections = maxConnections }})
	l := c.settled(nil)
	fs := c.others(l)
	before := c.usage()
	stop := dribble(t, fs[0].proxy, dribblers)
	defer stop()
	wait.For(t, patience, fmt.Sprintf("%s's proxy to hold the dribbling connections", fs[0].name), func() bool {
		v := fs[0].view(t)
		return v.Proxy.Connections >= maxConnections-5
	})
	bound := holdTime + peerTimeout + slack
	ld := ledger.StartLoad(ledger.LoadConfig{Rate: 10, Timeout: bound, Prefix: "slow"}, targets(fs[1], l, fs[1], l, fs[0])...)
	defer ld.Stop()
	wait.For(t, patience, "50 GETs", func() bool { return ld.Count() >= 50 })
	reqs := ld.Stop()
	during := c.usage()
	stop()
	report(t, fmt.Sprintf("failed while %d clients dribbled to %s", dribblers, fs[0].name), reqs, ledger.Failing(reqs, ok200))
	for i, m := range c.members {
		t.Logf("%s: %d file descriptors and %.1f MiB of heap at rest, %d and %.1f MiB under the flood", m.name,
			before[i].fds, float64(before[i].heap)/(1<<20), during[i].fds, float64(during[i].heap)/(1<<20))
		if during[i].fds > before[i].fds+maxConnections+fdSlack {
			t.Errorf("%s holds %d file descriptors under the flood, more than %d at rest + max_connections %d + %d",
				m.name, during[i].fds, before[i].fds, maxConnections, fdSlack)
		}
		if during[i].heap > before[i].heap+heapSlack {
			t.Errorf("%s's heap grew from %d to %d bytes under the flood", m.name, before[i].heap, during[i].heap)
		}
	}
	c.settled(nil)
	c.idle()
}

// usage is a process's open file descriptors and heap in use.
type usage struct{ fds, heap int64 }

// usage reads every member's from its /metrics.
func (c *cluster) usage() []usage {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	out := make([]usage, len(c.members))
	for i, m := range c.members {
		mfs, err := m.proc.Metrics(ctx)
		if err != nil {
			c.t.Fatal(err)
		}
		fds, err1 := electdtest.Value(mfs, "process_open_fds")
		heap, err2 := electdtest.Value(mfs, "go_memstats_heap_inuse_bytes")
		if err1 != nil || err2 != nil {
			c.t.Fatalf("%s: %v %v", m.name, err1, err2)
		}
		out[i] = usage{int64(fds), int64(heap)}
	}
	return out
}

// dribble opens n connections to addr, each sending a POST's headers
// (Content-Length: 1000) at once and then one byte of its body every
// dribbleEvery, until stop.
func dribble(t *testing.T, addr string, n int) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer conn.Close()
			req := fmt.Sprintf("POST /w HTTP/1.1\r\nHost: dribble\r\nX-Request-Id: dribble-%d\r\nContent-Length: 1000\r\n\r\n", i)
			if _, err := conn.Write([]byte(req)); err != nil {
				return
			}
			tick := time.NewTicker(dribbleEvery)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				if _, err := conn.Write([]byte("x")); err != nil {
					return // evicted, or timed out: what the proxy may do
				}
			}
		})
	}
	return sync.OnceFunc(func() {
		close(done)
		wg.Wait()
	})
}
