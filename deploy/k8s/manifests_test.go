package k8s

import (
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/electd/electd/internal/config"
)

// electdEndpoints are the daemon's probe endpoints (docs/design/http-contract.md, "HTTP API").
var electdEndpoints = []string{"/healthz/leader", "/healthz", "/readyz"}

// sidecar is one pod template's electd container and what the checks derive from it.
type sidecar struct {
	w    workload
	c    *corev1.Container
	env  map[string]corev1.EnvVar
	port int32 // from ELECTD_HTTP_ADDR, default :4040
}

func isElectd(c *corev1.Container) bool {
	return !isHolder(c) && !isWaiter(c) && (c.Name == "electd" || strings.Contains(imageName(c.Image), "electd"))
}

// isWaiter reports electd's image running `electd wait-ready`, which holds
// the app's start until electd is ready (checkWaitsForTheFirstView).
func isWaiter(c *corev1.Container) bool {
	return len(c.Args) > 0 && c.Args[0] == "wait-ready"
}

// isHolder reports electd's image running `electd hold-listener`, which
// only keeps electd's ports open (hold_test.go).
func isHolder(c *corev1.Container) bool {
	return len(c.Args) > 0 && c.Args[0] == "hold-listener"
}

// sidecars finds the electd container of every workload that has one and
// checks that it is a native sidecar, not a regular container.
func sidecars(t *testing.T, m *manifests) []sidecar {
	t.Helper()
	var out []sidecar
	for _, w := range m.workloads() {
		spec := &w.template.Spec
		for i := range spec.Containers {
			if isElectd(&spec.Containers[i]) {
				t.Errorf("%s: electd is a regular container; run it as a native sidecar "+
					"(an initContainers entry with restartPolicy: Always) so it stops after the app", w.ref)
			}
		}
		for i := range spec.InitContainers {
			c := &spec.InitContainers[i]
			if !isElectd(c) {
				continue
			}
			if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				t.Errorf("%s: init container %s lacks restartPolicy: Always: a plain init container "+
					"would have to exit before the app starts", w.ref, c.Name)
			}
			s := sidecar{w: w, c: c, env: map[string]corev1.EnvVar{}, port: 4040}
			for _, e := range c.Env {
				if _, dup := s.env[e.Name]; dup {
					t.Errorf("%s: env %s set twice", w.ref, e.Name)
				}
				s.env[e.Name] = e
			}
			if e, ok := s.env["ELECTD_HTTP_ADDR"]; ok {
				_, p, err := net.SplitHostPort(e.Value)
				n, err2 := strconv.ParseUint(p, 10, 16)
				if err != nil || err2 != nil || n == 0 {
					t.Errorf("%s: ELECTD_HTTP_ADDR=%q is not host:port", w.ref, e.Value)
				}
				s.port = int32(n)
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		t.Fatal("no workload runs electd")
	}
	return out
}

// probePort resolves a probe's port, by number or by the container's port name.
func probePort(c *corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return -1
}

type namedProbe struct {
	kind string
	p    *corev1.Probe
}

func probes(c *corev1.Container) []namedProbe {
	var ps []namedProbe
	for _, np := range []namedProbe{{"startupProbe", c.StartupProbe}, {"readinessProbe", c.ReadinessProbe}, {"livenessProbe", c.LivenessProbe}} {
		if np.p != nil {
			ps = append(ps, np)
		}
	}
	return ps
}

func TestElectdIsANativeSidecarWithRealProbes(t *testing.T) {
	forEachFlavour(t, checkElectdIsANativeSidecarWithRealProbes)
}

func checkElectdIsANativeSidecarWithRealProbes(t *testing.T, m *manifests) {
	for _, s := range sidecars(t, m) {
		ref := s.w.ref
		if got := s.c.Ports; len(got) == 0 || !slices.ContainsFunc(got, func(p corev1.ContainerPort) bool { return p.ContainerPort == s.port }) {
			t.Errorf("%s: electd declares no containerPort %d (its ELECTD_HTTP_ADDR port)", ref, s.port)
		}
		// Gated flavour: Ready = leads. Label flavour: Ready = alive and
		// joined, and the label marks the leader.
		wantReady, why := "/healthz/leader", "that is what makes only the leader Ready"
		if _, ok := s.env["ELECTD_KUBERNETES_LEADER_LABEL"]; ok {
			wantReady, why = "/readyz", "with a leader label every joined pod is Ready"
		}
		if _, ok := s.env["ELECTD_PROXY_LISTEN"]; ok {
			wantReady, why = "/readyz", "with the proxy every joined pod is Ready and takes traffic"
		}
		if s.c.ReadinessProbe == nil || s.c.ReadinessProbe.HTTPGet == nil || s.c.ReadinessProbe.HTTPGet.Path != wantReady {
			t.Errorf("%s: electd's readinessProbe must GET %s: %s", ref, wantReady, why)
		}
		if s.c.LivenessProbe == nil || s.c.LivenessProbe.HTTPGet == nil || s.c.LivenessProbe.HTTPGet.Path != "/healthz" {
			t.Errorf("%s: electd's livenessProbe must GET /healthz (alive even as a follower or while ZooKeeper is away)", ref)
		}
		// Where electd checks the app's health it stands only once the app
		// is up, so the app starts after electd's startup probe on /healthz
		// (the process runs). Elsewhere the app starts once electd knows the
		// leader, so its first question names the leader: a plain init
		// container waits for /readyz once per pod, and electd has no
		// startup probe, which would run again at each restart of electd.
		if _, ok := s.env["ELECTD_APP_HEALTH_URL"]; ok {
			if p := s.c.StartupProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
				t.Errorf("%s: electd's startupProbe must GET /healthz: electd stands only once the app passes a check, so an app that waits for a leader never starts", ref)
			}
		} else {
			if s.c.StartupProbe != nil {
				t.Errorf("%s: electd has a startupProbe: it runs again at each restart of electd and keeps the pod unready a probe period longer", ref)
			}
			checkWaitsForTheFirstView(t, s)
		}
		for _, np := range probes(s.c) {
			if np.p.HTTPGet == nil {
				t.Errorf("%s: electd %s is not an httpGet probe", ref, np.kind)
				continue
			}
			if !slices.Contains(electdEndpoints, np.p.HTTPGet.Path) {
				t.Errorf("%s: electd %s path %q is not one of electd's endpoints %v", ref, np.kind, np.p.HTTPGet.Path, electdEndpoints)
			}
			if got := probePort(s.c, np.p.HTTPGet.Port); got != s.port {
				t.Errorf("%s: electd %s port %s resolves to %d, want %d from ELECTD_HTTP_ADDR", ref, np.kind, np.p.HTTPGet.Port.String(), got, s.port)
			}
		}
		// A probe in another container may aim at electd's port too (the
		// pod shares one network namespace): then it must use a real endpoint.
		for _, c := range allContainers(&s.w.template.Spec) {
			if c == s.c {
				continue
			}
			for _, np := range probes(c) {
				if np.p.HTTPGet != nil && probePort(c, np.p.HTTPGet.Port) == s.port && !slices.Contains(electdEndpoints, np.p.HTTPGet.Path) {
					t.Errorf("%s: container %s %s asks electd's port for %q, not an electd endpoint", ref, c.Name, np.kind, np.p.HTTPGet.Path)
				}
			}
		}
		if ann := s.w.template.Annotations; ann["prometheus.io/scrape"] == "true" {
			if got, want := ann["prometheus.io/port"], strconv.Itoa(int(s.port)); got != want {
				t.Errorf("%s: prometheus.io/port = %q, want %s", ref, got, want)
			}
			if got := ann["prometheus.io/path"]; got != "" && got != "/metrics" {
				t.Errorf("%s: prometheus.io/path = %q, want /metrics", ref, got)
			}
		}
	}
}

