package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/ledger"
)

// What a client claims in the forwarding headers: a proxy must not believe
// it unless the client is a front load balancer it trusts.
var claimed = map[string]string{
	"X-Forwarded-For":   "6.6.6.6",
	"X-Forwarded-Proto": "https",
	"X-Forwarded-Host":  "claimed.example",
	"Forwarded":         "for=6.6.6.6;proto=https",
}

// Issue 28, failure 6: request trailers dropped, a 101 that shows the
// client Electd-Fencing-Token, a client's own Forwarded and
// X-Forwarded-Proto reaching the application unchanged, and as many
// X-Forwarded-For entries as hops. Must have 4: trailers are forwarded, and
// no Electd-* header reaches a client (101 answers included) or an
// application (but the fencing token and leader id the last proxy sets).
// Must have 6: X-Forwarded-For gets one entry, the client's address, by
// the proxy facing the client; X-Forwarded-Proto, X-Forwarded-Host and
// Forwarded are set by that proxy, what the client sent in them dropped
// (proxy.trusted_proxies empty). Each request carries a request id
// (X-Request-Id, the client's when it sent a sane one). One hop (the
// leader's proxy to its application) and two (a follower's proxy, then the
// leader's), for the Go and the Python application.
func TestHeaders(t *testing.T) {
	eachLang(t, func(t *testing.T, c *cluster, lang string, l *member) {
		for _, via := range []*member{l, c.others(l)[0]} {
			hops := map[bool]string{true: "one hop", false: "two hops"}[via == l]
			t.Run("trailers, "+hops, func(t *testing.T) { checkTrailers(t, c, via) })
			t.Run("forwarding headers, "+hops, func(t *testing.T) { checkForwarding(t, c, via) })
			t.Run("a client's Electd-* headers, "+hops, func(t *testing.T) { checkForged(t, c, via, l) })
			if lang == ledger.Go { // http.server does not upgrade
				t.Run("101, "+hops, func(t *testing.T) { checkUpgradeHeaders(t, via) })
			}
		}
	})
}

// checkTrailers sends a chunked POST with a trailer through via.
func checkTrailers(t *testing.T, c *cluster, via *member) {
	id := fmt.Sprintf("trailer-%s-%d", via.name, time.Now().UnixNano())
	req, _ := http.NewRequest(http.MethodPost, "http://"+via.proxy+"/w", io.NopCloser(strings.NewReader("a chunked body")))
	req.Trailer = http.Header{"X-Sum": {"42"}}
	r := ledger.Do(ledger.Client(patience), via.name, id, req)
	if r.Err != nil || r.Code != http.StatusOK {
		t.Fatalf("chunked POST with a trailer: %v", r)
	}
	noLeak(t, r)
	for _, e := range c.entries() {
		if e.ID == id && e.Ev == ledger.Done {
			if got := e.Trailer["x-sum"]; len(got) != 1 || got[0] != "42" {
				t.Errorf("the application (%s, %s) got trailers %v, want X-Sum: 42", e.App, e.Lang, e.Trailer)
			}
			return
		}
	}
	t.Errorf("no done line for %s in the ledgers", id)
}

// checkForwarding sends a GET that claims forwarding headers, with no
// request id, through via.
func checkForwarding(t *testing.T, c *cluster, via *member) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+via.proxy+"/r", nil)
	req.Host = "svc.example"
	for k, v := range claimed {
		req.Header.Set(k, v)
	}
	e := arrival(t, c, via, req)
	want := map[string]string{"x-forwarded-for": "127.0.0.1", "x-forwarded-proto": "http", "x-forwarded-host": "svc.example"}
	for k, v := range want {
		if got := e.Header[k]; len(got) != 1 || got[0] != v {
			t.Errorf("the application got %s %q, want %q", k, got, v)
		}
	}
	if got := e.Header["forwarded"]; len(got) != 1 || !forwardedIs(got[0], "127.0.0.1", "svc.example", "http") {
		t.Errorf("the application got Forwarded %q, want one element for=127.0.0.1;host=svc.example;proto=http", got)
	}
	if id := e.Get("X-Request-Id"); id == "" || len(id) > 128 || strings.ContainsFunc(id, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		t.Errorf("the application got X-Request-Id %q, want one the first proxy made", id)
	}
}

