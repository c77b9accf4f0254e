package election

import (
	"errors"
	"fmt"
	"strings"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// errOpenACL is returned by checkACL: the participant refuses to stand.
var errOpenACL = errors.New("election: the election path's ACL lets others create or delete there")

// checkACL guards the promise zookeeper.auth makes (docs/design/session-and-faults.md,
// "Threat model"): that only these credentials can change the election.
// electd creates its nodes with that ACL, but a path that already exists
// keeps the ACL it was made with, and creating or deleting a child is
// governed by the parent's ACL: with world:anyone on the election path,
// anybody could delete the leader's node or plant a persistent "leader".
// So, with credentials set, every path whose children electd relies on (the
// election path and its meta path) must grant CREATE and DELETE to no one
// else. When one does, electd refuses to stand and says why, or, with
// FixACL, replaces that ACL with its own (which needs ADMIN there).
func (e *Elector) checkACL() error {
	guard, fix := e.s.aclPolicy()
	if !guard {
		return nil
	}
	ours := e.s.nodeACL()
	for _, p := range []string{e.cfg.Path, metaPath(e.cfg.Path)} {
		e.nReads.Add(1)
		acl, _, err := e.zk.GetACL(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue // electd creates it, with its own ACL
		}
		if err != nil {
			return fmt.Errorf("read the ACL of %s: %w", p, err)
		}
		others := openTo(acl, ours)
		if len(others) == 0 {
			continue
		}
		msg := fmt.Sprintf("the ACL of %s lets %s create or delete nodes there, so anyone with that access could change the election",
			p, strings.Join(others, ", "))
		if !fix {
			e.refuse(msg + ": restrict it to electd's credentials (setAcl), or set zookeeper.fix_acl to let electd do it")
			return errOpenACL
		}
		e.nWrites.Add(1)
		if _, err := e.zk.SetACL(p, ours, -1); err != nil {
			e.refuse(fmt.Sprintf("%s; zookeeper.fix_acl is set but replacing it failed: %v", msg, err))
			return errOpenACL
		}
		e.log.Warn("replaced an open ACL with electd's (zookeeper.fix_acl)", "node", p, "was_open_to", strings.Join(others, ", "))
	}
	return nil
}

// openTo lists the identities of acl, other than those in ours, that may
// create or delete children.
func openTo(acl, ours []zk.ACL) []string {
	var out []string
	for _, a := range acl {
		if a.Perms&(zk.PermCreate|zk.PermDelete) == 0 || grantsSame(a, ours) {
			continue
		}
		out = append(out, a.Scheme+":"+a.ID)
	}
	return out
}

// grantsSame reports whether ours names a's identity with at least a's
// create and delete rights.
func grantsSame(a zk.ACL, ours []zk.ACL) bool {
	for _, o := range ours {
		if o.Scheme == a.Scheme && o.ID == a.ID && o.Perms&(zk.PermCreate|zk.PermDelete) != 0 {
			return true
		}
	}
	return false
}