// checkWaitsForTheFirstView: a plain init container after electd runs
// `electd wait-ready` on electd's port, so the app starts once electd is
// ready (/readyz), once per pod.
func checkWaitsForTheFirstView(t *testing.T, s sidecar) {
	t.Helper()
	spec := &s.w.template.Spec
	after := false
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c == s.c {
			after = true
			continue
		}
		if !after || len(c.Args) == 0 || c.Args[0] != "wait-ready" {
			continue
		}
		if c.RestartPolicy != nil {
			t.Errorf("%s: %s has restartPolicy %s: it must run once, before the app", s.w.ref, c.Name, *c.RestartPolicy)
		}
		if c.Image != s.c.Image {
			t.Errorf("%s: %s runs %s, electd %s: one binary", s.w.ref, c.Name, c.Image, s.c.Image)
		}
		if got, want := strings.Join(c.Args, " "), fmt.Sprintf("--addr http://localhost:%d", s.port); !strings.Contains(got, want) {
			t.Errorf("%s: %s args %q, want %s (electd's port)", s.w.ref, c.Name, got, want)
		}
		return
	}
	t.Errorf("%s: no init container after electd runs wait-ready: the app would start before electd knows the leader", s.w.ref)
}

// isDuration reports whether key is a duration, as the configuration table
// says (one source of truth: no copy of the key list here).
func isDuration(key string) bool {
	k, ok := config.Lookup(key)
	return ok && k.Type == "duration"
}

