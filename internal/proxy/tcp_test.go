package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// echoServer is a TCP application: it greets each connection with its
// name (as a server-first protocol does) and echoes lines.
type echoServer struct {
	ln    net.Listener
	name  string
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newEcho(t *testing.T, name string) *echoServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln, name: name}
	e.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns = append(e.conns, c)
			e.mu.Unlock()
			e.wg.Go(func() {
				defer c.Close()
				io.WriteString(c, name+"\n")
				_, _ = io.Copy(c, c)
			})
		}
	})
	t.Cleanup(e.close)
	return e
}

func (e *echoServer) addr() string { return e.ln.Addr().String() }

func (e *echoServer) close() {
	e.ln.Close()
	e.mu.Lock()
	for _, c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// dialEcho connects through addr and returns the greeting.
func dialEcho(t *testing.T, addr string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(patience))
	br := bufio.NewReader(c)
	hello, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no greeting through %s: %v", addr, err)
	}
	return c, br, hello[:len(hello)-1]
}

func echoes(t *testing.T, c net.Conn, br *bufio.Reader, msg string) {
	t.Helper()
	io.WriteString(c, msg+"\n")
	if line, err := br.ReadString('\n'); err != nil || line != msg+"\n" {
		t.Fatalf("echo %q, %v; want %q", line, err, msg)
	}
}

func tcpConfig(c Config) Config {
	c.Mode = ModeTCP
	return c
}

// The leader splices to its application; a follower splices to the
// leader's peer port, greeting first (a server-first protocol works).
func TestTCPLeaderAndFollower(t *testing.T) {
	baseline(t)
	appA, appB := newEcho(t, "a"), newEcho(t, "b")
	b := startProxy(t, newLead(leading("b", 2)), appB.addr(), tcpConfig(Config{}))
	a := startProxy(t, newLead(following("b", 2, b.peerAddr())), appA.addr(), tcpConfig(Config{}))
	for _, tc := range []struct{ via, addr string }{{"leader", b.addr}, {"follower", a.addr}} {
		c, br, hello := dialEcho(t, tc.addr)
		if hello != "b" {
			t.Fatalf("via the %s: greeted by %q, want b", tc.via, hello)
		}
		echoes(t, c, br, "ping "+tc.via)
		c.Close()
	}
	waitFor(t, "both connections counted", func() bool { return b.rec.conn(ResultOK) == 2 && a.rec.conn(ResultOK) == 1 })
	if a.rec.hops(1) != 1 {
		t.Fatalf("forwards with hop 1: %d, want 1", a.rec.hops(1))
	}
}

// When this participant stops leading, every connection it holds to its
// application is closed at once; on a follower, every connection to a
// leader that is no longer the leader. New ones go to the new leader.
func TestTCPCutOnLeadershipChange(t *testing.T) {
	baseline(t)
	appA, appB := newEcho(t, "a"), newEcho(t, "b")
	la, lb := newLead(leading("a", 1)), newLead(Route{})
	a := startProxy(t, la, appA.addr(), tcpConfig(Config{}))
	b := startProxy(t, lb, appB.addr(), tcpConfig(Config{}))
	lb.set(following("a", 1, a.peerAddr()))
	direct, dbr, _ := dialEcho(t, a.addr)
	viaB, vbr, hello := dialEcho(t, b.addr)
	if hello != "a" {
		t.Fatalf("greeted by %q via b, want a", hello)
	}
	echoes(t, direct, dbr, "1")
	echoes(t, viaB, vbr, "2")

	// a steps down and b leads: a's connections to its application close,
	// and b's connection to a's proxy too, even before a's side shows it.
	la.hush(true)
	la.set(following("b", 2, b.peerAddr()))
	lb.set(leading("b", 2))
	closed(t, vbr)
	la.Notify()
	closed(t, dbr)
	waitFor(t, "both cuts counted", func() bool {
		return a.rec.conn(ResultLeadershipLost) >= 1 && b.rec.conn(ResultLeadershipLost) == 1
	})
	_, _, hello = dialEcho(t, a.addr)
	if hello != "b" {
		t.Fatalf("a new connection via a greeted by %q, want b", hello)
	}
}

