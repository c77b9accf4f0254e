// Package api declares the JSON bodies of electd's HTTP API (docs/design/http-contract.md,
// "HTTP API"), once: internal/httpapi encodes them, and every client decodes
// them (the CLI in internal/cli, tests/electdtest, tests/bench). It imports
// nothing of electd, so a client does not pull in the election engine; the
// engine's typed values (mode, state, reasons) travel as their text.
package api

import "time"

// Leader is the body of GET /leader and the data of every /events event.
type Leader struct {
	Leader *LeaderInfo `json:"leader"` // null when no leader is known
	Self   Self        `json:"self"`
	Mode   string      `json:"mode"` // latch, selector or race
	Path   string      `json:"path"` // the election path, chroot included
	// Kubernetes is the leader label and Lease mirror's state, on GET
	// /leader when the mirror runs; absent from /events.
	Kubernetes *KubeStatus `json:"kubernetes,omitempty"`
	// Proxy is this participant's forwarding proxy, when it runs one: where
	// it sends the application's traffic now.
	Proxy *ProxyStatus `json:"proxy,omitempty"`
}

// LeaderID is the leader's id, "" when none is known.
func (l Leader) LeaderID() string {
	if l.Leader == nil {
		return ""
	}
	return l.Leader.ID
}

// LeaderInfo is who leads, as /leader names it.
type LeaderInfo struct {
	ID           string `json:"id"`
	Advertise    string `json:"advertise"`
	Node         string `json:"node"`
	Session      string `json:"session"` // "0x..." hex
	FencingToken int64  `json:"fencing_token"`
	// Proxy is where the leader's forwarding proxy takes its peers'
	// traffic; absent when it runs none (a Curator client, an electd
	// without a proxy).
	Proxy string `json:"proxy,omitempty"`
}

// Self is /leader's view of the participant that answers.
type Self struct {
	ID       string `json:"id"`
	IsLeader bool   `json:"is_leader"`
	State    string `json:"state"` // the ZooKeeper connection's state
	// Session is this participant's ZooKeeper session ("0x..." hex), absent
	// before the first one: what a server's cons and wchc name it by.
	Session    string `json:"session,omitempty"`
	ObservedAt string `json:"observed_at"` // RFC 3339, UTC, seconds
	// Candidate is whether this participant stands in the election now.
	Candidate bool `json:"candidate"`
	// AppHealthy is absent without app.health_url, false until the
	// application's first check passed.
	AppHealthy *bool `json:"app_healthy,omitempty"`
}

// Participant is one entry of GET /participants, in queue order. Node and
// FencingToken are null for race followers, which own no election node.
type Participant struct {
	ID           string  `json:"id"`
	Advertise    string  `json:"advertise"`
	Node         *string `json:"node"`
	Session      string  `json:"session"`
	FencingToken *int64  `json:"fencing_token"`
	IsLeader     bool    `json:"is_leader"`
	// Proxy is the participant's forwarding proxy address, as LeaderInfo's.
	Proxy string `json:"proxy,omitempty"`
}

// LeaderHealth is the body of GET /healthz/leader.
type LeaderHealth struct {
	IsLeader bool   `json:"is_leader"`
	Reason   string `json:"reason"`
	// LeaseRemainingMS is how long the lease certainly lasts, truncated to
	// the millisecond; 0 when not leading.
	LeaseRemainingMS int64 `json:"lease_remaining_ms"`
	// FencingToken is this participant's own token while it leads, else
	// null: a follower must never hold a token storage would accept.
	FencingToken *int64 `json:"fencing_token"`
}

// Live is the body of GET /healthz.
type Live struct {
	Status string `json:"status"` // ok or unavailable
	Error  string `json:"error,omitempty"`
}

