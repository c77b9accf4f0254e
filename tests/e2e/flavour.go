package e2e

import (
	"path/filepath"
	"runtime"
	"time"
)

// Flavour is one way of routing a Service to the leader, deployed from a
// kustomize overlay in testdata/ over the shipped manifests. Adding a
// flavour is one more entry in Flavours and one more overlay directory: the
// scenarios read everything they need from here.
type Flavour struct {
	Name      string // also the overlay directory under testdata/
	Namespace string // the overlay's namespace
	// Elector names who elects: "electd" (the leader is read from ZooKeeper
	// at ElectionPath) or "client-go" (from the Lease named LeaseName).
	Elector      string
	ElectionPath string
	LeaseName    string
	// OneEndpoint: the Service lists the leader alone (readiness, label);
	// false for a flavour that routes through every pod to the leader.
	OneEndpoint bool
	// AllReady: every joined pod is Ready, not the leader alone.
	AllReady bool
	// SidecarToken: the sidecar's container, and it alone, has an API
	// token mounted.
	SidecarToken bool
	// StaleAfterCrash: after the leader's sidecar is killed, its app may
	// still get requests until the new leader reroutes them (the label
	// flavour's label stays until the new leader removes it); counted and
	// reported, not a failure, since the README calls such routing what
	// it is, routing, not a lock.
	StaleAfterCrash bool
	// RolloutStatusReturns: what the README says `kubectl rollout status`
	// does for this flavour's strategy.
	RolloutStatusReturns bool
	// OneHandoffPerRollout: a rollout moves leadership once, to a pod of
	// the new ReplicaSet (docs/design/handover.md, "Handoff"): the flavour's strategy
	// brings a new pod in before an old one goes.
	OneHandoffPerRollout bool
	// DrainEvictsAll: what the flavour's PodDisruptionBudget lets a drain
	// of a single node do: evict every pod at once (true), or one and then
	// refuse until a replacement is Ready, which a cordoned single node
	// never makes (false).
	DrainEvictsAll bool
	// WatchesApp: the leader hands over as soon as its app refuses
	// connections (the proxy flavour's step-down), before its sidecar is
	// stopped: a new leader may be elected before the deleted leader's app
	// has exited, and SIGKILL of the leader's app moves leadership.
	WatchesApp bool
	// AppFirst: electd checks its app's health (app.health_url) and stands
	// only once a check passed, so the app starts first (electd's startup
	// probe is /healthz) and electd stands after it listens; otherwise the
	// app starts once electd knows the leader (/readyz).
	AppFirst bool
	// GoMemLimit is electd's GOMEMLIMIT in bytes, as its environment
	// gives it: the base's memory limit (64Mi), or the proxy flavour's
	// 100MiB below its 128Mi limit (deploy/k8s-proxy/app-patch.yaml).
	GoMemLimit int64
	// HoldTime, when set, is the flavour's promise that a graceful
	// hand-over (a pod deletion, a rollout, the app's SIGKILL, which its
	// leader's proxy takes as a reason to step down) fails no request:
	// the proxy holds each for at most HoldTime (proxy.hold_time) while
	// leadership moves. The Service's prober then waits HoldTime plus its
	// usual 2 s for an answer, and every request of those disruptions must
	// be answered by the pod that led at the time.
	HoldTime time.Duration
	// HeldAPI: electd-hold keeps electd's API port (4040) open through a
	// crash of electd, so the kubelet's probes wait for the restarted
	// electd's answer instead of being refused.
	HeldAPI bool
	// Ensemble: the flavour runs on the ZooKeeper ensemble the manifests
	// ship (zookeeper.yaml, in the flavour's namespace), as applied.
	Ensemble bool
	// ZooKeeperScenarios: the ensemble is restarted, loses its leader and
	// stops under load (zookeeper_test.go).
	ZooKeeperScenarios bool
	// Peer: a comparison, run for the deletions, the elector's crash and the
	// cut-off only.
	Peer bool
	// Describe is one line for the report: what elects and its settings.
	Describe string
}

// Flavours are every flavour the node tests run, electd's first.
var Flavours = []Flavour{
	{
		Name: "readiness", Namespace: "e2e-readiness", Elector: "electd", ElectionPath: "/e2e/readiness/app",
		OneEndpoint: true, RolloutStatusReturns: false, DrainEvictsAll: true,
		Ensemble: true, ZooKeeperScenarios: true, HeldAPI: true,
		Describe: "electd, readiness flavour (deploy/k8s): readiness probe /healthz/leader every 1 s",
	},
	{
		Name: "label", Namespace: "e2e-label", Elector: "electd", ElectionPath: "/e2e/label/app",
		OneEndpoint: true, AllReady: true, SidecarToken: true, StaleAfterCrash: true,
		RolloutStatusReturns: true, OneHandoffPerRollout: true, DrainEvictsAll: false,
		Ensemble: true, HeldAPI: true,
		Describe: "electd, label flavour (deploy/k8s-label): Service selects electd.io/leader=true",
	},
	{
		Name: "proxy", Namespace: "e2e-proxy", Elector: "electd", ElectionPath: "/e2e/proxy/app",
		OneEndpoint: false, AllReady: true, WatchesApp: true, AppFirst: true,
		RolloutStatusReturns: true, OneHandoffPerRollout: true, DrainEvictsAll: false,
		GoMemLimit: 100 << 20,
		HoldTime:   17 * time.Second, // deploy/k8s-proxy leaves proxy.hold_time at its default: 1.5 x the 10s session timeout + 2s
		Ensemble:   true, ZooKeeperScenarios: true, HeldAPI: true,
		Describe: "electd, proxy flavour (deploy/k8s-proxy): every pod Ready, the Service at electd's forwarding proxy, which sends to the leader's app",
	},
	{
		Name: "peer", Namespace: "e2e-peer", Elector: "client-go", LeaseName: "app-leader",
		OneEndpoint: true, SidecarToken: true, Peer: true,
		Describe: "client-go leaderelection, Lease lock, 15 s / 10 s / 2 s (documented defaults), readiness probe every 1 s",
	},
	{
		Name: "peer-fast", Namespace: "e2e-peer-fast", Elector: "client-go", LeaseName: "app-leader",
		OneEndpoint: true, SidecarToken: true, Peer: true,
		Describe: "client-go leaderelection, Lease lock, 2 s / 1 s / 0.5 s, ReleaseOnCancel, readiness probe every 1 s",
	},
}

// Overlay is the flavour's kustomize directory.
func (f Flavour) Overlay() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", f.Name)
}
