package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/electd/electd/internal/zktest"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// FloorResult is what ZooKeeper itself takes, measured with two plain
// go-zookeeper clients and no election: the least any recipe's handoff
// can cost.
type FloorResult struct {
	// DeleteToWatch: one client deletes a node until another client's
	// watch on it fires.
	DeleteToWatch Dist
	// DeleteAck: the delete's own round-trip.
	DeleteAck Dist
	// Read: a getChildren round-trip (a successor's re-check).
	Read Dist
	// Fsync* are the same on a server with forceSync=yes, ZooKeeper's
	// default, which fsyncs the transaction log before it acknowledges a
	// write (nil when not measured).
	FsyncDeleteToWatch, FsyncDeleteAck Dist
}

// runFloor measures the floor on the bench's standalone server
// (forceSync=no) and on a second standalone server with forceSync=yes.
func runFloor(ctx context.Context, env *env, warmup, rounds int) (*FloorResult, error) {
	res := &FloorResult{}
	var err error
	res.DeleteToWatch, res.DeleteAck, res.Read, err = measureFloor(ctx, env.single, warmup, rounds)
	if err != nil {
		return nil, err
	}
	env.progress("floor: delete->watch %s", res.DeleteToWatch)
	synced, err := zktest.StartEnsemble(zktest.Options{ForceSync: true})
	if err != nil {
		return nil, err
	}
	defer synced.Close()
	res.FsyncDeleteToWatch, res.FsyncDeleteAck, _, err = measureFloor(ctx, synced, warmup, rounds)
	if err != nil {
		return nil, fmt.Errorf("forceSync=yes: %w", err)
	}
	env.progress("floor with forceSync=yes: delete->watch %s", res.FsyncDeleteToWatch)
	return res, nil
}

func measureFloor(ctx context.Context, ens *zktest.Ensemble, warmup, rounds int) (toWatch, ack, read Dist, err error) {
	owner, _, err := zk.Connect(ens.Servers(), 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		return nil, nil, nil, err
	}
	defer owner.Close()
	watcher, _, err := zk.Connect(ens.Servers(), 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		return nil, nil, nil, err
	}
	defer watcher.Close()
	const dir = "/bench-floor"
	if _, err := owner.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		return nil, nil, nil, err
	}
	for i := range warmup + rounds {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		node := dir + "/n" + strconv.Itoa(i)
		if _, err := owner.Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			return nil, nil, nil, err
		}
		_, _, ch, err := watcher.GetW(node)
		if err != nil {
			return nil, nil, nil, err
		}
		fired := make(chan time.Time, 1)
		go func() {
			<-ch
			fired <- time.Now()
		}()
		rs := time.Now()
		if _, _, err := watcher.Children(dir); err != nil {
			return nil, nil, nil, err
		}
		readTook := time.Since(rs)
		t0 := time.Now()
		if err := owner.Delete(node, -1); err != nil {
			return nil, nil, nil, err
		}
		acked := time.Now()
		var at time.Time
		select {
		case at = <-fired:
		case <-time.After(10 * time.Second):
			return nil, nil, nil, fmt.Errorf("watch on %s did not fire", node)
		}
		if i >= warmup {
			toWatch = append(toWatch, at.Sub(t0))
			ack = append(ack, acked.Sub(t0))
			read = append(read, readTook)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, nil, nil, err
		}
	}
	return toWatch, ack, read, nil
}

// quietZK drops go-zookeeper's log lines (connects and disconnects).
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