// Ready is the body of GET /readyz.
type Ready struct {
	Ready  bool   `json:"ready"`
	Joined bool   `json:"joined"`
	State  string `json:"state"`
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// Candidacy is the body of GET and POST /candidacy.
type Candidacy struct {
	ID string `json:"id"`
	// Candidate is the operator's setting: election.candidate, then POST
	// /candidacy.
	Candidate bool `json:"candidate"`
	// Standing is whether this participant stands now: it needs both the
	// operator's setting and a healthy application.
	Standing bool `json:"standing"`
	// Pending says the election has not taken the wanted standing yet.
	Pending bool `json:"pending"`
	// AppHealth is disabled (no app.health_url), unknown (not checked
	// enough yet), healthy or unhealthy; AppDetail the last check's outcome.
	AppHealth string `json:"app_health"`
	AppDetail string `json:"app_detail,omitempty"`
	// Reason is /healthz/leader's reason.
	Reason string `json:"reason"`
}

// CandidacyRequest is the body POST /candidacy takes; Candidate is required.
type CandidacyRequest struct {
	Candidate *bool `json:"candidate"`
}

// Release is the 202 body of POST /leader/release: ID released leadership,
// to To when the request named one (?to=, a switchover).
type Release struct {
	Released bool   `json:"released"`
	ID       string `json:"id"`
	To       string `json:"to,omitempty"`
	// Drain is what the forwarding proxy's drain did before leadership
	// went; absent without a proxy.
	Drain *Drain `json:"drain,omitempty"`
}

// Drain is how long a hand-over waited for the requests the application
// had (at most proxy.drain_timeout), and how many it still had when the
// wait ended: those are cut as leadership goes.
type Drain struct {
	WaitedSeconds float64 `json:"waited_seconds"`
	InFlight      int     `json:"in_flight"`
}

// HistoryEntry is one entry of GET /history. Leader and FencingToken are
// null when no leader is known.
type HistoryEntry struct {
	Seq          uint64  `json:"seq"`
	Time         string  `json:"time"` // RFC 3339, UTC, milliseconds (TimeMillis)
	Kind         string  `json:"kind"` // elected, revoked, leader, state
	Leader       *string `json:"leader"`
	FencingToken *int64  `json:"fencing_token"`
	Reason       string  `json:"reason"`
	State        string  `json:"state"`
	Candidate    bool    `json:"candidate"`
	Session      string  `json:"session"` // this participant's, "0x..."
}

// TimeMillis is HistoryEntry.Time's layout: RFC 3339 with milliseconds,
// since several transitions often fall within one second.
const TimeMillis = "2006-01-02T15:04:05.000Z07:00"

// Error is the body of every 4xx and 5xx answer.
type Error struct {
	Error string `json:"error"`
}

// KubeStatus is what the leader label and Lease mirror (internal/kube) last
// achieved, under "kubernetes" on GET /leader.
type KubeStatus struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod,omitempty"`
	Label     string `json:"label,omitempty"`
	Lease     string `json:"lease,omitempty"`
	// Labelled: the own pod carries <label>=true, as of the last call that
	// set, found or removed it.
	Labelled bool `json:"labelled"`
	// LeaseHeld: the Lease names this participant, as of the last call.
	LeaseHeld bool `json:"lease_held"`
	// InSync: the last round of calls reached what leadership asks for
	// (label and Lease on the leader, neither on a follower).
	InSync bool `json:"in_sync"`
	// SyncedAt is when that last happened.
	SyncedAt time.Time `json:"synced_at,omitzero"`
	// Failures counts failed API calls since start.
	Failures    uint64    `json:"failures"`
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// ProxyStatus is this participant's forwarding proxy (docs/design/proxy.md,
// "Forwarding"), under "proxy" on GET /leader and in /events.
type ProxyStatus struct {
	Mode string `json:"mode"` // http or tcp
	// Advertise is where the other participants send it traffic.
	Advertise string `json:"advertise"`
	// Route is where traffic goes now: app (this participant leads),
	// leader (the leader's proxy), hold (nowhere yet: it waits).
	Route string `json:"route"`
	// To is the application's or the leader proxy's address; absent on hold.
	To string `json:"to,omitempty"`
	// Held counts the requests and connections waiting for a leader now.
	Held int `json:"held"`
	// Connections counts the open connections, clients' and peers'.
	Connections int `json:"connections"`
	// InFlight counts the HTTP requests with the application now.
	InFlight int `json:"in_flight"`
	// PeerConnections counts the connections this proxy holds open to the
	// other participants' proxies.
	PeerConnections int `json:"peer_connections"`
	// BufferedBytes is the bytes of request bodies it buffers now.
	BufferedBytes int64 `json:"buffered_bytes"`
}
