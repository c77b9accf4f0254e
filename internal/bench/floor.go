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
// can cost. Rounds alternate between a server with forceSync=no (the
// bench's, as zktest runs them) and one with forceSync=yes, ZooKeeper's
// default, which fsyncs the transaction log before it acknowledges a write.
type FloorResult struct {
	// DeleteToWatch: one client deletes a node until another client's
	// watch on it fires. DeleteAck: the delete's own round-trip. Read: a
	// getChildren round-trip (a successor's re-check).
	DeleteToWatch, DeleteAck, Read Dist
	// The same on the forceSync=yes server.
	FsyncDeleteToWatch, FsyncDeleteAck Dist
}

// floorRig is two clients of one server and a directory for the nodes.
type floorRig struct {
	owner, watcher *zk.Conn
	n              int
}

const floorDir = "/bench-floor"

func newFloorRig(ens *zktest.Ensemble) (*floorRig, error) {
	owner, _, err := zk.Connect(ens.Servers(), 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		return nil, err
	}
	watcher, _, err := zk.Connect(ens.Servers(), 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		owner.Close()
		return nil, err
	}
	r := &floorRig{owner: owner, watcher: watcher}
	if _, err := owner.Create(floorDir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *floorRig) close() {
	r.owner.Close()
	r.watcher.Close()
}

// round creates a node, watches it from the other client, reads the
// directory, deletes the node and times the watch and the delete.
func (r *floorRig) round() (toWatch, ack, read time.Duration, err error) {
	r.n++
	node := floorDir + "/n" + strconv.Itoa(r.n)
	if _, err := r.owner.Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		return 0, 0, 0, err
	}
	_, _, ch, err := r.watcher.GetW(node)
	if err != nil {
		return 0, 0, 0, err
	}
	fired := make(chan time.Time, 1)
	go func() {
		<-ch
		fired <- time.Now()
	}()
	rs := time.Now()
	if _, _, err := r.watcher.Children(floorDir); err != nil {
		return 0, 0, 0, err
	}
	read = time.Since(rs)
	t0 := time.Now()
	if err := r.owner.Delete(node, -1); err != nil {
		return 0, 0, 0, err
	}
	ack = time.Since(t0)
	select {
	case at := <-fired:
		return at.Sub(t0), ack, read, nil
	case <-time.After(10 * time.Second):
		return 0, 0, 0, fmt.Errorf("watch on %s did not fire", node)
	}
}

// runFloor alternates rounds between the bench's standalone server and a
// second one with forceSync=yes.
func runFloor(ctx context.Context, env *env, warmup, rounds int) (*FloorResult, error) {
	synced, err := zktest.StartEnsemble(zktest.Options{ForceSync: true})
	if err != nil {
		return nil, err
	}
	defer synced.Close()
	plain, err := newFloorRig(env.single)
	if err != nil {
		return nil, err
	}
	defer plain.close()
	fsync, err := newFloorRig(synced)
	if err != nil {
		return nil, err
	}
	defer fsync.close()
	res := &FloorResult{}
	for i := range warmup + rounds {
		w, a, r, err := plain.round()
		if err != nil {
			return nil, err
		}
		fw, fa, _, err := fsync.round()
		if err != nil {
			return nil, fmt.Errorf("forceSync=yes: %w", err)
		}
		if i >= warmup {
			res.DeleteToWatch, res.DeleteAck, res.Read = append(res.DeleteToWatch, w), append(res.DeleteAck, a), append(res.Read, r)
			res.FsyncDeleteToWatch, res.FsyncDeleteAck = append(res.FsyncDeleteToWatch, fw), append(res.FsyncDeleteAck, fa)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	env.progress("floor: delete->watch %s; with forceSync=yes %s", res.DeleteToWatch, res.FsyncDeleteToWatch)
	return res, nil
}

// quietZK drops go-zookeeper's log lines (connects and disconnects).
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