// duration parses a configuration duration the way docs/design/http-contract.md,
// "Configuration" demands:
// a unit is required ("10" alone is an error).
func duration(v string) (time.Duration, bool) {
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	return d, err == nil
}

func TestElectdEnvironmentNamesRealKeys(t *testing.T) {
	forEachFlavour(t, checkElectdEnvironmentNamesRealKeys)
}

func checkElectdEnvironmentNamesRealKeys(t *testing.T, m *manifests) {
	envToKey := map[string]string{}
	for _, k := range designKeys {
		envToKey[envName(k)] = k
	}
	for _, s := range sidecars(t, m) {
		ref := s.w.ref
		defined := map[string]bool{} // names defined so far, for $(VAR) references
		for _, e := range s.c.Env {
			if strings.HasPrefix(e.Name, "ELECTD_") {
				key, ok := envToKey[e.Name]
				if !ok {
					t.Errorf("%s: %s is no configuration key's variable (known: the %d keys of the configuration table)", ref, e.Name, len(designKeys))
				}
				if isDuration(key) && e.ValueFrom == nil {
					if _, ok := duration(e.Value); !ok {
						t.Errorf("%s: %s=%q is not a duration with a unit", ref, e.Name, e.Value)
					}
				}
			}
			for _, r := range regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindAllStringSubmatch(e.Value, -1) {
				if !defined[r[1]] {
					t.Errorf("%s: %s refers to $(%s), which is not defined before it (Kubernetes would leave it unexpanded)", ref, e.Name, r[1])
				}
			}
			defined[e.Name] = true
		}

		// Required keys, and the id from the downward API.
		for _, k := range []string{"zookeeper.servers", "election.path"} {
			if _, ok := s.env[envName(k)]; !ok {
				t.Errorf("%s: %s is not set; %s is required", ref, envName(k), k)
			}
		}
		id, hasID := s.env["ELECTD_ID"]
		if !hasID {
			id, hasID = s.env["POD_NAME"] // electd's default id
		}
		if !hasID || id.ValueFrom == nil || id.ValueFrom.FieldRef == nil || id.ValueFrom.FieldRef.FieldPath != "metadata.name" {
			t.Errorf("%s: the id must come from the downward API (ELECTD_ID or POD_NAME from metadata.name)", ref)
		}
		if p := s.env["ELECTD_ELECTION_PATH"].Value; !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
			t.Errorf("%s: ELECTD_ELECTION_PATH=%q is not an absolute znode path", ref, p)
		}

		// Secrets (the admin token, the ZooKeeper credentials): secrets_test.go.

		// The servers are the ZooKeeper StatefulSet's pods, by their stable names.
		servers := strings.Split(s.env["ELECTD_ZOOKEEPER_SERVERS"].Value, ",")
		want := zookeeperPodAddresses(t, m)
		if !slices.Equal(servers, want) {
			t.Errorf("%s: ELECTD_ZOOKEEPER_SERVERS = %q, want the ZooKeeper pods %q", ref, servers, want)
		}

		// Termination: the kubelet stops the app, then electd; the grace
		// period must leave electd its shutdown_grace + shutdown_timeout.
		grace, timeout := 0*time.Second, 10*time.Second // configuration.md's defaults
		if e, ok := s.env["ELECTD_SHUTDOWN_GRACE"]; ok {
			grace, _ = duration(e.Value)
		}
		if e, ok := s.env["ELECTD_SHUTDOWN_TIMEOUT"]; ok {
			timeout, _ = duration(e.Value)
		}
		tgps := int64(corev1.DefaultTerminationGracePeriodSeconds)
		if p := s.w.template.Spec.TerminationGracePeriodSeconds; p != nil {
			tgps = *p
		}
		if time.Duration(tgps)*time.Second <= grace+timeout {
			t.Errorf("%s: terminationGracePeriodSeconds %d is not longer than shutdown_grace %v + shutdown_timeout %v", ref, tgps, grace, timeout)
		}
	}
}

