package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/internal/forward"
	"github.com/electd/electd/internal/proxy"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// tcpMember is a participant in TCP mode: an elector, its proxy, and an
// application that greets each connection with its name after checking,
// at accept, that its elector leads.
type tcpMember struct {
	name  string
	el    *election.Elector
	px    *proxy.Proxy
	addr  string
	appLn net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startTCPMember(t *testing.T, ens *zktest.Ensemble, path, name string, f *fence) *tcpMember {
	t.Helper()
	m := &tcpMember{name: name}
	var err error
	if m.appLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	client, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.addr = client.Addr().String()
	sess, err := zksession.Connect(zksession.Config{Servers: ens.Servers(), SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if m.el, err = election.New(sess, election.Config{Path: path, ID: name, Proxy: peer.Addr().String()}); err != nil {
		t.Fatal(err)
	}
	m.wg.Go(func() {
		for {
			c, err := m.appLn.Accept()
			if err != nil {
				return
			}
			st := m.el.Status()
			f.check(name, st.FencingToken, st.IsLeader, st.FencingToken)
			m.mu.Lock()
			m.conns = append(m.conns, c)
			m.mu.Unlock()
			m.wg.Go(func() {
				defer c.Close()
				fmt.Fprintf(c, "%s\n", name)
				_, _ = io.Copy(c, c)
			})
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	route := forward.NewLeadership(m.el)
	m.px, err = proxy.New(route, proxy.Config{Mode: proxy.ModeTCP, Listen: m.addr, PeerListen: peer.Addr().String(),
		App: m.appLn.Addr().String(), PeerKey: peerKey})
	if err != nil {
		t.Fatal(err)
	}
	var served sync.WaitGroup
	served.Go(func() {
		if err := m.px.Serve(ctx, client, peer); err != nil {
			t.Errorf("%s: Serve: %v", name, err)
		}
	})
	served.Go(func() { _ = m.el.Run(ctx) })
	served.Go(func() { route.Watch(ctx) })
	t.Cleanup(func() {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		_ = m.el.Resign(rctx)
		cancel()
		served.Wait()
		sess.Close()
		m.appLn.Close()
		m.mu.Lock()
		for _, c := range m.conns {
			c.Close()
		}
		m.mu.Unlock()
		m.wg.Wait()
	})
	return m
}

// dial connects through m's proxy and returns who greeted.
func (m *tcpMember) dial(t *testing.T) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.Dial("tcp", m.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	br := bufio.NewReader(c)
	hello, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("via %s: no greeting: %v", m.name, err)
	}
	return c, br, hello[:len(hello)-1]
}

// TestZKTCPHandOver splices connections through every participant's proxy
// to the leader's application; when the leader hands over, every
// connection to its application is closed at once, and connections opened
// meanwhile (held during the hand-over) go to the new leader's.
func TestZKTCPHandOver(t *testing.T) {
	ens := zktest.Start(t, zktest.Options{})
	f := &fence{}
	var ms []*tcpMember
	for i := range 3 {
		m := startTCPMember(t, ens, "/proxy/tcp", fmt.Sprintf("t%d", i), f)
		ms = append(ms, m)
		wait.For(t, inprocPatience, m.name+" to join", func() bool { return m.el.Status().Joined })
	}
	leader := func(not string) *tcpMember {
		var l *tcpMember
		wait.For(t, inprocPatience, "a leader every proxy routes to", func() bool {
			l = nil
			for _, m := range ms {
				if m.el.Status().IsLeader && m.name != not {
					l = m
				}
			}
			if l == nil {
				return false
			}
			for _, m := range ms {
				if st := m.px.State(); m != l && st.Route != "leader" {
					return false
				}
			}
			return true
		})
		return l
	}
	old := leader("")
	var open []*bufio.Reader
	for _, m := range ms {
		c, br, hello := m.dial(t)
		if hello != old.name {
			t.Fatalf("via %s: greeted by %s, want the leader %s", m.name, hello, old.name)
		}
		io.WriteString(c, "ping\n")
		if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
			t.Fatalf("via %s: echo %q, %v", m.name, line, err)
		}
		open = append(open, br)
	}

	// Connections opened while the leader hands over wait, then reach the
	// new leader's application. The release waits until they are held.
	var during sync.WaitGroup
	greeted := make(chan string, 6)
	start := time.Now()
	released := make(chan error, 1)
	holding := make(chan struct{})
	go func() {
		released <- old.px.Yield(context.Background(), func(ctx context.Context) error {
			close(holding)
			wait.For(t, inprocPatience, "connections held by the old leader", func() bool { return old.px.Held() > 0 })
			return old.el.Release(ctx)
		})
	}()
	<-holding
	for _, m := range ms {
		during.Go(func() {
			_, _, hello := m.dial(t)
			greeted <- hello
		})
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	for _, br := range open {
		if _, err := br.ReadByte(); err == nil {
			t.Fatal("a connection to the old leader's application still carries bytes")
		}
	}
	cut := time.Since(start)
	during.Wait()
	close(greeted)
	nl := leader(old.name)
	for hello := range greeted {
		if hello != nl.name {
			t.Fatalf("a connection opened during the hand-over was greeted by %s, want the new leader %s", hello, nl.name)
		}
	}
	_, _, hello := ms[0].dial(t)
	if hello != nl.name {
		t.Fatalf("after the hand-over: greeted by %s, want %s", hello, nl.name)
	}
	if p := f.problems(); len(p) > 0 {
		t.Fatalf("%d fencing violations, first: %s", len(p), p[0])
	}
	t.Logf("%s -> %s; the old leader's connections were closed %v after the release began", old.name, nl.name, cut.Round(time.Millisecond))
}
