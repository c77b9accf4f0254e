package zksession

import "github.com/electd/electd/third_party/go-zookeeper/zk"

// Conn is the part of *zk.Conn the engine calls: the seam in front of
// ZooKeeper. Production uses *zk.Conn; the unit tests script a fake
// (internal/election's fakezk_test.go) to drive each recipe step and error path in
// milliseconds. The real-server tests remain the proof.
type Conn interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Delete(path string, version int32) error
	Exists(path string) (bool, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	GetACL(path string) ([]zk.ACL, *zk.Stat, error)
	SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error)
	Sync(path string) (string, error)
	AddAuth(scheme string, auth []byte) error
	State() zk.State
	Session() (int64, []byte)
	Close()
}

var _ Conn = (*zk.Conn)(nil)
