package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"

	"github.com/electd/electd/tests/harness/invariant"
	"github.com/electd/electd/tests/harness/zktest"
)

// env is the ZooKeeper a group of runs shares: a standalone server or a
// 3-server ensemble (with peer proxies, so one server can be isolated).
type env struct {
	ens       *zktest.Ensemble
	size      int
	tick      time.Duration
	syncLimit int
}

func newEnv(t *testing.T, size int, tick time.Duration, syncLimit int) *env {
	t.Helper()
	ens := zktest.Start(t, zktest.Options{
		Servers:     size,
		TickTime:    tick,
		SyncLimit:   syncLimit,
		PeerProxies: size > 1,
	})
	e := &env{ens: ens, size: size, tick: tick, syncLimit: syncLimit}
	if err := e.waitReady(time.Minute); err != nil {
		t.Fatalf("zookeeper not ready: %v", err)
	}
	return e
}

func (e *env) members() []*zktest.Member { return e.ens.Members() }

// servers is the ensemble's own client addresses (no proxies), for the
// test's direct reads.
func (e *env) servers() []string { return strings.Split(e.ens.ConnectString(), ",") }

func (e *env) waitReady(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return e.ens.WaitReady(ctx)
}

// index is m's position in members(), -1 if it is not one.
func (e *env) index(m *zktest.Member) int {
	for i, x := range e.members() {
		if x == m {
			return i
		}
	}
	return -1
}

// memberOf is the index of the server holding session sid's connection, -1
// when none does.
func (e *env) memberOf(sid int64) int {
	i, _ := e.connection(sid)
	return i
}

// connection finds the server holding session sid's connection (-1 when none
// does) and when that connection was established.
func (e *env) connection(sid int64) (int, time.Time) {
	m, est := e.ens.Connection(sid)
	if m == nil {
		return -1, est
	}
	return e.index(m), est
}

// zkLeader is the index of the ZooKeeper leader (or the standalone server).
func (e *env) zkLeader() int { return e.index(e.ens.Leader()) }

// follower is the index of some server that is not the ZooKeeper leader.
func (e *env) follower() int {
	l := e.zkLeader()
	for i := range e.members() {
		if i != l {
			return i
		}
	}
	return -1
}

// quietLogger silences go-zookeeper.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// readNodes reads the children of path with their data (the participant id)
// and ephemeral owners, straight from the ensemble.
func readNodes(servers []string, path string, timeout time.Duration) ([]invariant.Node, error) {
	conn, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		return nil, err
	}
	type result struct {
		nodes []invariant.Node
		err   error
	}
	done := make(chan result, 1)
	go func() {
		names, _, err := conn.Children(path)
		if errors.Is(err, zk.ErrNoNode) {
			done <- result{}
			return
		}
		if err != nil {
			done <- result{err: fmt.Errorf("children of %s: %w", path, err)}
			return
		}
		var nodes []invariant.Node
		for _, n := range names {
			data, stat, err := conn.Get(path + "/" + n)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				done <- result{err: fmt.Errorf("get %s/%s: %w", path, n, err)}
				return
			}
			nodes = append(nodes, invariant.Node{Name: n, ID: string(data), Owner: stat.EphemeralOwner})
		}
		done <- result{nodes: nodes}
	}()
	defer conn.Close()
	select {
	case r := <-done:
		return r.nodes, r.err
	case <-time.After(timeout):
		return nil, fmt.Errorf("reading %s: no answer within %s", path, timeout)
	}
}

// startMember and stopMember restart one server in place (same data).
func startMember(m *zktest.Member) error { return m.Start() }

func stopMember(m *zktest.Member) error { return m.Stop() }
