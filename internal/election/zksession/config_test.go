package zksession

import "testing"

func TestValidateServer(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"127.0.0.1:2181", true},
		{" zk-0.zk:2181 ", true},
		{"[::1]:2181", true},
		{"[fe80::1%eth0]:2181", true},
		{"zk:1", true},
		{"zk:65535", true},
		{"::1:2181", false}, // ambiguous without brackets
		{"zk", false},
		{"zk:", false},
		{":2181", false},
		{"zk:21a1", false},
		{"zk:218100", false},
		{"zk:0", false},     // the daemon's http.addr rule agrees: 1-65535
		{"zk:99999", false}, // five digits, still out of range
		{"zk:65536", false},
		{"zk:-1", false},
		{"zk:+1", false},
	} {
		if err := validateServer(tc.in); (err == nil) != tc.ok {
			t.Errorf("validateServer(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}
