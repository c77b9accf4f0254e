package election

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

var (
	// errOpenACL is returned by checkACL: the participant refuses to stand.
	errOpenACL = errors.New("election: the election path's ACL lets others create or delete there")
	// errCredentialMismatch is returned by checkACL when the path's ACL
	// names digest credentials, none of them this participant's.
	errCredentialMismatch = errors.New("election: the election path's ACL names another credential")
)

// rotationDoc is where a message about a credential sends the reader.
const rotationDoc = `docs/operations.md, "Rotating the ZooKeeper credential"`

// aclVerdict is what checkACL makes of one path's ACL.
type aclVerdict int

const (
	aclOurs     aclVerdict = iota // no one else may create or delete there
	aclWiden                      // names only the previous credential: add the current one
	aclNarrow                     // names, beside ours, a credential being retired: remove it
	aclHidden                     // digest credentials only, which ZooKeeper hides from us
	aclMismatch                   // digest credentials only, none of them ours
	aclOpen                       // someone else may create or delete there
)

// hiddenDigest reports whether a digest id is one ZooKeeper redacted:
// getAcl shows "user:x" in place of the hash to a client without ADMIN on
// the node.
func hiddenDigest(a zk.ACL) bool {
	return a.Scheme == "digest" && strings.HasSuffix(a.ID, ":x")
}

// judgeACL reads acl against our identities. Only entries that may create
// or delete children count; others lists their identities other than ours.
// A rotation (docs/operations.md, "Rotating the ZooKeeper credential")
// moves a path from {prev: all} through {cur: all, prev: all but ADMIN} to
// {cur: all}; the ADMIN right says which credential is the newer one. A
// participant without ADMIN sees the digests hidden (hiddenDigest): the
// old credential's during a rotation; whether one of them is ours, only a
// create can tell (Elector.noPermission).
func judgeACL(acl []zk.ACL, ids credIDs) (aclVerdict, []string) {
	var others []string
	var has, admin [2]bool // cur, prev
	foreignAdmin, nonDigest, hidden := false, false, false
	for _, a := range acl {
		if a.Perms&(zk.PermCreate|zk.PermDelete) == 0 {
			continue
		}
		isAdmin := a.Perms&zk.PermAdmin != 0
		switch {
		case a.Scheme == "digest" && a.ID == ids.cur:
			has[0], admin[0] = true, admin[0] || isAdmin
		case a.Scheme == "digest" && ids.prev != "" && a.ID == ids.prev:
			has[1], admin[1] = true, admin[1] || isAdmin
		default:
			others = append(others, a.Scheme+":"+a.ID)
			nonDigest = nonDigest || a.Scheme != "digest"
			foreignAdmin = foreignAdmin || isAdmin
			hidden = hidden || hiddenDigest(a)
		}
	}
	rotating := ids.prev != ""
	switch {
	case len(others) == 0 && rotating && !has[0] && has[1]:
		return aclWiden, nil
	case len(others) == 0:
		return aclOurs, nil
	case nonDigest:
		return aclOpen, others
	case hidden:
		return aclHidden, others
	case !has[0] && !has[1]:
		return aclMismatch, others
	case rotating && !has[0] && !admin[1] && foreignAdmin:
		return aclMismatch, others // the previous credential is retiring, but not for ours
	case rotating:
		return aclOpen, others
	case admin[0] && !foreignAdmin:
		return aclNarrow, others
	}
	return aclOpen, others
}

// widened is acl with cur added with every right and prev kept without
// ADMIN: the ACL of a path in rotation.
func widened(acl []zk.ACL, ids credIDs, cur []zk.ACL) []zk.ACL {
	out := append([]zk.ACL(nil), cur...)
	for _, a := range acl {
		if a.Scheme == "digest" && a.ID == ids.prev {
			a.Perms &^= zk.PermAdmin
		}
		out = append(out, a)
	}
	return out
}