// While no leader is known a connection waits; it is closed after the
// hold time, or at once past MaxHeld.
func TestTCPHold(t *testing.T) {
	baseline(t)
	app := newEcho(t, "a")
	lead := newLead(Route{})
	tp := startProxy(t, lead, app.addr(), tcpConfig(Config{MaxHeld: 1, HoldTime: 2 * time.Second}))
	c1, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	waitFor(t, "the connection to be held", func() bool { return tp.Held() == 1 })
	c2, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetReadDeadline(time.Now().Add(patience))
	closed(t, bufio.NewReader(c2))
	tp.clock.Advance(2 * time.Second)
	c1.SetReadDeadline(time.Now().Add(patience))
	closed(t, bufio.NewReader(c1))
	waitFor(t, "no_leader and held_cap counted", func() bool {
		return tp.rec.conn(ResultNoLeader) == 1 && tp.rec.conn(ResultHeldCap) == 1
	})

	// A connection held when a leader appears goes to it.
	got := async(func() string { _, _, hello := dialEcho(t, tp.addr); return hello })
	waitFor(t, "the third connection to be held", func() bool { return tp.Held() == 1 })
	lead.set(leading("a", 1))
	if hello := recv(t, got, "the greeting"); hello != "a" {
		t.Fatalf("greeted by %q, want a", hello)
	}
}

// The application refuses connections: the proxy asks the election to
// step down once and sends the connections to the new leader.
func TestTCPAppRefusedStepsDown(t *testing.T) {
	baseline(t)
	appB := newEcho(t, "b")
	dead := newEcho(t, "a")
	deadAddr := dead.addr()
	dead.close()
	b := startProxy(t, newLead(leading("b", 2)), appB.addr(), tcpConfig(Config{}))
	la := newLead(leading("a", 1))
	a := startProxy(t, la, deadAddr, tcpConfig(Config{}))
	la.onStepDown(func() { la.set(following("b", 2, b.peerAddr())) })
	for range 3 {
		if _, _, hello := dialEcho(t, a.addr); hello != "b" {
			t.Fatalf("greeted by %q, want b", hello)
		}
	}
	if la.stepDowns() != 1 {
		t.Fatalf("step-downs: %d, want 1", la.stepDowns())
	}
}

// A peer's connection must open with a valid preamble within
// ClientHeaderTimeout; one forwarded twice is never forwarded again.
func TestTCPPeerPreamble(t *testing.T) {
	baseline(t)
	app := newEcho(t, "a")
	other := newEcho(t, "c")
	pc := startProxy(t, newLead(leading("c", 3)), other.addr(), tcpConfig(Config{}))
	tp := startProxy(t, newLead(following("c", 3, pc.peerAddr())), app.addr(), tcpConfig(Config{HoldTime: 2 * time.Second}))
	peer := func(b []byte) *bufio.Reader {
		c, err := dialPeerTLS(t, tp.peerAddr(), testPeerKey, alpnTCP)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(patience))
		c.Write(b)
		return bufio.NewReader(c)
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\n")},
		{"hop 0", preamble(0, time.Second)},
		{"hop 3", preamble(3, time.Second)},
		{"version 2", append(append([]byte("ELECTD"), 2, 1), 0, 0, 0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) { closed(t, peer(tc.b)) })
	}
	waitFor(t, "four bad preambles counted", func() bool { return tp.rec.conn(ResultBadRequest) == 4 })

	want := string(ack(ackPlaced, 3)) + "c\n" // placed by c's leadership, token 3
	if hello, err := peer(preamble(1, time.Second)).ReadString('\n'); err != nil || hello != want {
		t.Fatalf("hop 1: %q (%v), want the ack with c's token, then c's greeting via one more forward", hello, err)
	}
	br := peer(preamble(2, time.Second))
	b := make([]byte, ackLen)
	if _, err := io.ReadFull(br, b); err != nil || string(b) != string(ack(ackRefused, 0)) {
		t.Fatalf("hop 2 to a follower: %q %v, want refused", b, err)
	}
	closed(t, br)

	before := tp.clock.Pending()
	slow := peer([]byte("ELEC"))
	waitFor(t, "the preamble timer", func() bool { return tp.clock.Pending() > before })
	tp.clock.Advance(DefaultClientHeaderTimeout)
	closed(t, slow)
}