// checkForged sends a GET with Electd-* headers of its own through via: on
// a client's port they are a client's, removed (not a forward, nor an
// error); l leads.
func checkForged(t *testing.T, c *cluster, via, l *member) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+via.proxy+"/r", nil)
	for _, k := range []string{"Electd-Fencing-Token", "Electd_Fencing_Token", "Electd-Leader-Id", "Electd-Hop", "Electd-Election", "electd-leader-token"} {
		req.Header[k] = []string{"99"}
	}
	e := arrival(t, c, via, req)
	for k, v := range e.Header {
		if strings.HasPrefix(k, "electd") && k != "electd-fencing-token" && k != "electd-leader-id" && k != "electd-request-id" {
			t.Errorf("a client's %s: %q reached the application", k, v)
		}
	}
	if e.Token != strconv.FormatInt(leaderToken(t, l), 10) || e.Leader != l.name {
		t.Errorf("the application got fencing token %q and leader %q, want %s's", e.Token, e.Leader, l.name)
	}
}

// arrival sends req (without an X-Request-Id) through via, wants a 200
// without Electd-* headers, and returns its arrival in the ledgers, found
// by a path of its own.
func arrival(t *testing.T, c *cluster, via *member, req *http.Request) ledger.Entry {
	t.Helper()
	req.URL.Path = fmt.Sprintf("/r-%s-%d", via.name, time.Now().UnixNano())
	res, err := (ledger.Client(patience)).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	res.Body.Close()
	noLeak(t, ledger.Request{Method: req.Method, Via: via.name, Code: res.StatusCode, Header: res.Header})
	for _, e := range ledger.Arrivals(c.entries()) {
		if e.Path == req.URL.Path {
			return e
		}
	}
	t.Fatalf("GET %s through %s: %d %s; not in the ledgers", req.URL.Path, via.name, res.StatusCode, body)
	return ledger.Entry{}
}

// forwardedIs reports a Forwarded value of one element with these
// parameters (RFC 7239: case-insensitive names, values maybe quoted).
func forwardedIs(v, forIP, host, proto string) bool {
	if strings.Contains(v, ",") {
		return false
	}
	got := map[string]string{}
	for _, pair := range strings.Split(v, ";") {
		k, val, _ := strings.Cut(strings.TrimSpace(pair), "=")
		got[strings.ToLower(k)] = strings.Trim(val, `"`)
	}
	return got["for"] == forIP && got["host"] == host && got["proto"] == proto
}

// checkUpgradeHeaders upgrades a connection through via and reads the 101.
func checkUpgradeHeaders(t *testing.T, via *member) {
	conn, _, res := upgrade(t, via.proxy, "upgrade-"+via.name)
	conn.Close()
	noLeak(t, ledger.Request{Method: "GET (Upgrade)", Via: via.name, Code: res.StatusCode, Header: res.Header})
}

// upgrade asks the application behind addr's proxy to switch protocols
// (a WebSocket handshake's shape; the Go application echoes what follows),
// and returns the connection with the 101 read.
func upgrade(t *testing.T, addr, id string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(patience))
	fmt.Fprintf(conn, "GET /ws HTTP/1.1\r\nHost: svc.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nX-Request-Id: %s\r\n\r\n", id)
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		conn.Close()
		t.Fatalf("upgrade through %s: %v %v", addr, res, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, br, res
}

// noLeak fails t for an Electd-* header in r's answer.
func noLeak(t *testing.T, r ledger.Request) {
	t.Helper()
	for _, v := range ledger.Leaks([]ledger.Request{r}) {
		t.Errorf("an Electd-* header reached the client: %s", v)
	}
}

// Must have 6, the other half: with the client's address in
// proxy.trusted_proxies (a front load balancer), what it sent in the
// forwarding headers is kept, and its own address appended.
func TestTrustedProxies(t *testing.T) {
	c := startCluster(t, setup{n: 1, tune: func(cfg *electdtest.Config) { cfg.ProxyTrustedProxies = []string{"127.0.0.0/8"} }})
	l := c.settled(nil)
	req, _ := http.NewRequest(http.MethodGet, "http://"+l.proxy+"/trusted", nil)
	req.Host = "svc.example"
	for k, v := range claimed {
		req.Header.Set(k, v)
	}
	r := ledger.Do(ledger.Client(patience), l.name, "trusted", req)
	if r.Err != nil || r.Code != http.StatusOK {
		t.Fatal(r)
	}
	got := ledger.ByID(c.entries())["trusted"]
	if len(got) != 1 {
		t.Fatalf("the request reached the application %d times", len(got))
	}
	e := got[0]
	want := map[string]string{"x-forwarded-for": "6.6.6.6, 127.0.0.1", "x-forwarded-proto": "https", "x-forwarded-host": "claimed.example"}
	for k, v := range want {
		if h := strings.Join(e.Header[k], ", "); h != v {
			t.Errorf("the application got %s %q, want %q", k, h, v)
		}
	}
	if fwd := strings.Join(e.Header["forwarded"], ", "); !strings.HasPrefix(fwd, claimed["Forwarded"]) {
		t.Errorf("the application got Forwarded %q, want the front's %q kept first", fwd, claimed["Forwarded"])
	}
}
