package election

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
		{"::1:2181", false}, // ambiguous without brackets
		{"zk", false},
		{"zk:", false},
		{":2181", false},
		{"zk:21a1", false},
		{"zk:218100", false},
	} {
		if err := validateServer(tc.in); (err == nil) != tc.ok {
			t.Errorf("validateServer(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func TestSessionHexUnsigned(t *testing.T) {
	// ZooKeeper prints session ids unsigned; ids with the top bit set (server
	// id >= 128) must not print as negative numbers.
	if got := sessionHex(-0x7f00000000000001); got != "0x80ffffffffffffff" {
		t.Errorf("sessionHex = %s", got)
	}
	if got := sessionHex(0x100004749370000); got != "0x100004749370000" {
		t.Errorf("sessionHex = %s", got)
	}
}
