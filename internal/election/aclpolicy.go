package election

import (
	"strings"

	"github.com/electd/electd/internal/election/zksession"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The ACL electd makes its nodes with, and what checkACL guards, both read
// from the session's credentials.

// retiringPerms is what the ACLs a rotating participant writes grant the
// previous credential: everything but ADMIN. That the current credential
// alone may administer tells a rotation's direction (docs/design/session-and-faults.md,
// "Rotating the ZooKeeper credential").
const retiringPerms = zk.PermAll &^ zk.PermAdmin

// nodeACLFor is the ACL electd creates its nodes with: open without
// credentials; else all rights to auth, all but ADMIN to previous (while
// rotating) and READ to anyone.
func nodeACLFor(auth, previous string) []zk.ACL {
	if auth == "" {
		return zk.WorldACL(zk.PermAll)
	}
	acl := digestACL(zk.PermAll, auth)
	if previous != "" && previous != auth {
		acl = append(acl, digestACL(retiringPerms, previous)...)
	}
	return append(acl, zk.WorldACL(zk.PermRead)...)
}

// digestACL grants perms to the digest identity of "user:password".
func digestACL(perms int32, cred string) []zk.ACL {
	user, pass, _ := strings.Cut(cred, ":")
	return zk.DigestACL(perms, user, pass)
}

// digestID is the identity ZooKeeper's digest scheme gives cred, as an ACL
// names it ("user:base64(sha1)"); "" for no credential.
func digestID(cred string) string {
	if cred == "" {
		return ""
	}
	return digestACL(0, cred)[0].ID
}

// aclPolicyFor reads what checkACL guards from the session's credentials.
func aclPolicyFor(cfg zksession.Config) aclPolicy {
	ids := credIDs{cur: digestID(cfg.Auth)}
	if cfg.AuthPrevious != cfg.Auth {
		ids.prev = digestID(cfg.AuthPrevious)
	}
	pol := aclPolicy{guard: cfg.Auth != "", fix: cfg.FixACL, ids: ids}
	if pol.guard {
		pol.cur = digestACL(zk.PermAll, cfg.Auth)
	}
	return pol
}

// aclPolicy is what checkACL needs of the Session's configuration.
type aclPolicy struct {
	guard, fix bool
	ids        credIDs
	cur        []zk.ACL // every right to the current credential
}

// credIDs are this participant's digest identities: the current
// credential's, and the previous one's while rotating (else "").
type credIDs struct{ cur, prev string }
