package election

import "fmt"

// The election's identity (docs/DESIGN.md, "Forwarding": every hop names
// its election): the path, with its chroot, and the czxid of the path's
// node, so that it is the same at every participant and differs for any
// other election, on this ensemble or another. The forwarding proxy puts
// it on every forward, and a proxy takes only its own election's.

// identify reads the election path's node once per session while its
// identity is unknown (an observer may start before any candidate has
// created the path: it looks again at its next step).
func (e *Elector) identify() {
	l := &e.loop
	if l.identified == l.sid {
		return
	}
	e.nReads.Add(1)
	ok, stat, err := e.zk.Exists(e.cfg.Path)
	if err != nil || !ok {
		return
	}
	l.identified = l.sid
	id := fmt.Sprintf("%s@0x%x", e.cfg.Path, stat.Czxid)
	e.identity.Store(&id)
}

// electionID is what identify read last; "" before.
func (e *Elector) electionID() string {
	if id := e.identity.Load(); id != nil {
		return *id
	}
	return ""
}
