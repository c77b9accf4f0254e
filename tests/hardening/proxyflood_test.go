package hardening

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/proxykit"
	"github.com/electd/electd/tests/harness/wait"
)

// flavour is what deploy/k8s-proxy gives the electd container: its memory
// limit, and GOMEMLIMIT as the patch spells it.
type flavour struct {
	limit      int64
	gomemlimit string
}

func proxyFlavour(t *testing.T) flavour {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "k8s-proxy", "app-patch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f := flavour{limit: parseElectdMemoryLimit(t, b)}
	for _, e := range electdContainer(t, b).Env {
		if e.Name == "GOMEMLIMIT" {
			f.gomemlimit = e.Value
		}
	}
	if f.gomemlimit == "" {
		t.Fatal("k8s-proxy/app-patch.yaml: no GOMEMLIMIT value for the electd container")
	}
	return f
}

// pair is the two participants a flood runs against and, when they
// forward, their proxies' ports.
type pair struct {
	ps             []*electdtest.Member
	proxies, peers []string // proxy.listen and proxy.peer_listen of ps[i]
}

// startPair starts two participants of the election at path; with proxied,
// each forwards to an application of its own in this process.
func startPair(t *testing.T, bin, zk, path string, proxied bool, env string) pair {
	t.Helper()
	var pp pair
	for _, id := range []string{"p0", "p1"} {
		addr := electdtest.MustFreeAddr(t)
		log := filepath.Join(t.TempDir(), id+".log")
		f, err := os.Create(log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		var cfg *electdtest.Config
		if proxied {
			app, err := proxykit.StartApp(id, proxykit.NewFence())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(app.Close)
			cfg = &electdtest.Config{Path: path, ProxyListen: electdtest.MustFreeAddr(t), ProxyPeer: electdtest.MustFreeAddr(t), ProxyApp: app.Addr}
			pp.proxies, pp.peers = append(pp.proxies, cfg.ProxyListen), append(pp.peers, cfg.ProxyPeer)
		}
		pp.ps = append(pp.ps, startBin(t, bin, id, addr, log, f, cfg, electdtest.MemberArgs(zk, path, id, "latch", addr), []string{env}))
	}
	return pp
}

// addr is where m takes connections on p.
func (pp pair) addr(m *electdtest.Member, p port) string {
	for i, q := range pp.ps {
		if q == m && p == proxyPort {
			return pp.proxies[i]
		}
		if q == m && p == peerPort {
			return pp.peers[i]
		}
	}
	return m.Addr
}

// waitProxies waits until a GET through each proxy is answered 200 by the
// leader's application.
func (pp pair) waitProxies(t *testing.T) {
	t.Helper()
	client := probeClient()
	for _, addr := range pp.proxies {
		wait.For(t, 20*time.Second, "the application to answer through "+addr, func() bool {
			code, _ := get(client, "http://"+addr+"/ready")
			return code == http.StatusOK
		})
	}
}
