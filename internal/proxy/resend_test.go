package proxy

import "testing"

// The resend rule (docs/design/proxy.md, "Forwarding": what may be sent again):
// at most once by default; again only when provably unprocessed, or
// declared safe and nothing of the answer relayed.
func TestResendable(t *testing.T) {
	body := facts{bodyAgain: true}
	with := func(f func(*facts)) facts {
		c := body
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		f    facts
		want Resend // "" when not sent again
	}{
		{"a failure that proves nothing", body, ""},
		{"no connection was had", with(func(f *facts) { f.noConn = true }), ResendUnprocessed},
		{"the connection took nothing", with(func(f *facts) { f.unwritten = true }), ResendUnprocessed},
		{"bounced by the leader's proxy", with(func(f *facts) { f.bounced = true }), ResendUnprocessed},
		{"bounced, but its body is half sent", with(func(f *facts) { f.bounced, f.bodyAgain = true, false }), ""},
		{"untaken when a newer leader was known and a ping came back",
			with(func(f *facts) { f.toPeer, f.termEnded = true, true }), ResendUnprocessed},
		{"taken, then a newer leader", with(func(f *facts) { f.toPeer, f.taken, f.termEnded = true, true, true }), ""},
		{"untaken, the term not proven over (no ping came back)", with(func(f *facts) { f.toPeer = true }), ""},
		{"untaken and the peer lost, but safe", with(func(f *facts) { f.toPeer, f.safe = true, true }), ResendSafe},
		{"taken, leader changed, safe", with(func(f *facts) { f.toPeer, f.taken, f.safe = true, true, true }), ResendSafe},
		{"safe, but too slow", with(func(f *facts) { f.safe, f.slow = true, true }), ""},
		{"safe, but an answer was relayed", with(func(f *facts) { f.safe, f.started = true, true }), ""},
		{"unprocessed, but an answer was relayed", with(func(f *facts) { f.noConn, f.started = true, true }), ""},
		{"unprocessed, but shutting down", with(func(f *facts) { f.noConn, f.shutdown = true, true }), ""},
		{"unprocessed and slow (a dial that timed out)", with(func(f *facts) { f.noConn, f.slow = true, true }), ResendUnprocessed},
		{"the body never asked for, opted in", with(func(f *facts) { f.unreadBody = true }), ResendUnreadBody},
		{"the body never asked for, but half sent", with(func(f *facts) { f.unreadBody, f.bodyAgain = true, false }), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, ok := resendable(tc.f)
			if ok != (tc.want != "") || why != tc.want {
				t.Fatalf("resendable(%+v) = %q %v, want %q", tc.f, why, ok, tc.want)
			}
		})
	}
}
