package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/internal/clock"
)

// A forward the old leader's proxy had not taken (it held it while it
// handed over) when a newer leader is known goes to the new leader at
// once: the old proxy answered a ping without having said it took it, and
// never takes anything once its term ended (docs/design/proxy.md, "Forwarding":
// a forward is bound to its leader's term).
func TestHTTPUntakenForwardGoesToTheNewLeader(t *testing.T) {
	baseline(t)
	appB, appC := newApp(t, "b", nil), newApp(t, "c", nil)
	lb := newLead(leading("b", 7))
	b := startProxy(t, lb, appB.addr(), Config{})
	c := startProxy(t, newLead(leading("c", 9)), appC.addr(), Config{})
	la := newLead(following("b", 7, b.peerAddr()))
	a := startProxy(t, la, newApp(t, "a", nil).addr(), Config{})
	cl := newClient(t)
	if code, body := post(t, cl, a.addr); body != "b 7" {
		t.Fatalf("%d %q, want b's answer", code, body)
	}

	// b hands over: what arrives meanwhile waits at b.
	yielding, done := make(chan struct{}), make(chan struct{})
	go b.Yield(context.Background(), func(context.Context) error {
		close(yielding)
		<-done
		lb.set(following("c", 9, c.peerAddr()))
		return nil
	})
	<-yielding
	defer close(done)
	got := async(func() string { _, body := post(t, cl, a.addr); return body })
	waitFor(t, "b to hold the forward", func() bool { return b.Held() == 1 })
	la.set(following("c", 9, c.peerAddr())) // a learns of the newer leader first
	if body := recv(t, got, "the answer"); body != "c 9" {
		t.Fatalf("answer %q, want c 9", body)
	}
	if n := len(appB.requests()); n != 1 || a.rec.resends(ResendUnprocessed) != 1 {
		t.Fatalf("b's application got %d requests (want the first only), a resent %d", n, a.rec.resends(ResendUnprocessed))
	}
}

// A forward the old leader's proxy took (its application has it) when a
// newer leader is known ends at once: a POST with a 503 saying it may or
// may not have been processed, never sent again; a GET goes to the new
// leader (it may be sent twice).
func TestHTTPTakenForwardEndsWhenALeaderFollows(t *testing.T) {
	baseline(t)
	appB, arrived, _ := blockingApp(t, "b")
	appC := newApp(t, "c", nil)
	b := startProxy(t, newLead(leading("b", 7)), appB.addr(), Config{})
	c := startProxy(t, newLead(leading("c", 9)), appC.addr(), Config{})
	la := newLead(following("b", 7, b.peerAddr()))
	a := startProxy(t, la, newApp(t, "a", nil).addr(), Config{})
	cl := newClient(t)
	type answer struct {
		code int
		body string
	}
	postAns := async(func() answer { code, body := post(t, cl, a.addr); return answer{code, body} })
	getAns := async(func() answer { code, body, _ := get(t, cl, a.addr); return answer{code, body} })
	recv(t, arrived, "the first at b's application")
	recv(t, arrived, "the second at b's application")
	la.set(following("c", 9, c.peerAddr()))
	if p := recv(t, postAns, "the POST's answer"); p.code != http.StatusServiceUnavailable || !strings.Contains(p.body, "may or may not have been processed") {
		t.Fatalf("POST: %d %q, want a 503 saying it may have been processed", p.code, p.body)
	}
	if g := recv(t, getAns, "the GET's answer"); g.code != http.StatusOK || g.body != "c 9" {
		t.Fatalf("GET: %d %q, want c's answer", g.code, g.body)
	}
	if n := len(appC.requests()); n != 1 {
		t.Fatalf("c's application got %d requests, want the GET only", n)
	}
	waitFor(t, "maybe_processed counted", func() bool { return a.rec.request(ResultMaybeProcessed) == 1 })
}

// relay copies connections to target both ways until frozen: then it
// forwards no byte either way, as a stopped process or a cut network does,
// while the kernel still completes the handshakes. freezeUp stops only
// what goes to target on the connections open now: a process that stopped
// after it wrote what it had written.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frozen bool
	upTill int // connections accepted before the last freezeUp
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newRelay(t *testing.T, target string) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target}
	r.wg.Go(r.accept)
	t.Cleanup(r.close)
	return r
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) freeze() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frozen = true
}

func (r *relay) freezeUp() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.upTill = len(r.conns) / 2
}

func (r *relay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		i := len(r.conns) / 2
		r.conns = append(r.conns, c, up)
		r.mu.Unlock()
		r.wg.Go(func() { r.copy(up, c, i) })
		r.wg.Go(func() { r.copy(c, up, -1) })
	}
}

