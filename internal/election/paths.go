package election

import (
	"errors"
	"fmt"
	"strings"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The session's share of the election, which the Elector does for its
// recipe once per session (host.preparePath, publishMeta): the election
// path's CONTAINER parents, and the meta node every electd session
// publishes (meta.go). docs/design/election-and-lease.md, "Node layout".

// preparePath makes the election path ready to join, once per session: its
// ACL checked (checkACL) and the path and its parents created.
func (e *Elector) preparePath() error {
	if e.loop.parentsOK {
		return nil
	}
	if err := e.checkACL(); err != nil {
		return err
	}
	if err := e.ensureParents(e.cfg.Path); err != nil {
		return err
	}
	e.loop.parentsOK = true
	return nil
}

// pathGone makes the next preparePath create the path again.
func (e *Elector) pathGone() { e.loop.parentsOK = false }

// ensureParents creates p and its parents as CONTAINER nodes, which
// ZooKeeper removes once empty. An existing path costs one read, not a
// create per level, and needs no create permission on its parents.
func (e *Elector) ensureParents(p string) error {
	if ok, _, err := e.exists(p); err == nil && ok {
		return nil
	}
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		cur += "/" + part
		e.nWrites.Add(1)
		_, err := e.zk.CreateContainer(cur, nil, zk.FlagContainer, e.acl)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			if errors.Is(err, zk.ErrNoAuth) {
				e.refuse(e.noPermission(cur, err), "node", cur, "err", err)
			}
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}
