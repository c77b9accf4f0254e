package election

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// Duplicate ids (docs/design/election-and-lease.md, "Duplicate ids"). /leader names the leader
// by id, so two electd participants with one id make the leader ambiguous.
// Each electd session claims its id with an ephemeral node under
// <path>.ids before it joins: one create per join. ZooKeeper lets only one
// live session hold a name, so the first to claim keeps going and a newer
// participant with the same id finds the claim taken at once, says so and
// stays out of the election until the claim is gone. Curator peers claim
// nothing: the leader still counts their duplicate ids (queue_members.go).

// errDuplicateID is what a join returns while another live session holds
// the id: the loop looks again every dupRetry.
var errDuplicateID = errors.New("election: duplicate participant id")

// dupRetry is how often a participant whose id another live session holds
// looks again: one create and one read per look, only while duplicated.
const dupRetry = misconfigRetry

// idNode is the claim node of id: "id-" and the id path-escaped, so that
// any id is one valid node name ("/" and "." become escapes; the prefix
// keeps "zookeeper" and ".." apart).
func idNode(electionPath, id string) string {
	return nodePath(idsPath(electionPath), "id-"+url.PathEscape(id))
}

// claimID creates this session's claim on its id, or reports
// errDuplicateID when another live session holds it. A claim already ours
// (a create whose reply was lost, a retried join) counts as made.
func (e *Elector) claimID() error {
	p := idNode(e.cfg.Path, e.cfg.ID)
	for {
		_, err := e.create(p, []byte(e.cfg.ID), zk.FlagEphemeral)
		if errors.Is(err, zk.ErrNoNode) {
			if err := e.ensureParents(idsPath(e.cfg.Path)); err != nil {
				return err
			}
			continue
		}
		if err == nil {
			e.unique()
			return nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			if errors.Is(err, zk.ErrNoAuth) {
				e.refuse(e.noPermission(p, err), "node", p, "err", err)
			}
			return fmt.Errorf("claim id: %w", err)
		}
		ok, stat, err := e.exists(p)
		switch {
		case err != nil:
			return fmt.Errorf("claim id: %w", err)
		case !ok:
			continue // the holder left as we looked: claim it now
		case stat.EphemeralOwner == e.loop.sid:
			e.unique()
			return nil
		}
		e.duplicated(stat.EphemeralOwner)
		return errDuplicateID
	}
}

// duplicated records that session holds our id, logging it when new.
func (e *Elector) duplicated(session int64) {
	msg := fmt.Sprintf("duplicate id: another live participant (session %s) has id %q; this one does not stand until it leaves: %s",
		sessionHex(session), e.cfg.ID, dupHint)
	e.mu.Lock()
	was := e.v.duplicate
	e.v.duplicate = msg
	e.mu.Unlock()
	e.poke()
	if was != msg {
		e.log.Warn("duplicate participant id: another live participant has this id; not standing until it leaves",
			"id", e.cfg.ID, "holder_session", sessionHex(session), "hint", dupHint)
		e.rec.DuplicateID(e.cfg.ID)
	}
}

// unique clears a duplicate reported before: the id is ours now.
func (e *Elector) unique() {
	e.mu.Lock()
	was := e.v.duplicate
	e.v.duplicate = ""
	e.mu.Unlock()
	if was != "" {
		e.poke()
		e.log.Info("the id is ours now; joining", "id", e.cfg.ID)
	}
}
