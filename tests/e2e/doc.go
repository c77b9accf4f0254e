// Package e2e runs electd's Kubernetes manifests on a real node
// (tests/harness/nodetest) and checks what the README promises of pods, probes,
// Services, rollouts and drains, in every routing flavour (Flavours: one
// kustomize overlay each over deploy/k8s, deploy/k8s-label or
// deploy/k8s-proxy, setting only the images, the election path and the
// Secrets; the electd flavours run on the ZooKeeper ensemble the manifests
// ship),
// beside client-go's Lease elector as the usual alternative.
//
// The scenarios are tests behind the build tag e2e, so `go test ./...`
// (make test) does not start a node: `make e2e` runs them, and there a
// missing part fails. They assert correctness (at most one endpoint, the
// leader's, where the flavour routes to the leader alone, no request
// answered by a pod that did not lead, rollouts
// complete, the sidecar stops after the app); the times they measure are
// printed and written to the report (-e2e.report), never asserted.
//
// The code outside the tests watches a flavour from the side: who leads as
// ZooKeeper or the Lease says (leader.go), what the Service's EndpointSlices
// list (endpoints.go), who answers a request through its ClusterIP every
// 20 ms (probe.go), and what a disruption did (measure.go).
package e2e
