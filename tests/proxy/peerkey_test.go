package proxy

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/proxy"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/ledger"
)

// Issue 37, item 3: "Anyone who reaches the peer port can forge a
// forward." Two sidecars with Python applications. Clients without the
// election's proxy.peer_key (plain HTTP/1.1 and h2c, TLS without a
// certificate, TLS with another election's key) send the leader's peer
// port a forward that names the election, the leader's token and forged
// X-Forwarded-For, Forwarded and X-Forwarded-Proto. Must have 2: none
// gets through (the application's ledger records none of them), and no
// answer names the election, the leader or its token. The same forward
// from a holder of the key is taken: the refusals are for the key.
func TestPeerPortNeedsTheKey(t *testing.T) {
	c := startCluster(t, setup{n: 2, langs: []string{ledger.Python}})
	l := c.settled(nil)
	id, tok := electionID(t, c.path), leaderToken(t, l)
	peer := l.view(t).Proxy.Advertise
	forged := func(rid string) map[string]string {
		h := forwardHeaders(id, tok, rid)
		h["X-Forwarded-For"], h["Forwarded"], h["X-Forwarded-Proto"] = "6.6.6.6", "for=6.6.6.6;proto=https", "https"
		return h
	}
	other := "/dataplane/another-election"
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	for _, tc := range []struct {
		name   string
		client *http.Client
	}{
		{"plain HTTP/1.1", &http.Client{Timeout: patience, Transport: &http.Transport{Proxy: nil}}},
		{"plain h2c", &http.Client{Timeout: patience, Transport: &http.Transport{Proxy: nil, Protocols: &h2c}}},
		{"TLS without a certificate, HTTP/1.1", tlsClient(t, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}, false)},
		{"TLS without a certificate, h2", tlsClient(t, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}, true)},
		{"another key, HTTP/1.1", keyClient(t, other, false)},
		{"another key, h2", keyClient(t, other, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rid := "forged-" + strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", "-"), ",", "")
			r := replay(tc.client, l.name, peer, rid, forged(rid))
			t.Logf("%s: %v", tc.name, r)
			if r.Err == nil && r.Code < 400 {
				t.Errorf("answered %d: the forward got through", r.Code)
			}
			// A bogus election, which a holder of the key would see
			// bounced (421) with the election's view.
			b := replay(tc.client, l.name, peer, rid+"-bogus", forwardHeaders("/bogus@0x1", tok, rid+"-bogus"))
			for _, got := range []ledger.Request{r, b} {
				if leak := leaks(got, id, l.name, tok); leak != "" {
					t.Errorf("the answer %v reveals %s", got, leak)
				}
			}
		})
	}
	control := replay(peerClient(t, c.path, true), l.name, peer, "control", forwardHeaders(id, tok, "control"))
	if control.Err != nil || control.Code != http.StatusOK {
		t.Errorf("a forward from a holder of the key: %v, want 200", control)
	}
	entries := c.entries()
	seen := ledger.ByID(entries)
	if len(seen["control"]) == 0 {
		t.Errorf("the control forward is not in the ledger")
	}
	for _, e := range entries {
		if strings.HasPrefix(e.ID, "forged-") || strings.Contains(e.Get("X-Forwarded-For"), "6.6.6.6") {
			t.Errorf("the application got a forged forward: %v", e)
		}
	}
	plainPeerAnswer(t, peer, id, l.name, tok)
}

// leaks names what an answer says of the election, or "".
func leaks(r ledger.Request, election, leader string, token int64) string {
	text := r.Body
	for k, vs := range r.Header {
		text += "\n" + k + ": " + strings.Join(vs, ",")
	}
	for _, s := range []string{election, leader, strconv.FormatInt(token, 10), hNotLeader, hElection} {
		if strings.Contains(text, s) {
			return strconv.Quote(s)
		}
	}
	return ""
}

// plainPeerAnswer sends a plain-text request to the peer port on a raw
// socket and reads all it answers: Go's TLS server's 400, nothing of the
// election.
func plainPeerAnswer(t *testing.T, peer, election, leader string, token int64) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", peer, patience)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(patience))
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n%s: /bogus@0x1\r\n%s: 1\r\n\r\n", hElection, hLeaderToken)
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	got := b.String()
	if !strings.HasPrefix(got, "HTTP/1.0 400 Bad Request") {
		t.Errorf("a plain request to the peer port got %q, want Go's TLS server's 400", got)
	}
	if leak := leaks(ledger.Request{Body: got}, election, leader, token); leak != "" {
		t.Errorf("the plain answer %q reveals %s", got, leak)
	}
}

// tlsClient speaks to a peer port inside TLS with cfg, h2 or HTTP/1.1.
func tlsClient(t *testing.T, cfg *tls.Config, h2 bool) *http.Client {
	var p http.Protocols
	p.SetHTTP1(!h2)
	p.SetHTTP2(h2)
	tr := &http.Transport{Proxy: nil, TLSClientConfig: cfg, Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Timeout: patience, Transport: tr}
}

// keyClient is tlsClient presenting the peer key of the election at path.
// It accepts any server, so that the refusal is the server's.
func keyClient(t *testing.T, path string, h2 bool) *http.Client {
	alpn := "http/1.1"
	if h2 {
		alpn = "h2"
	}
	cfg, err := proxy.PeerTLSConfig(electdtest.PeerKey(path), alpn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.VerifyConnection = nil
	return tlsClient(t, cfg, h2)
}
