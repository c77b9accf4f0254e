// Package nodetest runs a real single-node Kubernetes cluster for electd's
// node tests (tests/e2e): etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kubelet and kube-proxy (iptables mode) of the release
// package kubetest builds, Debian's containerd, runc and CNI plugins
// (bridge, host-local, loopback, portmap), and a DNS server for the
// cluster's names (dns.go), all inside a network namespace the run
// creates: the node's address, the pod range and the service range exist
// only there, and the test process reaches them through sockets opened
// inside it (Netns.DialContext).
//
// Images need no registry: the electd image is assembled from the recipe
// the Dockerfile is rendered from (tools/dist/image), the ZooKeeper image
// that deploy/k8s/zookeeper.yaml names from Debian's jars and Java 17
// (zkimage.go), and with the example app (podapp), the sandbox (pause) and
// the client-go elector (lease-sidecar) they are written as OCI image
// layout tarballs by Go code and imported with `ctr images import`.
//
// Some paths are fixed whatever the configuration (containerd's shim
// sockets under /run/containerd, the pods' network namespaces in
// /run/netns, the CNI cache in /var/lib/cni, the kubelet's device plugin
// directory and /var/log/containers, k8s.io cgroups), so one run at a time
// holds a machine-wide lock, and every run starts by removing what a
// killed run left (cleanup.go). Close removes everything a run made.
//
// It needs root and the Debian packages Require names; scripts/install-deps.sh
// installs them. Nothing here skips: a missing part is an error.
package nodetest