// copy copies src to dst; upward is the connection's index when dst is
// the target, else -1.
func (r *relay) copy(dst, src net.Conn, upward int) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		r.mu.Lock()
		frozen := r.frozen || upward >= 0 && upward < r.upTill
		r.mu.Unlock()
		if frozen {
			n = 0 // swallowed
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (r *relay) close() {
	r.ln.Close()
	r.mu.Lock()
	for _, c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// A leader's proxy that stops answering (its process stopped, the network
// cut) is given up on within PeerTimeout, whatever the hold time and the
// response timeout: the forward it had ends with a 503 saying it may or
// may not have been processed. A new connection to it is used only once
// it answered a ping: until then the request is held, and gets its 503 at
// the end of the hold time.
func TestHTTPStalledPeerIsGivenUp(t *testing.T) {
	baseline(t)
	appB := newApp(t, "b", nil)
	b := startProxy(t, newLead(leading("b", 7)), appB.addr(), Config{Clock: clock.Real()})
	r := newRelay(t, b.peerAddr())
	// The hold time and the response timeout are far past this test's
	// patience: only the peer timeout can end the forward in time.
	a := startProxy(t, newLead(following("b", 7, r.addr())), newApp(t, "a", nil).addr(),
		Config{Clock: clock.Real(), PeerTimeout: 300 * time.Millisecond, HoldTime: time.Minute, ResponseTimeout: time.Hour})
	cl := newClient(t)
	if code, body := post(t, cl, a.addr); code != http.StatusOK || body != "b 7" {
		t.Fatalf("through the relay: %d %q", code, body)
	}
	r.freeze()
	code, body := post(t, cl, a.addr)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "stopped answering") {
		t.Fatalf("to a stalled peer: %d %q, want a 503 saying the leader's proxy stopped answering", code, body)
	}
	if n := len(appB.requests()); n != 1 {
		t.Fatalf("b's application got %d requests", n)
	}
}

// A new connection to a peer's proxy is used only once a ping came back:
// a peer that completes the TLS handshake and then says nothing is never
// sent a request; one that does not complete the handshake neither. The
// hold time leaves room for several probes: on a loaded machine a
// handshake with the silent peer may miss its deadline too, and the 503
// names the last probe's failure.
func TestHTTPPeerConnectionNeedsAPing(t *testing.T) {
	baseline(t)
	appB := newApp(t, "b", nil)
	b := startProxy(t, newLead(leading("b", 7)), appB.addr(), Config{Clock: clock.Real()})
	r := newRelay(t, b.peerAddr())
	r.freeze()
	for _, tc := range []struct{ name, peer, want string }{
		{"silent after the handshake", silentPeer(t), "did not answer a ping"},
		{"silent in the handshake", r.addr(), "TLS handshake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := startProxy(t, newLead(following("b", 7, tc.peer)), newApp(t, "a", nil).addr(),
				Config{Clock: clock.Real(), PeerTimeout: 200 * time.Millisecond, DialTimeout: 500 * time.Millisecond, HoldTime: 3 * time.Second})
			code, body := post(t, newClient(t), a.addr)
			if code != http.StatusServiceUnavailable || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %q, want a 503 at the end of the hold time naming %q", code, body, tc.want)
			}
			if n := len(appB.requests()); n != 0 || a.PeerConns() != 0 {
				t.Fatalf("b's application got %d requests; %d peer connections open", n, a.PeerConns())
			}
		})
	}
}

// silentPeer completes the peers' TLS handshake, then reads and never
// answers.
func silentPeer(t *testing.T) string {
	pt, err := newPeerTLS(testPeerKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", pt.serverConfig(alpnH2))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(patience))
				_, _ = io.Copy(io.Discard, c)
			})
		}
	})
	return ln.Addr().String()
}

// The leader's proxy tells the application nothing of the forward but the
// fencing headers and the request's id; the client sees no Electd-*
// header, whatever the application sends (final answers, interim ones).
func TestHTTPNoElectdHeaderLeaks(t *testing.T) {
	baseline(t)
	appB := newApp(t, "b", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.Header().Set("Electd-Early", "1")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("Electd-Secret", "x")
		w.Header().Set(HeaderNotLeader, "1")
		io.WriteString(w, "b")
	})
	b := startProxy(t, newLead(leading("b", 7)), appB.addr(), Config{})
	a := startProxy(t, newLead(following("b", 7, b.peerAddr())), newApp(t, "a", nil).addr(), Config{})
	for _, addr := range []string{a.addr, b.addr} {
		code, body, h := get(t, newClient(t), addr, "X-Request-Id", "client-id-1")
		if code != http.StatusOK || body != "b" {
			t.Fatalf("%d %q", code, body)
		}
		for k := range h {
			if strings.HasPrefix(strings.ToLower(k), "electd") {
				t.Fatalf("the client got %s", k)
			}
		}
	}
	for _, s := range appB.requests() {
		if len(s.electd) != 0 || s.reqID != "client-id-1" {
			t.Fatalf("the application saw %q, request id %q", s.electd, s.reqID)
		}
	}
}

