package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/electd/electd/tests/harness/ledger"
)

// forgedValues are what a client claims where the proxy alone may speak:
// none of them may reach an application, in a header or a trailer.
var forgedValues = []string{"999999", "evil", "6.6.6.6", "https", "evil.example"}

// Issue 37, must have 3 (items 4 and 5): a chunked POST, sent on a raw
// socket, whose trailers claim the fencing token, the leader's id and the
// client's address (Electd-Fencing-Token, Electd-Leader-Id,
// X-Forwarded-For), and whose headers carry the underscore forms of the
// forwarding headers (X_Forwarded_For, X_Forwarded_Proto,
// X_Forwarded_Host), which CGI and WSGI servers read as the real ones.
// Through the leader's proxy and a follower's (whose forward the leader's
// peer port receives), the Python application, which logs the raw
// request, gets none of the forged values: the fencing headers and the
// forwarding headers the proxies set, and the honest trailer.
func TestOwnedHeaders(t *testing.T) {
	c := startCluster(t, setup{n: 3, langs: []string{ledger.Python}})
	l := c.settled(nil)
	token := strconv.FormatInt(leaderToken(t, l), 10)
	for _, via := range []*member{l, c.others(l)[0]} {
		t.Run("through "+via.name, func(t *testing.T) {
			id := fmt.Sprintf("owned-%s-%d", via.name, time.Now().UnixNano())
			forgedPost(t, via.proxy, id)
			var arrive, done *ledger.Entry
			for _, e := range c.entries() {
				if e.ID == id {
					switch e.Ev {
					case ledger.Arrive:
						arrive = &e
					case ledger.Done:
						done = &e
					}
				}
			}
			if arrive == nil || done == nil {
				t.Fatalf("request %s: arrival %v, done %v in the ledgers", id, arrive, done)
			}
			for _, h := range []map[string][]string{arrive.Header, done.Trailer} {
				for k, vs := range h {
					if strings.Contains(k, "_") {
						t.Errorf("the application got %s: %q", k, vs)
					}
					for _, v := range vs {
						for _, f := range forgedValues {
							if strings.Contains(v, f) {
								t.Errorf("the application got %s: %q", k, v)
							}
						}
					}
				}
			}
			if arrive.Token != token || arrive.Leader != l.name {
				t.Errorf("the application got fencing token %q and leader %q, want %s and %s", arrive.Token, arrive.Leader, token, l.name)
			}
			if got := arrive.Header["x-forwarded-for"]; len(got) != 1 || got[0] != "127.0.0.1" {
				t.Errorf("the application got X-Forwarded-For %q, want the client's address", got)
			}
			if len(done.Trailer) != 1 || strings.Join(done.Trailer["x-sum"], ",") != "42" {
				t.Errorf("the application got trailers %v, want X-Sum: 42 alone", done.Trailer)
			}
		})
	}
	c.idle()
}

// forgedPost sends the chunked POST with forged trailers and underscore
// headers to addr on a socket of its own, and wants a 200.
func forgedPost(t *testing.T, addr, id string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(patience))
	fmt.Fprintf(conn, "POST /owned HTTP/1.1\r\nHost: svc.example\r\nX-Request-Id: %s\r\nTransfer-Encoding: chunked\r\n"+
		"Trailer: Electd-Fencing-Token, Electd-Leader-Id, X-Forwarded-For, X-Sum\r\n"+
		"X_Forwarded_For: 6.6.6.6\r\nX_Forwarded_Proto: https\r\nX_Forwarded_Host: evil.example\r\nConnection: close\r\n\r\n"+
		"5\r\nhello\r\n0\r\nElectd-Fencing-Token: 999999\r\nElectd-Leader-Id: evil\r\nX-Forwarded-For: 6.6.6.6\r\nX-Sum: 42\r\n\r\n", id)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("POST %s through %s: %v", id, addr, err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST %s through %s: %s %q", id, addr, res.Status, body)
	}
}

// Issue 37, must have 7 (item 9): clients that speak HTTP/2 with prior
// knowledge (Go's x/net/http2 transport, and curl) reach an HTTP/1.1
// application (the Python one, proxy.app_protocol at its default) through
// the leader's proxy and a follower's: 200, and the application's ledger
// has each request once, as HTTP/1.1 (an HTTP/2 preface, PRI * HTTP/2.0,
// is never a request it logs).
func TestH2CClientToHTTP1App(t *testing.T) {
	c := startCluster(t, setup{n: 3, langs: []string{ledger.Python}})
	l := c.settled(nil)
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: patience}
	curl, _ := exec.LookPath("curl")
	var ids []string
	for _, via := range []*member{l, c.others(l)[0]} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			id := fmt.Sprintf("h2c-%s-%s-%d", via.name, strings.ToLower(method), time.Now().UnixNano())
			req, _ := http.NewRequest(method, "http://"+via.proxy+"/h2c", strings.NewReader("a body"))
			if method == http.MethodGet {
				req.Body, req.ContentLength = nil, 0
			}
			r := ledger.Do(client, via.name, id, req)
			if r.Err != nil || r.Code != http.StatusOK {
				t.Errorf("h2c %s through %s: %v", method, via.name, r)
			}
			noLeak(t, r)
			ids = append(ids, id)
		}
		if curl == "" {
			t.Log("no curl: only Go's HTTP/2 client")
			continue
		}
		id := fmt.Sprintf("h2c-curl-%s-%d", via.name, time.Now().UnixNano())
		out, err := exec.Command(curl, "-sS", "--http2-prior-knowledge", "--max-time", "30", "-o", "/dev/null",
			"-w", "%{http_code} %{http_version}", "-H", "X-Request-Id: "+id, "http://"+via.proxy+"/h2c").CombinedOutput()
		if err != nil || string(out) != "200 2" {
			t.Errorf("curl --http2-prior-knowledge through %s: %q %v, want 200 over HTTP/2", via.name, out, err)
		}
		ids = append(ids, id)
	}
	byID := ledger.ByID(c.entries())
	for _, id := range ids {
		if es := byID[id]; len(es) != 1 || es[0].Proto != "HTTP/1.1" {
			t.Errorf("%s reached the applications as %v, want once as HTTP/1.1", id, es)
		}
	}
	for _, e := range c.entries() {
		if e.Method == "PRI" || strings.HasPrefix(e.Proto, "HTTP/2") {
			t.Errorf("an application got %s", e)
		}
	}
	c.idle()
}
