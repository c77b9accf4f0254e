package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/electd/electd/tests/harness/zktest"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// FloorResult is what ZooKeeper itself takes, measured with two plain
// go-zookeeper clients and no election: the least any recipe's handoff
// can cost. Rounds alternate between a server with forceSync=no (the
// bench's, as zktest runs them) and one with forceSync=yes, ZooKeeper's
// default, which fsyncs the transaction log before it acknowledges a write.
type FloorResult struct {
	// DeleteToWatch: one client deletes a node until another client's
	// watch on it fires. ToRead: until that client's getChildren, sent
	// when the watch fired, is answered (a successor's re-check: the least
	// a queue recipe's handoff takes). DeleteAck: the delete's round-trip.
	DeleteToWatch, ToRead, DeleteAck Dist
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

// idleBefore is how long a floor round leaves both clients and the server
// idle before the delete, as a handoff finds them: threads that just
// served a request wake faster than idle ones, and on this virtual machine
// that difference is most of a loopback round-trip.
const idleBefore = 100 * time.Millisecond

// round creates a node, watches it from the other client, waits idle, then
// deletes it, and times the other client's watch and its getChildren right
// after (what a successor does), and the delete's round-trip.
func (r *floorRig) round(ctx context.Context) (toWatch, toRead, ack time.Duration, err error) {
	r.n++
	node := floorDir + "/n" + strconv.Itoa(r.n)
	if _, err := r.owner.Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		return 0, 0, 0, err
	}
	_, _, ch, err := r.watcher.GetW(node)
	if err != nil {
		return 0, 0, 0, err
	}
	type seen struct {
		fired, read time.Time
		err         error
	}
	done := make(chan seen, 1)
	go func() {
		<-ch
		s := seen{fired: time.Now()}
		_, _, s.err = r.watcher.Children(floorDir)
		s.read = time.Now()
		done <- s
	}()
	if err := sleep(ctx, idleBefore); err != nil {
		return 0, 0, 0, err
	}
	t0 := time.Now()
	if err := r.owner.Delete(node, -1); err != nil {
		return 0, 0, 0, err
	}
	ack = time.Since(t0)
	select {
	case s := <-done:
		return s.fired.Sub(t0), s.read.Sub(t0), ack, s.err
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
	warmup = max(warmup, rounds/3) // the servers have just started: let their JIT compile the paths
	for i := range warmup + rounds {
		w, r, a, err := plain.round(ctx)
		if err != nil {
			return nil, err
		}
		fw, _, fa, err := fsync.round(ctx)
		if err != nil {
			return nil, fmt.Errorf("forceSync=yes: %w", err)
		}
		if i >= warmup {
			res.DeleteToWatch, res.ToRead, res.DeleteAck = append(res.DeleteToWatch, w), append(res.ToRead, r), append(res.DeleteAck, a)
			res.FsyncDeleteToWatch, res.FsyncDeleteAck = append(res.FsyncDeleteToWatch, fw), append(res.FsyncDeleteAck, fa)
		}
	}
	env.progress("floor: delete->watch %s; with forceSync=yes %s", res.DeleteToWatch, res.FsyncDeleteToWatch)
	return res, nil
}

// quietZK drops go-zookeeper's log lines (connects and disconnects).
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