// A spliced connection idle for IdleTimeout is closed; past
// MaxConnections a newcomer is closed at once.
func TestTCPBounds(t *testing.T) {
	baseline(t)
	app := newEcho(t, "a")
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), tcpConfig(Config{MaxConnections: 1, MaxHeld: 1, IdleTimeout: time.Minute, BodyTimeout: 2 * time.Minute}))
	c, br, _ := dialEcho(t, tp.addr)
	echoes(t, c, br, "x")
	over, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	over.SetReadDeadline(time.Now().Add(patience))
	closed(t, bufio.NewReader(over))
	waitFor(t, "one refusal counted", func() bool { return tp.rec.conn(ResultRefused) == 1 })
	tp.clock.Advance(time.Minute)
	closed(t, br)
	waitFor(t, "the idle connection counted", func() bool { return tp.rec.conn(ResultIdle) == 1 })
}

func TestPreambleRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		hop        int
		hold, max  time.Duration
		wantBudget time.Duration
	}{
		{1, 3 * time.Second, 5 * time.Second, 3 * time.Second},
		{2, time.Hour, 5 * time.Second, 5 * time.Second},
		{1, 0, 5 * time.Second, 0},
	} {
		hop, budget, err := parsePreamble(preamble(tc.hop, tc.hold), tc.max)
		if err != nil || hop != tc.hop || budget != tc.wantBudget {
			t.Fatalf("preamble(%d, %v): %d %v %v, want %d %v", tc.hop, tc.hold, hop, budget, err, tc.hop, tc.wantBudget)
		}
	}
}

// A connection forwarded twice to a participant that does not lead is
// refused back to the proxy before, which routes it again once its view
// moves on; nothing of the client's stream went anywhere meanwhile.
func TestTCPBounceRoutesAgain(t *testing.T) {
	baseline(t)
	appC, appD, appB := newEcho(t, "c"), newEcho(t, "d"), newEcho(t, "b")
	pd := startProxy(t, newLead(leading("d", 4)), appD.addr(), tcpConfig(Config{}))
	pc := startProxy(t, newLead(following("d", 4, pd.peerAddr())), appC.addr(), tcpConfig(Config{}))
	lb := newLead(following("c", 3, pc.peerAddr())) // stale: c does not lead
	pb := startProxy(t, lb, appB.addr(), tcpConfig(Config{}))
	pa := startProxy(t, newLead(following("b", 2, pb.peerAddr())), newEcho(t, "a").addr(), tcpConfig(Config{}))
	got := async(func() string { _, _, hello := dialEcho(t, pa.addr); return hello })
	waitFor(t, "c to refuse the twice-forwarded connection", func() bool { return pc.rec.conn(ResultBounced) >= 1 })
	lb.set(following("d", 4, pd.peerAddr()))
	if hello := recv(t, got, "the greeting"); hello != "d" {
		t.Fatalf("greeted by %q, want d", hello)
	}
}

// An application's answer cannot carry Electd-Not-Leader back to a
// follower, which would then send a processed request again.
func TestHTTPAppCannotBounce(t *testing.T) {
	baseline(t)
	appB := newApp(t, "b", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderNotLeader, "1")
		w.WriteHeader(http.StatusMisdirectedRequest)
	})
	b := startProxy(t, newLead(leading("b", 2)), appB.addr(), Config{})
	a := startProxy(t, newLead(following("b", 2, b.peerAddr())), newApp(t, "a", nil).addr(), Config{})
	code, _, h := get(t, newClient(t), a.addr)
	if code != http.StatusMisdirectedRequest || h.Get(HeaderNotLeader) != "" {
		t.Fatalf("%d with %s %q, want the application's 421 without the header", code, HeaderNotLeader, h.Get(HeaderNotLeader))
	}
	if n := len(appB.requests()); n != 1 {
		t.Fatalf("the application got the request %d times, want once", n)
	}
}
