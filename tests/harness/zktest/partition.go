package zktest

import "time"

// pair is an ordered pair of server ids: traffic that server from initiates towards to.
type pair struct{ from, to int }

// peerLink holds the proxies that server from dials to reach server to.
type peerLink struct{ quorum, election *Proxy }

func (e *Ensemble) startPeerProxies() error {
	e.peers = map[pair]*peerLink{}
	for _, from := range e.members {
		for _, to := range e.members {
			if from == to {
				continue
			}
			q, err := NewProxy(to.quorum.addr())
			if err != nil {
				return err
			}
			el, err := NewProxy(to.election.addr())
			if err != nil {
				q.Close()
				return err
			}
			e.peers[pair{from.id, to.id}] = &peerLink{quorum: q, election: el}
		}
	}
	// A server that gets an election connection from a smaller id drops it and connects
	// back to the election address the caller advertised, its real one: advertise the proxy
	// of the reverse pair instead, so that every election connection crosses a proxy. And a
	// follower may reach a new leader's proxy before the leader binds its quorum port: keep
	// dialling for as long as the follower itself would (initLimit ticks).
	for p, link := range e.peers {
		link.election.setElectionRewrite(e.peers[pair{p.to, p.from}].election.Addr())
		link.quorum.setDialRetry(time.Duration(e.opts.InitLimit) * e.opts.TickTime)
	}
	return nil
}

// PeerProxies returns the proxies that server from dials to reach server to's quorum and
// election ports, or nils when the ensemble has no peer proxies. For one-way faults.
func (e *Ensemble) PeerProxies(from, to int) (quorum, election *Proxy) {
	link := e.peers[pair{from, to}]
	if link == nil {
		return nil, nil
	}
	return link.quorum, link.election
}

// Isolate cuts m off from all its peers in both directions: every peer proxy of a pair that
// includes m is blackholed (nothing is closed, as with a dropped route; ZooKeeper notices
// through its own timeouts: a follower after syncLimit x tickTime, the leader when it lacks
// a quorum of acks). Its client port stays open. It panics if the ensemble was not started
// with PeerProxies.
func (e *Ensemble) Isolate(m *Member) {
	e.mustHavePeers("Isolate")
	e.mu.Lock()
	e.isolated[m.id] = true
	e.mu.Unlock()
	for p, link := range e.peers {
		if p.from == m.id || p.to == m.id {
			link.quorum.Blackhole()
			link.election.Blackhole()
		}
	}
}

// Rejoin undoes Isolate: m's links to every member that is not itself isolated forward
// again, and what the blackhole held is delivered.
func (e *Ensemble) Rejoin(m *Member) {
	e.mustHavePeers("Rejoin")
	e.mu.Lock()
	delete(e.isolated, m.id)
	isolated := make(map[int]bool, len(e.isolated))
	for id := range e.isolated {
		isolated[id] = true
	}
	e.mu.Unlock()
	for p, link := range e.peers {
		if (p.from == m.id && !isolated[p.to]) || (p.to == m.id && !isolated[p.from]) {
			link.quorum.Heal()
			link.election.Heal()
		}
	}
}

func (e *Ensemble) mustHavePeers(op string) {
	if len(e.peers) == 0 {
		panic("zktest: " + op + " needs an ensemble of 2+ servers started with Options.PeerProxies")
	}
}
