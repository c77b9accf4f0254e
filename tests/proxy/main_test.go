package proxy

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/electd/electd/tests/harness/ledger"
	"github.com/electd/electd/tests/harness/zktest"
)

// The package's tests share one standalone ZooKeeper, each on its own
// election paths: a JVM start per test would cost more than most tests take.
var shared struct {
	once sync.Once
	ens  *zktest.Ensemble
	err  error
}

func TestMain(m *testing.M) {
	ledger.MainIfApp() // a copy of this binary started as a Go application
	code := m.Run()
	if shared.ens != nil {
		shared.ens.Close()
	}
	os.Exit(code)
}

// zookeeper is the package's ZooKeeper, started by the first test that asks
// (zktest.Require: skipped in -short mode, a failure when Java or a jar is
// missing).
func zookeeper(t *testing.T) *zktest.Ensemble {
	t.Helper()
	zktest.Require(t)
	shared.once.Do(func() { shared.ens, shared.err = zktest.StartEnsemble(zktest.Options{}) })
	if shared.err != nil {
		t.Fatal(fmt.Errorf("dataplane: ZooKeeper: %w", shared.err))
	}
	return shared.ens
}
