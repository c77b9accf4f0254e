package proxy

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/proxy"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/ledger"
)

// hidden is the request a faulty one carries in what should be its body.
const hidden = "GET /smuggled HTTP/1.1\r\nHost: app\r\n\r\n"

// framingFaults are issue 37's requests whose framing a lenient server
// reads otherwise than a strict front proxy: a chunk line at fault (first
// or after a sound chunk), Content-Length beside Transfer-Encoding, and
// Transfer-Encoding on HTTP/1.0. Each hides a GET /smuggled.
var framingFaults = func() []struct{ name, req string } {
	chunked := func(path, body string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n" + body + hidden
	}
	var out []struct{ name, req string }
	for i, line := range []string{"5\nhello\r\n", "zz\r\n", "10000000000000000\r\n"} {
		out = append(out,
			struct{ name, req string }{fmt.Sprintf("first chunk line %d", i), chunked(fmt.Sprintf("/framing-a%d", i), line)},
			struct{ name, req string }{fmt.Sprintf("later chunk line %d", i), chunked(fmt.Sprintf("/framing-b%d", i), "3\r\nabc\r\n"+line)})
	}
	return append(out,
		struct{ name, req string }{"Content-Length and Transfer-Encoding",
			"POST /framing-c HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden},
		struct{ name, req string }{"Transfer-Encoding on HTTP/1.0",
			"POST /framing-d HTTP/1.0\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden})
}()

// Issue 37, failures 1 and 2, and must have 1: with the defaults, each of
// the requests above, sent on a raw socket to the leader's proxy, to a
// follower's, and to the leader's peer port (HTTP/1.1 inside the peers'
// TLS, with the election's key), is answered 400
// for its framing, before the peer port looks for a forward's headers, and
// its connection closed; the application (Python's http.server, which
// logs what reaches it) gets neither the request nor the one it hid. A
// sound request on a raw socket is still served.
func TestFraming(t *testing.T) {
	c := startCluster(t, setup{n: 3, langs: []string{ledger.Python, ledger.Go}})
	l := c.leadWith(ledger.Python)
	f := c.others(l)[0]
	// The peer port speaks only the peers' TLS: the raw bytes go inside it,
	// with the election's peer key and ALPN http/1.1.
	peerTLS, err := proxy.PeerTLSConfig(electdtest.PeerKey(c.path), "http/1.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, via := range []struct {
		name, addr string
		tls        *tls.Config
	}{{"leader", l.proxy, nil}, {"follower", f.proxy, nil}, {"leader's peer port", l.peer, peerTLS}} {
		t.Run(via.name, func(t *testing.T) {
			for _, tc := range framingFaults {
				code, body, closed := rawSendTLS(t, via.addr, via.tls, tc.req)
				if code != http.StatusBadRequest || !closed || !strings.Contains(body, "framing") {
					t.Errorf("%s: %d %q, connection closed %v; want 400 for its framing, and closed", tc.name, code, body, closed)
				}
			}
		})
	}
	code, _, _ := rawSend(t, f.proxy, "GET /framing-sound HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n")
	if code != http.StatusOK {
		t.Fatalf("a sound request through %s: %d", f.name, code)
	}
	sound := 0
	for _, e := range c.entries() {
		switch {
		case e.Path == "/framing-sound":
			sound++
		case e.Path == "/smuggled" || strings.HasPrefix(e.Path, "/framing-"):
			t.Errorf("the application got %s", e)
		}
	}
	if sound == 0 {
		t.Error("the sound request is in no ledger")
	}
	c.idle()
}

// rawSend writes req on a new connection to addr and returns the first
// answer's status and body, and whether the proxy closed the connection
// after it.
func rawSend(t *testing.T, addr, req string) (int, string, bool) {
	t.Helper()
	return rawSendTLS(t, addr, nil, req)
}

// rawSendTLS is rawSend inside TLS with cfg, when not nil.
func rawSendTLS(t *testing.T, addr string, cfg *tls.Config, req string) (int, string, bool) {
	t.Helper()
	var conn net.Conn
	var err error
	if cfg != nil {
		conn, err = tls.DialWithDialer(&net.Dialer{Timeout: patience}, "tcp", addr, cfg)
	} else {
		conn, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(patience))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer from %s: %v", addr, err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	_, err = br.ReadByte()
	var ne net.Error
	open := err == nil || errors.As(err, &ne) && ne.Timeout()
	return res.StatusCode, strings.TrimSpace(string(b)), !open
}
