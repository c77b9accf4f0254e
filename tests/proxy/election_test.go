package proxy

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/internal/proxy"
	"github.com/electd/electd/third_party/go-zookeeper/zk"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/ledger"
)

// Headers of a forward between peers (the data plane's contract, issue 28
// must have 5), spelled as a peer sends them.
const (
	hElection    = "Electd-Election"
	hLeaderToken = "Electd-Leader-Token"
	hHold        = "Electd-Hold"
	hRequestID   = "Electd-Request-Id"
	hClientProto = "Electd-Client-Proto"
	hNotLeader   = "Electd-Not-Leader"
	hHop         = "Electd-Hop" // the forward before issue 28: a hop count and the hold, nothing else
)

// Issue 28, failure 5: "A forwarded request names no election." Two
// elections on one ZooKeeper, a (one participant) and b (two). A forward as
// a follower of a sends it to a's leader is replayed to b's leader and to
// b's follower, at the address each publishes for its peers: as the proxies
// before issue 28 sent it (Electd-Hop, Electd-Hold), and as the data plane's
// peers send it (HTTP/2 inside the peers' TLS, naming a's election and the fencing
// token of the leader it is meant for). Must have 5: a proxy that is not
// the leader a forward names, of the election it names, refuses it (421,
// Electd-Not-Leader, and its own view), and a request meant for another
// election is never executed. The same forward naming b's own election and
// leader is taken: the refusals are for the election, not for the form.
func TestForwardNamesItsElection(t *testing.T) {
	base := "/dataplane/" + strings.ToLower(unsafePath.ReplaceAllString(t.Name(), "-"))
	a := startCluster(t, setup{n: 1, names: "a", path: base + "/a"})
	b := startCluster(t, setup{n: 2, names: "b", path: base + "/b", langs: []string{ledger.Python, ledger.Go}})
	al, bl := a.settled(nil), b.settled(nil)
	bf := b.others(bl)[0]
	aID, aTok := electionID(t, a.path), leaderToken(t, al)
	bID, bTok := electionID(t, b.path), leaderToken(t, bl)
	t.Logf("election a %s, leader %s with token %d; election b %s, leader %s with token %d", aID, al.name, aTok, bID, bl.name, bTok)

	// Sent as a participant of b would (b's peer key, over TLS): a's key
	// would not get past b's handshake (TestPeerPortNeedsTheKey), and what
	// is checked here is the election the forward names.
	h1, h2c := peerClient(t, b.path, false), peerClient(t, b.path, true)
	var ids []string
	for _, to := range []*member{bl, bf} {
		peer := to.view(t).Proxy.Advertise
		old := replay(h1, to.name, peer, "old-"+to.name, map[string]string{hHop: "1", hHold: "3000"})
		t.Logf("the old form to %s at %s: %v", to.name, peer, old)
		if old.Err == nil && old.Code < 300 {
			t.Errorf("a forward without an election, replayed to %s of another election, was answered %v", to.name, old)
		}
		r := replay(h2c, to.name, peer, "new-"+to.name, forwardHeaders(aID, aTok, "new-"+to.name))
		t.Logf("a's forward to %s at %s: %v", to.name, peer, r)
		switch {
		case r.Err != nil || r.Code != http.StatusMisdirectedRequest || r.Header.Get(hNotLeader) == "":
			t.Errorf("a's forward replayed to %s of election b: %v, want 421 with %s", to.name, r, hNotLeader)
		case r.Header.Get(hElection) != bID:
			t.Errorf("%s's 421 names election %q, want its own view %q", to.name, r.Header.Get(hElection), bID)
		}
		ids = append(ids, old.ID, r.ID)
	}
	control := replay(h2c, bl.name, bl.view(t).Proxy.Advertise, "control", forwardHeaders(bID, bTok, "control"))
	if control.Err != nil || control.Code != http.StatusOK {
		t.Errorf("b's own forward to its leader %s: %v, want 200", bl.name, control)
	}
	seen := ledger.ByID(b.entries())
	for _, id := range ids {
		for _, e := range seen[id] {
			t.Errorf("a forward meant for election a was executed by election b's application: %v", e)
		}
	}
	if got := seen["control"]; len(got) != 1 || got[0].App != bl.name || got[0].Token != strconv.FormatInt(bTok, 10) {
		t.Errorf("b's own forward reached b's applications as %v, want once at %s with token %d", got, bl.name, bTok)
	}
}

// forwardHeaders are a forward's, as a follower of election id sends it to
// the leader holding token.
func forwardHeaders(id string, token int64, requestID string) map[string]string {
	return map[string]string{hElection: id, hLeaderToken: strconv.FormatInt(token, 10), hHold: "3000",
		hRequestID: requestID, hClientProto: "1.1"}
}

// peerClient speaks to a peer port as a participant of the election at
// path does: inside TLS with that election's peer key (tests/harness/electdtest
// gives each election its own), HTTP/2 when h2, else HTTP/1.1.
func peerClient(t *testing.T, path string, h2 bool) *http.Client {
	t.Helper()
	alpn := "http/1.1"
	var p http.Protocols
	p.SetHTTP1(!h2)
	p.SetHTTP2(h2)
	if h2 {
		alpn = "h2"
	}
	cfg, err := proxy.PeerTLSConfig(electdtest.PeerKey(path), alpn)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: nil, TLSClientConfig: cfg, Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Timeout: patience, Transport: tr}
}

// replay sends a POST with a body and the headers h to a peer's address;
// a client with a TLS configuration sends it inside TLS.
func replay(c *http.Client, via, addr, id string, h map[string]string) ledger.Request {
	scheme := "http://"
	if tr, ok := c.Transport.(*http.Transport); ok && tr.TLSClientConfig != nil {
		scheme = "https://"
	}
	req, _ := http.NewRequest(http.MethodPost, scheme+addr+"/w", strings.NewReader("replayed"))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	return ledger.Do(c, via, id, req)
}

// electionID is the election's identity as a forward names it: its path
// (with the chroot; none here) and the czxid of its node.
func electionID(t *testing.T, path string) string {
	t.Helper()
	conn, _, err := zk.Connect(zookeeper(t).Servers(), 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ok, stat, err := conn.Exists(path)
	if err != nil || !ok {
		t.Fatalf("election node %s: exists %v, %v", path, ok, err)
	}
	return fmt.Sprintf("%s@0x%x", path, stat.Czxid)
}

// leaderToken is l's fencing token as its /leader shows it.
func leaderToken(t *testing.T, l *member) int64 {
	t.Helper()
	v := l.view(t)
	if v.Leader == nil || v.Leader.ID != l.name {
		t.Fatalf("%s does not lead: %+v", l.name, v.Leader)
	}
	return v.Leader.FencingToken
}

// quiet silences go-zookeeper.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
