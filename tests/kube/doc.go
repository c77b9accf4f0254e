// Package kube tests the leader label and Lease mirror (internal/kube,
// docs/design/kubernetes.md "Kubernetes") with real electd processes, a real
// ZooKeeper and a real kube-apiserver (tests/kubetest) set up as the label
// flavour's manifests set one up: the label and the Lease follow
// leadership through every way a leader goes, and the Role's token is
// all electd ever uses.
package kube
