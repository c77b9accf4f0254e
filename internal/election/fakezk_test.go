package election

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// fakeZK is a scripted, in-memory ZooKeeper behind the zkConn seam: enough
// of ZooKeeper's semantics (ephemeral owners, sequential names, czxids,
// one-shot watches) to drive each recipe step, and faults to inject the
// error paths: a reply lost after the server applied the request, a refusal,
// a session that changes in the middle of a step. The real-server tests are
// the proof; these are the fast checks of each step.
type fakeZK struct {
	mu     sync.Mutex
	sid    int64 // the session our requests run in
	zxid   int64
	nodes  map[string]*fakeNode
	dataW  map[string][]chan zk.Event // GetW and ExistsW watches by path
	childW map[string][]chan zk.Event // ChildrenW watches by path
	faults []*fakeFault
	ops    []string // "create /e/x", in order, for assertions
	// before runs before each request, outside the lock: a test can change
	// the world (another client's write, a session expiry) mid-step.
	before func(op, p string)
}

type fakeNode struct {
	data []byte
	stat zk.Stat
	acl  []zk.ACL
}

// fakeFault makes the next request matching op and path prefix fail with
// err; with applied, the server applies it first (the reply is lost).
type fakeFault struct {
	op, prefix string
	err        error
	applied    bool
	times      int // how many requests it hits; 0 means 1
}

func newFakeZK(sid int64) *fakeZK {
	f := &fakeZK{sid: sid, nodes: map[string]*fakeNode{"/": {}},
		dataW: map[string][]chan zk.Event{}, childW: map[string][]chan zk.Event{}}
	return f
}

// fail adds a fault.
func (f *fakeZK) fail(op, prefix string, err error, applied bool) *fakeFault {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := &fakeFault{op: op, prefix: prefix, err: err, applied: applied}
	f.faults = append(f.faults, ft)
	return ft
}

// request runs do for op on p, applying faults, and returns do's error or
// the fault's.
func (f *fakeZK) request(op, p string, do func() error) error {
	if f.before != nil {
		f.before(op, p)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, op+" "+p)
	for i, ft := range f.faults {
		if ft.op != op || !strings.HasPrefix(p, ft.prefix) {
			continue
		}
		if ft.times <= 1 {
			f.faults = append(f.faults[:i], f.faults[i+1:]...)
		} else {
			ft.times--
		}
		if ft.applied {
			_ = do()
		}
		return ft.err
	}
	return do()
}

// opCount counts the requests made that start with prefix: an op ("get")
// or an op and a path prefix ("create /e/_c_").
func (f *fakeZK) opCount(prefix string) int {
	if !strings.Contains(prefix, " ") {
		prefix += " "
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, o := range f.ops {
		if strings.HasPrefix(o, prefix) {
			n++
		}
	}
	return n
}

func (f *fakeZK) resetOps() {
	f.mu.Lock()
	f.ops = nil
	f.mu.Unlock()
}

func (f *fakeZK) fire(ws map[string][]chan zk.Event, p string, t zk.EventType) {
	for _, ch := range ws[p] {
		ch <- zk.Event{Type: t, Path: p}
	}
	delete(ws, p)
}

// createAs creates p as session owner (0: persistent); f.mu held.
func (f *fakeZK) createAs(p string, data []byte, flags int32, owner int64, acl []zk.ACL) (string, error) {
	parent := path.Dir(p)
	pn, ok := f.nodes[parent]
	if !ok {
		return "", zk.ErrNoNode
	}
	if flags&zk.FlagSequence != 0 {
		p = fmt.Sprintf("%s%010d", p, pn.stat.Cversion) // ZooKeeper numbers by the parent's cversion
	}
	if _, ok := f.nodes[p]; ok {
		return "", zk.ErrNodeExists
	}
	f.zxid++
	n := &fakeNode{data: append([]byte(nil), data...), acl: acl, stat: zk.Stat{Czxid: f.zxid, Mzxid: f.zxid}}
	if flags&zk.FlagEphemeral != 0 {
		n.stat.EphemeralOwner = owner
	}
	f.nodes[p] = n
	pn.stat.Cversion++
	pn.stat.NumChildren++
	f.fire(f.dataW, p, zk.EventNodeCreated)
	f.fire(f.childW, parent, zk.EventNodeChildrenChanged)
	return p, nil
}

// deleteLocked deletes p; f.mu held.
func (f *fakeZK) deleteLocked(p string) error {
	n, ok := f.nodes[p]
	if !ok {
		return zk.ErrNoNode
	}
	if n.stat.NumChildren > 0 {
		return zk.ErrNotEmpty
	}
	delete(f.nodes, p)
	parent := path.Dir(p)
	f.nodes[parent].stat.NumChildren--
	f.nodes[parent].stat.Cversion++
	f.zxid++
	f.fire(f.dataW, p, zk.EventNodeDeleted)
	f.fire(f.childW, p, zk.EventNodeDeleted) // as the server: its child watches end too
	f.fire(f.childW, parent, zk.EventNodeChildrenChanged)
	return nil
}

// put creates p (and its parents, persistent) as another client with
// flags (zk.FlagEphemeral and zk.FlagSequence count; an ephemeral belongs to
// owner). It returns the path made.
func (f *fakeZK) put(p string, data string, owner int64, flags int32) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(path.Dir(p), "/"), "/") {
		if part == "" {
			continue
		}
		cur += "/" + part
		if _, ok := f.nodes[cur]; !ok {
			_, _ = f.createAs(cur, nil, 0, 0, nil)
		}
	}
	name, err := f.createAs(p, []byte(data), flags, owner, nil)
	if err != nil {
		panic(fmt.Sprintf("fakeZK.put %s: %v", p, err))
	}
	return name
}

