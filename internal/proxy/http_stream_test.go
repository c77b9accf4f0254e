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

// Streams pass through both ways as they come, through a follower and the
// leader: a chunked request body reaches the application while the client
// still sends, each chunk of the answer reaches the client before the
// next is written, and trailers arrive.
func TestHTTPStreamsBothWays(t *testing.T) {
	baseline(t)
	next := make(chan struct{})
	appB := newApp(t, "b", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			t.Error(err)
		}
		br := bufio.NewReader(r.Body)
		n := 0
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			n++
			fmt.Fprintf(w, "echo %s", line)
			if err := rc.Flush(); err != nil {
				return
			}
			<-next // the client has read the echo: streaming, not buffered
		}
		w.Header().Set("X-Sum", fmt.Sprint(n))
	})
	appA := newApp(t, "a", nil)
	b := startProxy(t, newLead(leading("b", 2)), appB.addr(), Config{})
	a := startProxy(t, newLead(following("b", 2, b.peerAddr())), appA.addr(), Config{})

	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, "http://"+a.addr+"/stream", pr)
	res := async(func() *http.Response {
		res, err := newClient(t).Do(req)
		if err != nil {
			t.Error(err)
		}
		return res
	})
	if _, err := io.WriteString(pw, "one\n"); err != nil {
		t.Fatal(err)
	}
	r := recv(t, res, "the answer's headers")
	if r == nil {
		t.FailNow()
	}
	defer r.Body.Close()
	br := bufio.NewReader(r.Body)
	for _, word := range []string{"one", "two", "three"} {
		if word != "one" {
			if _, err := io.WriteString(pw, word+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		line, err := br.ReadString('\n')
		if err != nil || line != "echo "+word+"\n" {
			t.Fatalf("read %q, %v; want the echo of %q before the next is sent", line, err, word)
		}
		next <- struct{}{}
	}
	pw.Close()
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("rest of the answer %q, %v", rest, err)
	}
	if got := r.Trailer.Get("X-Sum"); got != "3" {
		t.Fatalf("trailer X-Sum = %q, want 3", got)
	}
	if r.TransferEncoding == nil || r.TransferEncoding[0] != "chunked" {
		t.Fatalf("transfer encoding %v, want chunked", r.TransferEncoding)
	}
}

// An answer of known length that the application writes slowly reaches
// the client as it is written (within flushEvery per proxy), headers and
// first part before the rest exists, through a follower and the leader.
func TestHTTPSlowAnswerOfKnownLengthIsNotHeldBack(t *testing.T) {
	baseline(t)
	rest := make(chan struct{})
	appB := newApp(t, "b", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "hello")
		_ = http.NewResponseController(w).Flush()
		<-rest
		io.WriteString(w, "world")
	})
	b := startProxy(t, newLead(leading("b", 2)), appB.addr(), Config{})
	a := startProxy(t, newLead(following("b", 2, b.peerAddr())), newApp(t, "a", nil).addr(), Config{})
	res, err := newClient(t).Get("http://" + a.addr + "/slow")
	if err != nil {
		close(rest)
		t.Fatal(err)
	}
	defer res.Body.Close()
	first := make([]byte, 5)
	got := async(func() error { _, err := io.ReadFull(res.Body, first); return err })
	if err := recv(t, got, "the first part before the rest is written"); err != nil || string(first) != "hello" {
		close(rest)
		t.Fatalf("read %q, %v", first, err)
	}
	close(rest)
	if b, err := io.ReadAll(res.Body); err != nil || string(b) != "world" || res.ContentLength != 10 {
		t.Fatalf("rest %q, %v, length %d", b, err, res.ContentLength)
	}
}

// An upgraded connection (WebSocket's mechanism) works through a follower
// and the leader, and is cut at once when the leader stops leading.
func TestHTTPUpgradeAndCutOnLoss(t *testing.T) {
	baseline(t)
	appB := newApp(t, "b", echoUpgrade)
	appA := newApp(t, "a", nil)
	lb := newLead(leading("b", 2))
	b := startProxy(t, lb, appB.addr(), Config{})
	a := startProxy(t, newLead(following("b", 2, b.peerAddr())), appA.addr(), Config{})

	conn, br := upgrade(t, a.addr)
	defer conn.Close()
	for _, msg := range []string{"hello\n", "again\n"} {
		if _, err := io.WriteString(conn, msg); err != nil {
			t.Fatal(err)
		}
		if line, err := br.ReadString('\n'); err != nil || line != msg {
			t.Fatalf("echo %q, %v; want %q", line, err, msg)
		}
	}
	if got := b.State().InFlight; got != 0 {
		t.Fatalf("in flight on the leader: %d; a tunnel must not hold a hand-over back", got)
	}
	lb.set(following("a", 3, a.peerAddr()))
	conn.SetReadDeadline(time.Now().Add(patience))
	closed(t, br)
}

// echoUpgrade switches to an echo protocol on "Upgrade: echo".
func echoUpgrade(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Upgrade") != "echo" {
		http.Error(w, "want Upgrade: echo", http.StatusBadRequest)
		return
	}
	w.Header().Set("Connection", "Upgrade")
	w.Header().Set("Upgrade", "echo")
	w.WriteHeader(http.StatusSwitchingProtocols)
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	_, _ = io.Copy(c, brw)
}

// upgrade opens an echo tunnel through addr.
func upgrade(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(res.Header.Get("Upgrade"), "echo") {
		t.Fatalf("upgrade answered %s %v", res.Status, res.Header)
	}
	for k := range res.Header {
		if strings.HasPrefix(strings.ToLower(k), "electd") {
			t.Fatalf("the 101 shows the client %s", k) // the tunnel's token is for proxies only
		}
	}
	return conn, br
}
