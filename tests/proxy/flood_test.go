package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/wait"
)

// attackerAddr is where the floods come from: another address than the
// probes' 127.0.0.1, as a hostile client has another address than the
// others.
var attackerAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}

// flood holds what one flood opened, and closes it with resets.
type flood struct {
	mu    sync.Mutex
	conns []net.Conn
	stop  chan struct{}
	wg    sync.WaitGroup
}

func newFlood() *flood { return &flood{stop: make(chan struct{})} }

// open dials n connections to addr from the attacker's address and runs
// each in send (which returns when it is done with it) until end.
func (f *flood) open(addr string, n int, send func(c net.Conn, stop <-chan struct{})) {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: attackerAddr}
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			continue // refused at the cap, or the backlog full: the flood goes on
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Go(func() { send(c, f.stop) })
	}
}

func (f *flood) end() {
	close(f.stop)
	f.mu.Lock()
	for _, c := range f.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// floodDribble sends head, then the rest of body one byte every pause until it
// is sent, the connection fails or stop.
func floodDribble(head, body string, pause time.Duration) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, stop <-chan struct{}) {
		if _, err := io.WriteString(c, head); err != nil {
			return
		}
		for i := 0; i < len(body); i++ {
			select {
			case <-stop:
				return
			case <-time.After(pause):
			}
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
		}
		_, _ = io.Copy(io.Discard, c) // the answer, until closed
	}
}

func openFDs(pid int) int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(es)
}

// The proxy's ports get the floods the API port gets: idle connections,
// headers sent slowly or past the limit, bodies sent one byte at a time.
// A flood on the follower's proxy costs only what is reserved for it
// (proxy.max_connections, proxy.buffer_total): throughout, requests from
// other clients through that proxy and through the leader's are answered
// 200, and the follower's file descriptors stay within its connection
// caps of what it had before.
func TestProxyFloods(t *testing.T) {
	const maxConns = 200
	c := startFencedCluster(t, 2, func(cfg *electdtest.Config) { cfg.ProxyMaxConnections = maxConns })
	l := c.settled(nil)
	f := c.follower(l, 0)
	body := strings.Repeat("x", 1000)
	before := openFDs(f.proc.Pid())
	for _, fl := range []struct {
		name string
		n    int
		send func(net.Conn, <-chan struct{})
	}{
		{"idle connections", 3 * maxConns, func(c net.Conn, stop <-chan struct{}) { <-stop }},
		{"headers a byte every 100 ms", 2 * maxConns, floodDribble("GET / HTTP/1.1\r\nHost: x\r\n", strings.Repeat("X-Pad: aaaa\r\n", 100), 100*time.Millisecond)},
		{"headers past max_header_bytes", 50, floodDribble("GET / HTTP/1.1\r\nHost: x\r\nX-Pad: "+strings.Repeat("a", 64<<10)+"\r\n\r\n", "", 0)},
		{"POST bodies of 1000 bytes, a byte every 100 ms", 2 * maxConns,
			floodDribble("POST /w HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", body, 100*time.Millisecond)},
	} {
		t.Run(fl.name, func(t *testing.T) {
			// What the flood before opened is gone.
			wait.For(t, patience, "the follower's descriptors back", func() bool { return openFDs(f.proc.Pid()) <= before+16 })
			fd := newFlood()
			defer fd.end()
			fd.open(f.proxy, fl.n, fl.send)
			maxFDs := 0
			for i := range 40 {
				maxFDs = max(maxFDs, openFDs(f.proc.Pid()))
				for _, via := range []*fencedMember{f, l} {
					if code, err := probe(via.proxy, i%2 == 0); code != http.StatusOK {
						t.Fatalf("a request through %s during the flood: %d %v", via.name, code, err)
					}
				}
			}
			t.Logf("%s: %d connections flooded; the follower's fds %d before, at most %d during", fl.name, fl.n, before, maxFDs)
			// Its own two ports' caps, plus what it holds to ZooKeeper, its
			// application and the leader's proxy.
			if maxFDs > before+maxConns+16 {
				t.Errorf("the follower held %d fds during the flood, %d before: past its connection cap", maxFDs, before)
			}
		})
	}
	c.idle()
}

// probe sends one GET or POST through addr from 127.0.0.1 on a new
// connection.
func probe(addr string, post bool) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	method, body := http.MethodGet, io.Reader(nil)
	if post {
		method, body = http.MethodPost, strings.NewReader("payload")
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+"/w", body)
	if err != nil {
		return 0, err
	}
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	defer tr.CloseIdleConnections()
	res, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}