// remove deletes p as another client.
func (f *fakeZK) remove(p string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.deleteLocked(p); err != nil {
		panic(fmt.Sprintf("fakeZK.remove %s: %v", p, err))
	}
}

// expire ends session f.sid as the server does (its ephemerals go) and
// makes next the session our requests run in.
func (f *fakeZK) expire(next int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var gone []string
	for p, n := range f.nodes {
		if n.stat.EphemeralOwner == f.sid {
			gone = append(gone, p)
		}
	}
	for _, p := range gone {
		_ = f.deleteLocked(p)
	}
	f.sid = next
}

func (f *fakeZK) exists(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.nodes[p]
	return ok
}

// children lists the names under p, sorted.
func (f *fakeZK) children(p string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.childrenLocked(p)
}

func (f *fakeZK) childrenLocked(p string) []string {
	var out []string
	prefix := strings.TrimSuffix(p, "/") + "/"
	for q := range f.nodes {
		if strings.HasPrefix(q, prefix) && !strings.Contains(q[len(prefix):], "/") && q != "/" {
			out = append(out, q[len(prefix):])
		}
	}
	sort.Strings(out)
	return out
}

func (f *fakeZK) watch(ws map[string][]chan zk.Event, p string) <-chan zk.Event {
	ch := make(chan zk.Event, 1)
	ws[p] = append(ws[p], ch)
	return ch
}

// zkConn

func (f *fakeZK) Create(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	var name string
	err := f.request("create", p, func() (err error) {
		name, err = f.createAs(p, data, flags, f.sid, acl)
		return err
	})
	return name, err
}

func (f *fakeZK) CreateContainer(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	var name string
	err := f.request("create", p, func() (err error) {
		name, err = f.createAs(p, data, 0, 0, acl)
		return err
	})
	return name, err
}

func (f *fakeZK) Delete(p string, _ int32) error {
	return f.request("delete", p, func() error { return f.deleteLocked(p) })
}

func (f *fakeZK) Exists(p string) (ok bool, st *zk.Stat, err error) {
	err = f.request("exists", p, func() error {
		if n, found := f.nodes[p]; found {
			s := n.stat
			ok, st = true, &s
		}
		return nil
	})
	return ok, st, err
}

func (f *fakeZK) ExistsW(p string) (ok bool, st *zk.Stat, ch <-chan zk.Event, err error) {
	err = f.request("exists", p, func() error {
		if n, found := f.nodes[p]; found {
			s := n.stat
			ok, st = true, &s
		}
		ch = f.watch(f.dataW, p)
		return nil
	})
	return ok, st, ch, err
}