// zookeeperPodAddresses lists <sts>-<i>.<headless service>:<client port> for
// the ZooKeeper StatefulSet, and checks that zoo.cfg names the same pods.
func zookeeperPodAddresses(t *testing.T, m *manifests) []string {
	t.Helper()
	var zk *appsv1.StatefulSet
	for _, s := range m.statefulSets {
		if s.Name == "zookeeper" {
			zk = s
		}
	}
	if zk == nil {
		t.Fatal("no StatefulSet zookeeper")
	}
	var headless *corev1.Service
	for _, svc := range m.services {
		if svc.Name == zk.Spec.ServiceName {
			headless = svc
		}
	}
	if headless == nil || headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Fatalf("StatefulSet zookeeper: serviceName %q is not a headless Service here", zk.Spec.ServiceName)
	}
	if !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s: publishNotReadyAddresses must be true: servers resolve each other before they are ready", headless.Name)
	}
	var addrs []string
	for i := range replicas(zk.Spec.Replicas) {
		addrs = append(addrs, net.JoinHostPort(zk.Name+"-"+strconv.Itoa(int(i))+"."+headless.Name, "2181"))
	}

	var cfg string
	for _, cm := range m.configMaps {
		if c, ok := cm.Data["zoo.cfg"]; ok {
			cfg = c
		}
	}
	lines := regexp.MustCompile(`(?m)^server\.(\d+)=([^:]+):2888:3888;2181$`).FindAllStringSubmatch(cfg, -1)
	if len(lines) != len(addrs) {
		t.Errorf("zoo.cfg has %d server lines, want %d (the StatefulSet's replicas)", len(lines), len(addrs))
	}
	for _, l := range lines {
		n, _ := strconv.Atoi(l[1])
		if want := zk.Name + "-" + strconv.Itoa(n-1) + "." + headless.Name; l[2] != want {
			t.Errorf("zoo.cfg: server.%s=%s, want %s (myid is the ordinal + 1)", l[1], l[2], want)
		}
	}
	return addrs
}

func TestSecurityContextsAreRestrictive(t *testing.T) {
	forEachFlavour(t, checkSecurityContextsAreRestrictive)
}

func checkSecurityContextsAreRestrictive(t *testing.T, m *manifests) {
	for _, w := range m.workloads() {
		pod := w.template.Spec.SecurityContext
		if pod == nil {
			pod = &corev1.PodSecurityContext{}
		}
		for _, c := range allContainers(&w.template.Spec) {
			sc := c.SecurityContext
			if sc == nil {
				t.Errorf("%s: container %s has no securityContext", w.ref, c.Name)
				continue
			}
			nonRoot := sc.RunAsNonRoot
			if nonRoot == nil {
				nonRoot = pod.RunAsNonRoot
			}
			if nonRoot == nil || !*nonRoot {
				t.Errorf("%s: container %s: runAsNonRoot is not true", w.ref, c.Name)
			}
			if uid := sc.RunAsUser; (uid != nil && *uid == 0) || (uid == nil && pod.RunAsUser != nil && *pod.RunAsUser == 0) {
				t.Errorf("%s: container %s runs as uid 0", w.ref, c.Name)
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s: container %s: readOnlyRootFilesystem is not true", w.ref, c.Name)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: container %s: allowPrivilegeEscalation is not false", w.ref, c.Name)
			}
			if sc.Privileged != nil && *sc.Privileged {
				t.Errorf("%s: container %s is privileged", w.ref, c.Name)
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
				t.Errorf("%s: container %s must drop ALL capabilities and add none", w.ref, c.Name)
			}
			seccomp := sc.SeccompProfile
			if seccomp == nil {
				seccomp = pod.SeccompProfile
			}
			if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("%s: container %s: seccompProfile is not RuntimeDefault", w.ref, c.Name)
			}
		}
	}
}

