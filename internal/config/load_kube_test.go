package config

import (
	"strings"
	"testing"
	"time"
)

// inCluster sets what the kubelet gives a pod: the API server's address,
// the downward API variables and a service account's token and CA files.
func inCluster(t *testing.T) (tokenFile, caFile string) {
	t.Helper()
	cleanEnv(t)
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	t.Setenv("POD_NAME", "web-7d9f-abcde")
	t.Setenv("POD_NAMESPACE", "shop")
	return writeFile(t, "token", "eyJhbGciOi.token\n"), writeFile(t, "ca.crt", testCA(t))
}

func testCA(t *testing.T) string {
	t.Helper()
	cert, _ := keyPairPEM(t, "ca")
	return string(cert)
}

func TestKubernetesKeysInCluster(t *testing.T) {
	tok, ca := inCluster(t)
	c, err := loadArgs(t, append(minimal, "--kubernetes.leader_label", "electd.io/leader",
		"--kubernetes.lease_name", "web-leader", "--kubernetes.token_file", tok, "--kubernetes.ca_file", ca,
		"--kubernetes.recheck_interval", "5s")...)
	if err != nil {
		t.Fatal(err)
	}
	k := c.Prepared.Kube
	if k.PodName != "web-7d9f-abcde" || k.Namespace != "shop" || k.Identity != "web-7d9f-abcde" {
		t.Errorf("pod %q namespace %q identity %q: want the downward API's", k.PodName, k.Namespace, k.Identity)
	}
	if k.Server != "https://10.96.0.1:443" || k.LeaderLabel != "electd.io/leader" || k.LeaseName != "web-leader" ||
		k.RecheckInterval != 5*time.Second || k.TokenFile != tok || k.CAFile != ca {
		t.Errorf("kube config = %+v", k)
	}
}

// The participant gate alone needs the pod and the API server, and no
// label or Lease.
func TestParticipantGateInCluster(t *testing.T) {
	tok, ca := inCluster(t)
	c, err := loadArgs(t, append(minimal, "--kubernetes.participant_gate",
		"--kubernetes.token_file", tok, "--kubernetes.ca_file", ca)...)
	if err != nil {
		t.Fatal(err)
	}
	k := c.Prepared.Kube
	if !k.ParticipantGate || k.Enabled() || k.PodName != "web-7d9f-abcde" || k.Namespace != "shop" || k.Identity != k.PodName {
		t.Errorf("kube config = %+v; want the gate alone, for the downward API's pod", k)
	}
}

// Without a label or a Lease nothing Kubernetes is needed or read.
func TestKubernetesOffNeedsNothing(t *testing.T) {
	cleanEnv(t)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	c, err := loadArgs(t, minimal...)
	if err != nil {
		t.Fatal(err)
	}
	if c.Prepared.Kube.Enabled() {
		t.Error("enabled without a label or a Lease")
	}
}

// Each bad value is one error naming its key (main exits 2 with it).
func TestKubernetesBadValuesNameTheKey(t *testing.T) {
	for _, c := range []struct {
		key  string
		args []string
		env  map[string]string
	}{
		{"kubernetes.leader_label", []string{"--kubernetes.leader_label", "electd.io/Leader/x"}, nil},
		{"kubernetes.leader_label", []string{"--kubernetes.leader_label", "-leader"}, nil},
		{"kubernetes.lease_name", []string{"--kubernetes.lease_name", "Web_Leader"}, nil},
		{"kubernetes.pod_name", []string{"--kubernetes.leader_label", "electd.io/leader"}, map[string]string{"POD_NAME": ""}},
		{"kubernetes.namespace", []string{"--kubernetes.leader_label", "electd.io/leader", "--kubernetes.namespace", "Shop"}, nil},
		{"kubernetes.leader_label", []string{"--kubernetes.leader_label", "electd.io/leader"}, map[string]string{"KUBERNETES_SERVICE_HOST": ""}},
		{"kubernetes.lease_name", []string{"--kubernetes.lease_name", "web"}, map[string]string{"KUBERNETES_SERVICE_PORT": ""}},
		{"kubernetes.token_file", []string{"--kubernetes.leader_label", "electd.io/leader", "--kubernetes.token_file", "/nonexistent"}, nil},
		{"kubernetes.ca_file", []string{"--kubernetes.lease_name", "web", "--kubernetes.ca_file", "/etc/hostname"}, nil},
		{"kubernetes.recheck_interval", []string{"--kubernetes.recheck_interval", "500ms"}, nil},
		{"kubernetes.recheck_interval", []string{"--kubernetes.recheck_interval", "10"}, nil},
		{"kubernetes.participant_gate", []string{"--kubernetes.participant_gate", "--id", "web-1"}, nil},
		{"kubernetes.participant_gate", []string{"--kubernetes.participant_gate"}, map[string]string{"KUBERNETES_SERVICE_HOST": ""}},
		{"kubernetes.pod_name", []string{"--kubernetes.participant_gate"}, map[string]string{"POD_NAME": ""}},
	} {
		t.Run(c.key+" "+strings.Join(c.args, " "), func(t *testing.T) {
			tok, ca := inCluster(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			args := append([]string{"--validate", "--kubernetes.token_file", tok, "--kubernetes.ca_file", ca}, minimal...)
			_, err := loadArgs(t, append(args, c.args...)...)
			if err == nil {
				t.Fatal("no error")
			}
			if got := "electd: " + err.Error() + "\n"; strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "electd: "+c.key+": ") {
				t.Errorf("stderr %q, want one line naming %s", got, c.key)
			}
		})
	}
}
