package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawPost opens a connection to addr and sends a POST's headers declaring
// length bytes of body, then the first bytes of it.
func rawPost(t *testing.T, addr string, length int, first string, header ...string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /w HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n%s\r\n%s", length, strings.Join(header, ""), first)
	return c, bufio.NewReader(c)
}

// answer reads the status of the answer on br, within patience.
func answer(t *testing.T, c net.Conn, br *bufio.Reader) int {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(patience))
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	res.Body.Close()
	return res.StatusCode
}

// A body of a declared length up to BufferSize is received whole before
// the request goes anywhere, and reaches the application without Expect
// (no wait for a 100 Continue an ordinary server never sends); a longer
// one is streamed with the client's own Expect.
func TestHTTPBufferedBodyHasNoExpect(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d", len(b))
	})
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{BufferSize: MinBufferSize})
	c := newClient(t)
	for _, n := range []int{10, MinBufferSize, MinBufferSize + 1} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+tp.addr+"/", strings.NewReader(strings.Repeat("x", n)))
		req.Header.Set("Expect", "100-continue")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || string(b) != fmt.Sprint(n) {
			t.Fatalf("%d bytes: %d %q", n, res.StatusCode, b)
		}
	}
	saw := app.requests()
	if saw[0].expect != "" || saw[1].expect != "" || saw[2].expect != "100-continue" {
		t.Fatalf("Expect at the application: %q %q %q; want none for buffered bodies, the client's for a streamed one",
			saw[0].expect, saw[1].expect, saw[2].expect)
	}
}

// A buffered body that does not arrive within ClientBodyTimeout in total
// gets a 408; the application never sees the request.
func TestHTTPBufferedBodyTimeout(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{ClientBodyTimeout: 3 * time.Second})
	c, br := rawPost(t, tp.addr, 100, "abc")
	// Not Pending() > 0: the wait for room in the buffers' budget arms a
	// timer of its own first, and advancing before the body's is armed
	// would leave it short of its deadline.
	waitFor(t, "the body timer", func() bool { return tp.clock.PendingIn(3 * time.Second) })
	for range 2 { // a byte every second is progress, but not in time
		tp.clock.Advance(time.Second)
		io.WriteString(c, "d")
	}
	tp.clock.Advance(time.Second)
	if code := answer(t, c, br); code != http.StatusRequestTimeout {
		t.Fatalf("status %d, want 408", code)
	}
	if n := len(app.requests()); n != 0 {
		t.Fatalf("the application saw %d requests", n)
	}
	waitFor(t, "client_timeout counted", func() bool { return tp.rec.request(ResultClientTimeout) == 1 })
}

// The bytes buffered at once are bounded: past BufferTotal a request waits
// for room within its hold time, then gets 503; the gauge says what is
// held.
func TestHTTPBufferTotalIsBounded(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", nil)
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{BufferSize: 1024, BufferTotal: 2048, HoldTime: 2 * time.Second})
	var conns []net.Conn
	for range 2 {
		c, _ := rawPost(t, tp.addr, 1024, "abc")
		conns = append(conns, c)
	}
	waitFor(t, "2048 bytes buffered", func() bool { return tp.Buffered() == 2048 })
	c, br := rawPost(t, tp.addr, 10, "0123456789")
	waitFor(t, "the third to wait for room", func() bool { return tp.clock.Pending() >= 3 })
	tp.clock.Advance(2 * time.Second)
	if code := answer(t, c, br); code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503 once the hold time ran out", code)
	}
	// Room again once a buffered request is over.
	conns[0].Close()
	waitFor(t, "room again", func() bool { return tp.Buffered() == 1024 })
	if code, body := post(t, newClient(t), tp.addr); code != http.StatusOK {
		t.Fatalf("with room: %d %q", code, body)
	}
}

// At MaxConnections, with no idle connection to evict, a newcomer evicts
// the connection whose body is received slowest (closed at once, so that
// the descriptors stay within the cap); the others go on.
func TestHTTPConnectionCapEvictsSlowestBody(t *testing.T) {
	baseline(t)
	app := newApp(t, "a", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d", len(b))
	})
	tp := startProxy(t, newLead(leading("a", 1)), app.addr(), Config{MaxConnections: 2, MaxHeld: 1})
	fast, fbr := rawPost(t, tp.addr, 600, strings.Repeat("f", 500))
	slow, sbr := rawPost(t, tp.addr, 600, "s")
	waitFor(t, "both receiving", func() bool { return tp.Buffered() == 1200 })
	tp.clock.Advance(time.Second) // the rates: 500 and 1 bytes a second
	if code, body, _ := get(t, newClient(t), tp.addr); code != http.StatusOK {
		t.Fatalf("the newcomer got %d %q", code, body)
	}
	slow.SetReadDeadline(time.Now().Add(patience))
	closed(t, sbr)
	io.WriteString(fast, strings.Repeat("f", 100))
	if code := answer(t, fast, fbr); code != http.StatusOK {
		t.Fatalf("the faster one got %d, want 200", code)
	}
	waitFor(t, "one request evicted", func() bool { return tp.rec.request(ResultEvicted) == 1 })
}

// A small buffered body leaves with the request's head in one write
// (attempt.go, oneWrite): nothing of it is due once it is written, so an
// application that answers later than BodyTimeout after reading it is not
// cut.
func TestHTTPSmallBufferedBodyInOneWrite(t *testing.T) {
	baseline(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	first, answer := make(chan string, 1), make(chan struct{})
	defer close(answer)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(patience))
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			first <- err.Error()
			return
		}
		b, _ := io.ReadAll(req.Body)
		first <- string(b)
		<-answer
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}()
	tp := startProxy(t, newLead(leading("a", 1)), ln.Addr().String(), Config{BodyTimeout: 2 * time.Second})
	const body = `{"op":"write","value":42}`
	got := async(func() *http.Response {
		res, err := newClient(t).Post("http://"+tp.addr+"/", "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return nil
		}
		return res
	})
	if s := recv(t, first, "the body at the application"); s != body {
		t.Fatalf("the application read %q, want %q", s, body)
	}
	waitFor(t, "the guard to be armed", func() bool { return tp.clock.Pending() > 0 })
	tp.clock.Advance(3 * time.Second) // past BodyTimeout: nothing is due from the client
	answer <- struct{}{}
	res := recv(t, got, "the answer")
	if res == nil {
		return
	}
	defer res.Body.Close()
	if b, _ := io.ReadAll(res.Body); res.StatusCode != http.StatusOK || string(b) != "ok" {
		t.Fatalf("%d %q, want 200 ok", res.StatusCode, b)
	}
}
