package prometheus

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/zktest"
)

// scrapeLeader runs electd, with its forwarding proxy, as the one
// participant of an election on a real ZooKeeper, waits until it leads (so
// that every gauge has its leader's value and a lease has been renewed) and
// returns its /metrics.
func scrapeLeader(t *testing.T) []byte {
	t.Helper()
	zk := zktest.Start(t, zktest.Options{Servers: 1})
	listen, err1 := electdtest.FreeAddr()
	app, err2 := electdtest.FreeAddr() // nothing listens there: the proxy's metrics exist all the same
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	p := electdtest.Start(t, electdtest.Spec{Name: "metrics-1", Config: &electdtest.Config{
		ID: "metrics-1", Servers: []string{zk.ConnectString()}, SessionTimeout: 4 * time.Second,
		Path: "/services/metrics", ProxyListen: listen, ProxyApp: app,
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitHTTP(ctx, "/healthz/leader", http.StatusOK); err != nil {
		t.Fatalf("electd did not lead within 30 s: %v", err)
	}
	code, b, err := p.Get(ctx, "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", code, err)
	}
	return b
}
