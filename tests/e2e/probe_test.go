package e2e

import "testing"

// The lines are conntrack's, from a run where kube-proxy had no rule for
// the Service (the first) and from one it translated (the second).
func TestNotTranslated(t *testing.T) {
	const svc = "198.19.128.207"
	for _, c := range []struct {
		line string
		want bool
	}{
		{"tcp 6 85 SYN_SENT src=198.19.0.1 dst=198.19.128.207 sport=60968 dport=80 [UNREPLIED] src=198.19.128.207 dst=198.19.0.1 sport=80 dport=60968 mark=0 use=1", true},
		{"tcp 6 85 SYN_SENT src=198.19.0.1 dst=198.19.128.207 sport=60970 dport=80 [UNREPLIED] src=198.18.0.69 dst=198.19.0.1 sport=4041 dport=60970 mark=0 use=1", false},
		{"tcp 6 85 ESTABLISHED src=198.19.0.1 dst=198.19.128.207 sport=60971 dport=80 src=198.19.128.207 dst=198.19.0.1 sport=80 dport=60971", false},
	} {
		if got := notTranslated(c.line, svc); got != c.want {
			t.Errorf("notTranslated(%q) = %v, want %v", c.line, got, c.want)
		}
	}
}