func TestResourcesAreSet(t *testing.T) { forEachFlavour(t, checkResourcesAreSet) }

func checkResourcesAreSet(t *testing.T, m *manifests) {
	for _, w := range m.workloads() {
		for _, c := range allContainers(&w.template.Spec) {
			r := c.Resources
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, ok := r.Requests[name]; !ok || q.IsZero() {
					t.Errorf("%s: container %s has no %s request", w.ref, c.Name, name)
				}
			}
			lim, ok := r.Limits[corev1.ResourceMemory]
			if !ok || lim.IsZero() {
				t.Errorf("%s: container %s has no memory limit", w.ref, c.Name)
				continue
			}
			if req := r.Requests[corev1.ResourceMemory]; req.Cmp(lim) > 0 {
				t.Errorf("%s: container %s requests more memory (%s) than its limit (%s)", w.ref, c.Name, req.String(), lim.String())
			}
		}
	}
}

// leaderGated reports whether a pod template is Ready only on the leader:
// some container's readiness probe asks electd's /healthz/leader.
func leaderGated(w workload) bool {
	for _, c := range allContainers(&w.template.Spec) {
		if p := c.ReadinessProbe; p != nil && p.HTTPGet != nil && p.HTTPGet.Path == "/healthz/leader" {
			return true
		}
	}
	return false
}

// TestRolloutCompletesWithOneReadyPod replays the Deployment controller's
// arithmetic for a leader-gated workload, where at most one pod is ever
// available: old pods are scaled down only while the available count stays
// at least replicas - maxUnavailable (maxUnavailable rounds down), and new
// pods never become available. Anything below 100% therefore stalls with the
// old leader in place.
func TestRolloutCompletesWithOneReadyPod(t *testing.T) {
	m := load(t)
	gated := 0
	for _, s := range m.statefulSets {
		if leaderGated(workload{template: &s.Spec.Template}) {
			t.Errorf("StatefulSet %s is leader-gated: a StatefulSet rolling update waits for each updated pod to be Ready, "+
				"which followers never are; use a Deployment", s.Name)
		}
	}
	for _, d := range m.deployments {
		w := workload{ref: "Deployment " + d.Name, replicas: replicas(d.Spec.Replicas), template: &d.Spec.Template}
		if !leaderGated(w) {
			continue
		}
		gated++
		if w.replicas < 2 {
			t.Errorf("%s: %d replica(s) leaves no follower to take over", w.ref, w.replicas)
		}
		switch d.Spec.Strategy.Type {
		case appsv1.RecreateDeploymentStrategyType:
			t.Logf("%s: Recreate completes, but stops every old pod before starting any new one", w.ref)
		case appsv1.RollingUpdateDeploymentStrategyType:
			ru := d.Spec.Strategy.RollingUpdate
			if ru == nil || ru.MaxUnavailable == nil {
				t.Errorf("%s: rollingUpdate.maxUnavailable unset (default 25%%): the rollout stalls", w.ref)
				break
			}
			maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, int(w.replicas), false)
			if err != nil {
				t.Fatalf("%s: maxUnavailable: %v", w.ref, err)
			}
			if minAvailable := int(w.replicas) - maxUnavailable; minAvailable > 0 {
				t.Errorf("%s: maxUnavailable %s keeps %d pod(s) available during a rollout, but new pods are followers "+
					"and never become available: the old leader is never replaced. Use maxUnavailable: 100%%",
					w.ref, ru.MaxUnavailable.String(), minAvailable)
			}
		default:
			t.Errorf("%s: strategy type %q", w.ref, d.Spec.Strategy.Type)
		}
		// Followers keep availableReplicas below replicas forever, so the
		// controller's progress deadline would mark every rollout failed.
		if p := d.Spec.ProgressDeadlineSeconds; p == nil || *p != math.MaxInt32 {
			t.Errorf("%s: progressDeadlineSeconds must be %d (no deadline): with followers unready by design "+
				"every rollout would end ProgressDeadlineExceeded", w.ref, math.MaxInt32)
		}
	}
	if gated == 0 {
		t.Error("no Deployment gates readiness on /healthz/leader")
	}
}