// A leader's proxy that stops mid-answer (HTTP/2 sends an answer's headers
// and its body apart) leaves the client of a follower's proxy nothing of
// that answer: a GET is sent again and answered whole, a POST gets a 503
// saying it may or may not have been processed, never an answer broken
// off (docs/design/proxy.md, "Forwarding": an answer is relayed whole or not at
// all). The relay stops what goes to b on the connection the request came
// on just before b's application answers: b's proxy writes the headers
// and the first part, and never answers the follower's ping.
func TestHTTPLeaderStoppedMidAnswerRelaysNothing(t *testing.T) {
	baseline(t)
	var mu sync.Mutex
	calls := map[string]int{}
	var r *relay
	release := make(chan struct{})
	appB := newApp(t, "b", func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		calls[req.Method]++
		first := calls[req.Method] == 1
		mu.Unlock()
		if !first {
			io.WriteString(w, "b whole")
			return
		}
		r.freezeUp()
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, "b's first ")
		http.NewResponseController(w).Flush()
		select { // the rest never comes
		case <-release:
		case <-req.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	b := startProxy(t, newLead(leading("b", 7)), appB.addr(), Config{Clock: clock.Real()})
	r = newRelay(t, b.peerAddr())
	a := startProxy(t, newLead(following("b", 7, r.addr())), newApp(t, "a", nil).addr(),
		Config{Clock: clock.Real(), PeerTimeout: 300 * time.Millisecond})
	cl := newClient(t)
	if code, body, _ := get(t, cl, a.addr); code != http.StatusOK || body != "b whole" {
		t.Errorf("GET: %d %q, want b's second answer, whole", code, body)
	}
	if n := a.rec.resends(ResendSafe); n < 1 {
		t.Errorf("the GET was resent %d times, want at least once", n)
	}
	// Whichever gives b up first, the follower's ping after the first part
	// or its connection's own (PeerTimeout/2 without a frame, then
	// PeerTimeout/2 for the ping), the POST ends the same way.
	code, body := post(t, cl, a.addr)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "may or may not have been processed") {
		t.Errorf("POST: %d %q, want a 503 saying it may or may not have been processed", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls[http.MethodGet] != 2 || calls[http.MethodPost] != 1 {
		t.Errorf("b's application saw %v, want 2 GETs and 1 POST", calls)
	}
}

// An answer the application of the leader breaks off mid-body while the
// leader's proxy is still there reaches a follower's client as it reached
// the leader's proxy: broken off (what was relayed cannot be taken back);
// an answer that is merely slow is relayed as it is written
// (TestHTTPSlowAnswerOfKnownLengthIsNotHeldBack).
func TestHTTPAnswerBrokenOffByTheApplicationIsCut(t *testing.T) {
	baseline(t)
	cut := make(chan struct{})
	appB := newApp(t, "b", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, "b's first ")
		http.NewResponseController(w).Flush()
		select { // until the client has the first part
		case <-cut:
		case <-r.Context().Done():
		}
		panic(http.ErrAbortHandler)
	})
	b := startProxy(t, newLead(leading("b", 7)), appB.addr(), Config{Clock: clock.Real()})
	a := startProxy(t, newLead(following("b", 7, b.peerAddr())), newApp(t, "a", nil).addr(), Config{Clock: clock.Real()})
	res, err := newClient(t).Get("http://" + a.addr + "/x")
	if err != nil {
		close(cut)
		t.Fatal(err)
	}
	defer res.Body.Close()
	first := make([]byte, len("b's first "))
	_, err = io.ReadFull(res.Body, first)
	close(cut)
	if err != nil || res.StatusCode != http.StatusOK || string(first) != "b's first " {
		t.Fatalf("%d %q %v, want the first part", res.StatusCode, first, err)
	}
	if rest, err := io.ReadAll(res.Body); len(rest) != 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("then %q %v, want the cut", rest, err)
	}
	if n := len(appB.requests()); n != 1 {
		t.Errorf("b's application got %d requests, want 1", n)
	}
}
