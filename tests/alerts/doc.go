// Package alerts fires every alert of deploy/prometheus/rules.yaml in a real
// Prometheus (Debian's, run by tests/harness/promtest) scraping real electd processes
// on real ZooKeeper, each by the real fault it is for, and resolves it once
// the fault ends (issue 31):
//
//   - ElectdNotOneLeader: ZooKeeper stopped (no leader), then a sidecar of the
//     same election path on another ensemble (two leaders);
//   - ElectdLeadershipFlapping: four releases (POST /leader/release);
//   - ElectdMisconfigured: a Curator LeaderSelector on a latch's path;
//   - ElectdLeaseRenewalSlow: ZooKeeper's replies delayed through the fault
//     proxy (zktest.Proxy.Delay);
//   - ElectdElectionBusy: leadership released over and over, in latch,
//     selector and race mode, firing for the candidates and the observer.
//
// The rules run sped up: a copy of rules.yaml with every range window and
// every `for` divided by speedUp (promtest.SpeedUp), evaluated every second,
// so that the slowest alert fires and resolves in about a minute instead of
// twenty (ElectdLeadershipFlapping's 10-minute window alone would take ten
// to resolve). The thresholds are the shipped ones; the unit tests of
// deploy/prometheus pin the real windows and `for`s.
//
// The same run checks the values of the Grafana dashboard
// (deploy/grafana/electd.json) at rest and during the ZooKeeper outage, and
// that every one of its queries returns data. After each fault every
// participant must be back to its footprint at rest (electdtest.WaitIdle).
// There is no Go API here.
package alerts