// TestDisruptionBudgetsLetNodesDrain replays the disruption controller: a pod
// counts as healthy only when Ready, so a leader-gated workload has exactly
// one healthy pod, the leader. Its eviction is allowed only if
// currentHealthy (1) - desiredHealthy >= 1.
func TestDisruptionBudgetsLetNodesDrain(t *testing.T) {
	forEachFlavour(t, checkDisruptionBudgetsLetNodesDrain)
}

func checkDisruptionBudgetsLetNodesDrain(t *testing.T, m *manifests) {
	for _, w := range m.workloads() {
		var matched []*policyv1.PodDisruptionBudget
		for _, pdb := range m.pdbs {
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil {
				t.Fatalf("PodDisruptionBudget %s: %v", pdb.Name, err)
			}
			if !sel.Empty() && sel.Matches(labels.Set(w.template.Labels)) {
				matched = append(matched, pdb)
			}
		}
		if len(matched) != 1 {
			t.Errorf("%s is covered by %d PodDisruptionBudgets, want 1 (the eviction API refuses pods with several)", w.ref, len(matched))
			continue
		}
		pdb := matched[0]
		desiredHealthy, err := desiredHealthy(pdb, w.replicas)
		if err != nil {
			t.Fatalf("PodDisruptionBudget %s: %v", pdb.Name, err)
		}
		if leaderGated(w) {
			if allowed := 1 - desiredHealthy; allowed < 1 {
				t.Errorf("PodDisruptionBudget %s: wants %d healthy of %s, but only the leader is ever Ready: "+
					"disruptionsAllowed stays 0 and the leader's node never drains", pdb.Name, desiredHealthy, w.ref)
			}
			if p := pdb.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
				t.Errorf("PodDisruptionBudget %s: unhealthyPodEvictionPolicy must be AlwaysAllow so that followers "+
					"(running, unready by design) can always be evicted", pdb.Name)
			}
			continue
		}
		// An ordinary workload (ZooKeeper): keep a majority, allow one.
		if quorum := w.replicas/2 + 1; desiredHealthy < quorum {
			t.Errorf("PodDisruptionBudget %s lets %s drop below a quorum of %d", pdb.Name, w.ref, quorum)
		}
		if w.replicas-desiredHealthy < 1 {
			t.Errorf("PodDisruptionBudget %s allows no disruption of %s", pdb.Name, w.ref)
		}
	}
}

// desiredHealthy is the disruption controller's computation for a workload
// whose controller asks for the given replicas.
func desiredHealthy(pdb *policyv1.PodDisruptionBudget, replicas int32) (int32, error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		mu, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(replicas), true)
		if err != nil {
			return 0, err
		}
		return max(0, replicas-int32(mu)), nil
	case pdb.Spec.MinAvailable != nil:
		ma, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(replicas), true)
		return int32(ma), err
	}
	return 0, nil
}

func TestLeaderServiceRoutesToReadyPodsOnly(t *testing.T) {
	m := load(t)
	found := false
	for _, svc := range m.services {
		if len(svc.Spec.Selector) == 0 {
			t.Errorf("Service %s has no selector", svc.Name)
			continue
		}
		for _, w := range m.workloads() {
			if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(w.template.Labels)) || !leaderGated(w) {
				continue
			}
			found = true
			if svc.Spec.PublishNotReadyAddresses {
				t.Errorf("Service %s publishes unready addresses: followers would get traffic", svc.Name)
			}
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				t.Errorf("Service %s is headless; the leader Service needs a ClusterIP", svc.Name)
			}
			for _, p := range svc.Spec.Ports {
				ok := false
				for _, c := range w.template.Spec.Containers { // the app, not the sidecar
					if port := probePort(&c, p.TargetPort); port > 0 && slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.ContainerPort == port }) {
						ok = true
					}
				}
				if !ok {
					t.Errorf("Service %s port %s: targetPort %s is no port of %s's app containers", svc.Name, p.Name, p.TargetPort.String(), w.ref)
				}
			}
		}
	}
	if !found {
		t.Error("no Service selects the leader-gated workload")
	}
}
