package invariant

// Node is one znode under the election path as read from ZooKeeper.
type Node struct {
	Name  string
	ID    string // participant id read from the node's data
	Owner int64  // ephemeralOwner session
}

// Orphans compares the nodes under the election path with the live participants' ids. In
// latch and selector mode each live participant must own exactly one node: orphans are
// nodes of no live participant and second nodes of one id (or of one session); missing
// are live ids without a node. In race mode only the leader owns a node, <path>/leader:
// every other node is an orphan, as is a leader node of no live participant, and missing
// is set when there is no leader node.
func Orphans(mode string, nodes []Node, live []string) (orphans []Node, missing []string) {
	isLive := map[string]bool{}
	for _, id := range live {
		isLive[id] = true
	}
	if mode == "race" {
		found := false
		for _, n := range nodes {
			if n.Name == "leader" && isLive[n.ID] && !found {
				found = true
				continue
			}
			orphans = append(orphans, n)
		}
		if !found && len(live) > 0 {
			missing = []string{"<leader node>"}
		}
		return orphans, missing
	}
	seenID := map[string]bool{}
	seenOwner := map[int64]bool{}
	for _, n := range nodes {
		if !isLive[n.ID] || seenID[n.ID] || (n.Owner != 0 && seenOwner[n.Owner]) {
			orphans = append(orphans, n)
			continue
		}
		seenID[n.ID] = true
		seenOwner[n.Owner] = true
	}
	for _, id := range live {
		if !seenID[id] {
			missing = append(missing, id)
		}
	}
	return orphans, missing
}
