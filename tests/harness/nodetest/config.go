package nodetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Directories of a run. Fixed, not per run: a lock lets one run at a time
// (lock.go), and a fixed place is where a later run finds what a killed one
// left behind.
const (
	StateDir = "/var/lib/electd-e2e" // keys, etcd, containerd's images and snapshots, the kubelet's root, logs
	RunDir   = "/run/electd-e2e"     // sockets and runtime state (a unix socket path must stay short)
	NodeName = "electd-e2e"
)

// layout are the paths of one node's files.
type layout struct {
	pki, logs, etcd, kubeletRoot, kubeletCerts, podLogs string
	containerdRoot, containerdState, containerdSock     string
	containerdConfig, runcRoot, cniConf, cniIPAM        string
	tokens                                              string
	kubeletConfig, proxyConfig                          string
}

func newLayout() layout {
	s := func(p ...string) string { return filepath.Join(append([]string{StateDir}, p...)...) }
	r := func(p ...string) string { return filepath.Join(append([]string{RunDir}, p...)...) }
	return layout{
		pki: s("pki"), logs: s("logs"), etcd: s("etcd"),
		kubeletRoot: s("kubelet"), kubeletCerts: s("kubelet-pki"), podLogs: s("pod-logs"),
		containerdRoot: s("containerd"), containerdState: r("containerd"), containerdSock: r("containerd.sock"),
		containerdConfig: s("containerd.toml"), runcRoot: r("runc"),
		cniConf: s("cni", "net.d"), cniIPAM: s("cni", "ipam"),
		tokens: s("pki", "tokens.csv"), kubeletConfig: s("kubelet.yaml"), proxyConfig: s("kube-proxy.yaml"),
	}
}

func (l layout) mkdirs() error {
	for _, d := range []string{l.pki, l.logs, l.etcd, l.kubeletRoot, l.kubeletCerts, l.podLogs,
		l.containerdRoot, l.containerdState, l.cniConf, l.cniIPAM, l.runcRoot} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("nodetest: %w", err)
		}
	}
	return nil
}

// identity is one client of the API server: a static token in the token
// file, with the user and groups Kubernetes' default RBAC expects of each
// component.
type identity struct {
	name, user, groups, token string
}

func identities() []identity {
	return []identity{
		{"admin", "admin", "system:masters", randomToken()},
		{"controller-manager", "system:kube-controller-manager", "", randomToken()},
		{"scheduler", "system:kube-scheduler", "", randomToken()},
		{"kube-proxy", "system:kube-proxy", "", randomToken()},
		// The Node authorizer gives a kubelet what its own node's pods need.
		{"kubelet", "system:node:" + NodeName, "system:nodes", randomToken()},
	}
}

func writeTokens(path string, ids []identity) error {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%s,%s,%s-uid,%q\n", id.token, id.user, id.name, id.groups)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// writeKubeconfig writes a kubeconfig for one identity.
func writeKubeconfig(path, caFile, token string) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://%s:%d
    certificate-authority: %s
users:
- name: e2e
  user:
    token: %s
contexts:
- name: e2e
  context:
    cluster: e2e
    user: e2e
current-context: e2e
`, NodeIP, APIPort, caFile, token)
	return os.WriteFile(path, []byte(cfg), 0o600)
}

// containerdConfig: its own root, state and socket; cgroupfs (no systemd
// here); overlayfs; Debian's CNI plugins with this run's configuration; the
// sandbox image built here; restrict_oom_score_adj, without which every
// sandbox fails ("can't get final child's PID from pipe: EOF": root here
// lacks CAP_SYS_RESOURCE, so runc cannot set the sandbox's oom_score_adj
// to -998).
func (l layout) containerdTOML() string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, l.containerdRoot, l.containerdState, l.containerdSock, filepath.Join(l.containerdRoot, "opt"),
		PauseImage, l.runcRoot, cniBinDir, l.cniConf)
}

// cniBinDir is where Debian's containernetworking-plugins installs them.
const cniBinDir = "/usr/lib/cni"

// cniNetwork names the pod network; the CNI library's result cache files
// (/var/lib/cni/results, a fixed path) start with it.
const cniNetwork = "electd-e2e"

// cniConflist: a bridge with the pod range (host-local, its state in this
// run's directory), hairpin so a pod reaches itself through its Service,
// and portmap. containerd adds the loopback plugin by itself.
func (l layout) cniConflist() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": %q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, cniNetwork, l.cniIPAM, PodCIDR, podGateway)
}

// kubeletYAML: what this machine needs (cgroup v1 with cgroupfs, no swap
// check, no QoS cgroups or node allocatable enforcement), x509 and webhook
// authentication, no image garbage collection (an image removed cannot be
// pulled again: there is no registry), eviction thresholds that a busy
// shared disk does not reach, and the cluster's DNS on the node's address
// (dns.go), with no host resolv.conf behind it.
func (l layout) kubeletYAML(caFile string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
resolvConf: ""
clusterDomain: %s
clusterDNS: [%s]
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
  imagefs.inodesFree: 1%%
rotateCertificates: false
serverTLSBootstrap: false
`, NodeIP, l.containerdSock, l.podLogs, ClusterDomain, NodeIP, caFile)
}

// proxyYAML: iptables mode, the pod range as the cluster range, and no
// conntrack sysctls (0: leave them), which it may not change here.
func (l layout) proxyYAML(kubeconfig string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
clientConnection:
  kubeconfig: %s
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, PodCIDR, NodeName, kubeconfig)
}