func (f *fakeZK) Get(p string) (data []byte, st *zk.Stat, err error) {
	data, st, _, err = f.get(p, false)
	return data, st, err
}

func (f *fakeZK) GetW(p string) (data []byte, st *zk.Stat, ch <-chan zk.Event, err error) {
	return f.get(p, true)
}

// get reads p and, with watch, sets a data watch in the same request, as
// the server does.
func (f *fakeZK) get(p string, watch bool) (data []byte, st *zk.Stat, ch <-chan zk.Event, err error) {
	err = f.request("get", p, func() error {
		n, found := f.nodes[p]
		if !found {
			return zk.ErrNoNode
		}
		s := n.stat
		data, st = append([]byte(nil), n.data...), &s
		if watch {
			ch = f.watch(f.dataW, p)
		}
		return nil
	})
	return data, st, ch, err
}

func (f *fakeZK) Children(p string) (kids []string, st *zk.Stat, err error) {
	kids, st, _, err = f.list(p, false)
	return kids, st, err
}

func (f *fakeZK) ChildrenW(p string) (kids []string, st *zk.Stat, ch <-chan zk.Event, err error) {
	return f.list(p, true)
}

// list lists p and, with watch, sets a child watch in the same request.
func (f *fakeZK) list(p string, watch bool) (kids []string, st *zk.Stat, ch <-chan zk.Event, err error) {
	err = f.request("children", p, func() error {
		n, found := f.nodes[p]
		if !found {
			return zk.ErrNoNode
		}
		s := n.stat
		kids, st = f.childrenLocked(p), &s
		if watch {
			ch = f.watch(f.childW, p)
		}
		return nil
	})
	return kids, st, ch, err
}

func (f *fakeZK) GetACL(p string) (acl []zk.ACL, st *zk.Stat, err error) {
	err = f.request("getacl", p, func() error {
		n, found := f.nodes[p]
		if !found {
			return zk.ErrNoNode
		}
		s := n.stat
		acl, st = append([]zk.ACL(nil), n.acl...), &s
		return nil
	})
	return acl, st, err
}

func (f *fakeZK) Set(p string, data []byte, _ int32) (st *zk.Stat, err error) {
	err = f.request("set", p, func() error {
		n, found := f.nodes[p]
		if !found {
			return zk.ErrNoNode
		}
		f.zxid++
		n.data = append([]byte(nil), data...)
		n.stat.Version++
		n.stat.Mzxid = f.zxid
		s := n.stat
		st = &s
		f.fire(f.dataW, p, zk.EventNodeDataChanged)
		return nil
	})
	return st, err
}

func (f *fakeZK) SetACL(p string, acl []zk.ACL, version int32) (st *zk.Stat, err error) {
	err = f.request("setacl", p, func() error {
		n, found := f.nodes[p]
		if !found {
			return zk.ErrNoNode
		}
		if version != -1 && version != n.stat.Aversion {
			return zk.ErrBadVersion
		}
		n.acl = append([]zk.ACL(nil), acl...)
		n.stat.Aversion++
		s := n.stat
		st = &s
		return nil
	})
	return st, err
}

func (f *fakeZK) Sync(p string) (string, error) {
	return p, f.request("sync", p, func() error { return nil })
}

func (f *fakeZK) AddAuth(string, []byte) error { return nil }
func (f *fakeZK) State() zk.State              { return zk.StateHasSession }
func (f *fakeZK) Close()                       {}
func (f *fakeZK) Session() (int64, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sid, []byte("fake-password")
}

// maxWatches is the most watch channels set on any one path and type
// (data or child), with the path: go-zookeeper keeps each until it fires.
func (f *fakeZK) maxWatches() (n int, where string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for kind, ws := range map[string]map[string][]chan zk.Event{"data": f.dataW, "child": f.childW} {
		for p, chs := range ws {
			if len(chs) > n {
				n, where = len(chs), kind+" "+p
			}
		}
	}
	return n, where
}

// allOps returns every request made since the last resetOps.
func (f *fakeZK) allOps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops...)
}