// narrowed is acl without the entries of retired: they lose every right,
// and read-only entries stay.
func narrowed(acl []zk.ACL, retired []string) []zk.ACL {
	var out []zk.ACL
	for _, a := range acl {
		if a.Perms&(zk.PermCreate|zk.PermDelete) != 0 && contains(retired, a.Scheme+":"+a.ID) {
			continue
		}
		out = append(out, a)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// aclPaths are the paths whose children electd relies on: the election
// path, its meta path and its ids path.
func aclPaths(electionPath string) []string {
	return []string{electionPath, metaPath(electionPath), idsPath(electionPath)}
}

// checkACL guards the promise zookeeper.auth makes (docs/design/session-and-faults.md,
// "Threat model"): that only these credentials can change the election.
// electd creates its nodes with that ACL, but a path that already exists
// keeps the ACL it was made with, and creating or deleting a child is
// governed by the parent's ACL: with world:anyone on the election path,
// anybody could delete the leader's node or plant a persistent "leader".
// So, with credentials set, every path whose children electd relies on
// must grant CREATE and DELETE to no one else. When one does, electd
// refuses to stand and says why, or, with FixACL, replaces that ACL with
// its own (which needs ADMIN there). A path moving from one credential to
// another is rotated instead (judgeACL).
func (e *Elector) checkACL() error {
	pol := e.pol
	if !pol.guard {
		return nil
	}
	e.loop.hiddenACL = nil
	for _, p := range aclPaths(e.cfg.Path) {
		if err := e.checkPathACL(p, pol); err != nil {
			return err
		}
	}
	return nil
}

// aclRetries bounds how often checkPathACL reads an ACL again after
// another client changed it between the read and the write.
const aclRetries = 3

func (e *Elector) checkPathACL(p string, pol aclPolicy) error {
	for range aclRetries {
		e.nReads.Add(1)
		acl, stat, err := e.zk.GetACL(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil // electd creates it, with its own ACL
		}
		if err != nil {
			return fmt.Errorf("read the ACL of %s: %w", p, err)
		}
		verdict, others := judgeACL(acl, pol.ids)
		var next []zk.ACL
		switch verdict {
		case aclOurs:
			return nil
		case aclHidden:
			// An old participant in a rotation, or a stranger: ZooKeeper
			// answers the first create.
			if e.loop.hiddenACL == nil {
				e.loop.hiddenACL = map[string][]string{}
			}
			e.loop.hiddenACL[p] = others
			e.log.Info("the ACL of the election's path names credentials only its administrators may see; standing if ZooKeeper lets zookeeper.auth's create there",
				"node", p, "credentials", strings.Join(others, ", "))
			return nil
		case aclMismatch:
			e.refuse(mismatchMessage(p, others, pol.ids.prev != ""))
			return errCredentialMismatch
		case aclOpen:
			return e.openACL(p, others, pol.fix)
		case aclWiden:
			next = widened(acl, pol.ids, pol.cur)
		case aclNarrow:
			next = narrowed(acl, others)
		}
		e.nWrites.Add(1)
		_, err = e.zk.SetACL(p, next, stat.Aversion)
		if errors.Is(err, zk.ErrBadVersion) {
			continue // changed since we read it: judge it again
		}
		if err != nil {
			e.refuse(fmt.Sprintf("the ACL of %s needs %s for a credential rotation, which failed: %v (%s)",
				p, rotationStep(verdict), err, rotationDoc), "node", p, "err", err)
			return errCredentialMismatch
		}
		if verdict == aclWiden {
			e.log.Info("added zookeeper.auth's credential to the ACL beside zookeeper.auth_previous's (credential rotation)", "node", p)
		} else {
			e.log.Info("removed a retired credential from the ACL (credential rotation)", "node", p, "removed", strings.Join(others, ", "))
		}
	}
	return fmt.Errorf("the ACL of %s changed %d times while electd rotated it", p, aclRetries)
}

func rotationStep(v aclVerdict) string {
	if v == aclWiden {
		return "zookeeper.auth's credential added (with zookeeper.auth_previous's ADMIN right)"
	}
	return "the retired credential removed"
}

// mismatchMessage says that the path was made with another credential, and
// which key to set.
func mismatchMessage(p string, others []string, rotating bool) string {
	ours, fix := "not zookeeper.auth's credential", "set zookeeper.auth to the credential it names or, while rotating to a new zookeeper.auth, "+
		"set zookeeper.auth_previous to the one it names until every participant has the new one"
	if rotating {
		ours, fix = "neither zookeeper.auth's nor zookeeper.auth_previous's credential", "one of them must be the credential it names"
	}
	return fmt.Sprintf("credential mismatch: the ACL of %s lets only %s create or delete nodes there, %s: %s (%s)",
		p, strings.Join(others, ", "), ours, fix, rotationDoc)
}

// noPermission says why ZooKeeper refused to let this participant create
// p or a child of p: a credential mismatch when the ACL check saw p's ACL
// (or its parent's) name only credentials hidden from us.
func (e *Elector) noPermission(p string, err error) string {
	for _, q := range []string{p, path.Dir(p)} {
		if others, ok := e.loop.hiddenACL[q]; ok {
			rotating := e.pol.ids.prev != ""
			return fmt.Sprintf("%s; ZooKeeper refused a create there: %v", mismatchMessage(q, others, rotating), err)
		}
	}
	return noPermission(p, err)
}

// openACL refuses a path others may change, or with fix replaces its ACL
// with the Session's own.
func (e *Elector) openACL(p string, others []string, fix bool) error {
	msg := fmt.Sprintf("the ACL of %s lets %s create or delete nodes there, so anyone with that access could change the election",
		p, strings.Join(others, ", "))
	if !fix {
		e.refuse(msg + ": restrict it to electd's credentials (setAcl), or set zookeeper.fix_acl to let electd do it")
		return errOpenACL
	}
	e.nWrites.Add(1)
	if _, err := e.zk.SetACL(p, e.acl, -1); err != nil {
		e.refuse(fmt.Sprintf("%s; zookeeper.fix_acl is set but replacing it failed: %v", msg, err))
		return errOpenACL
	}
	e.log.Warn("replaced an open ACL with electd's (zookeeper.fix_acl)", "node", p, "was_open_to", strings.Join(others, ", "))
	return nil
}
