package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// At MaxConnections a newcomer evicts the connection idle longest, so
// that idle connections cannot lock clients out.
func TestHTTPConnectionCapEvictsIdle(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{MaxConnections: 2, MaxHeld: 1})
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	waitFor(t, "two open connections", func() bool { return tp.Open() == 2 })
	if code, body, _ := get(t, newClient(t), tp.addr); code != http.StatusOK || body != "a 1" {
		t.Fatalf("the newcomer got %d %q, want 200", code, body)
	}
	idle[0].SetReadDeadline(time.Now().Add(patience))
	closed(t, bufio.NewReader(idle[0]))
	waitFor(t, "one eviction counted", func() bool { return tp.rec.conn(ResultEvicted) == 1 })
}

// When every connection is busy, a newcomer past the cap is closed.
func TestHTTPConnectionCapRefusesWhenAllBusy(t *testing.T) {
	baseline(t)
	app, arrived, release := blockingApp(t, "a")
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{MaxConnections: 1, MaxHeld: 1})
	c := newClient(t)
	first := async(func() int { code, _, _ := get(t, c, tp.addr); return code })
	recv(t, arrived, "the first request at the application")
	conn, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(patience))
	closed(t, bufio.NewReader(conn))
	waitFor(t, "one refusal counted", func() bool { return tp.rec.conn(ResultRefused) == 1 })
	close(release)
	if code := recv(t, first, "the first answer"); code != http.StatusOK {
		t.Fatalf("the first request got %d", code)
	}
}

// Headers past MaxHeaderBytes get 431; headers that never end are cut
// after ClientHeaderTimeout (net/http's own clock).
func TestHTTPHeaderBounds(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{MaxHeaderBytes: MinHeaderBytes, ClientHeaderTimeout: 200 * time.Millisecond})
	big, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	io.WriteString(big, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("x", 8<<10)+"\r\n\r\n")
	big.SetReadDeadline(time.Now().Add(patience))
	if line, err := bufio.NewReader(big).ReadString('\n'); !strings.Contains(line, "431") {
		t.Fatalf("answered %q (%v), want 431", line, err)
	}
	conn, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n")
	conn.SetReadDeadline(time.Now().Add(patience))
	start := time.Now()
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the slow client's connection was not closed: %v", err)
	}
	if d := time.Since(start); d > patience/2 {
		t.Fatalf("closed after %v", d)
	}
}

// At shutdown, held requests get 503 at once and Serve returns with
// everything closed.
func TestHTTPShutdownAnswersHeld(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	tp := startProxy(t, newLead(Route{}), app.addr(), Config{})
	c := newClient(t)
	type answer struct {
		code int
		body string
	}
	got := async(func() answer { code, body, _ := get(t, c, tp.addr); return answer{code, body} })
	waitFor(t, "the request to be held", func() bool { return tp.Held() == 1 })
	tp.stop()
	if a := recv(t, got, "the answer"); a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, "shutting down") {
		t.Fatalf("%d %q, want 503 shutting down", a.code, a.body)
	}
	if n := tp.Open(); n != 0 {
		t.Fatalf("%d connections open after Serve returned", n)
	}
}

// An upgraded connection idle for IdleTimeout is closed.
func TestHTTPIdleTunnelIsClosed(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", echoUpgrade)
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{IdleTimeout: time.Minute, BodyTimeout: 2 * time.Minute})
	conn, br := upgrade(t, tp.addr)
	defer conn.Close()
	io.WriteString(conn, "x\n")
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the tunnel's guard", func() bool { return tp.clock.Pending() > 0 })
	tp.clock.Advance(time.Minute)
	conn.SetReadDeadline(time.Now().Add(patience))
	closed(t, br)
}

// A request held when Serve starts shutting down still goes to a leader
// that appears within the drain: a leader that handed over before it
// stops forwards what it holds.
func TestHTTPShutdownDrainsHeldToNewLeader(t *testing.T) {
	baseline(t)
	appA, appB := newApp(t, "a", nil), newApp(t, "b", nil)
	b := startProxy(t, newLead(leading("b", 2)), appB.addr(), Config{})
	la := newLead(Route{})
	a := startProxy(t, la, appA.addr(), Config{})
	c := newClient(t)
	got := async(func() string { _, body, _ := get(t, c, a.addr); return body })
	waitFor(t, "the request to be held", func() bool { return a.Held() == 1 })
	stopped := async(func() bool { a.stop(); return true })
	waitFor(t, "a to stop taking connections", func() bool {
		conn, err := net.Dial("tcp", a.addr)
		if err == nil {
			conn.Close()
		}
		return err != nil
	})
	la.set(following("b", 2, b.peerAddr()))
	if body := recv(t, got, "the answer"); body != "b 2" {
		t.Fatalf("answer %q, want b 2", body)
	}
	recv(t, stopped, "Serve to return")
}
