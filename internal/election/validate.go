package election

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/electd/electd/internal/fielderr"
)

// Limits that Validate enforces. A value outside them would pass ZooKeeper's
// checks at start and break at run time; each bound says which way.
const (
	// MaxFencingOffset keeps token = czxid + offset below 2^63: a czxid is
	// epoch<<32 | counter, and an ensemble reaches epoch 2^30 (czxid 2^62)
	// only after a billion leader elections of its own.
	MaxFencingOffset = 1 << 62
	// MaxIDBytes and MaxAdvertiseBytes bound what every participant writes
	// and every reader of the election reads and serves over HTTP, far below
	// ZooKeeper's 1 MiB packet limit (jute.maxbuffer): past it a client
	// reconnects in a loop. A Kubernetes pod name has at most 253 bytes.
	MaxIDBytes        = 1024
	MaxAdvertiseBytes = 4096
	// MaxPathBytes bounds the election path, chroot included: it is sent in
	// every request and in the watch list replayed on each reconnect.
	MaxPathBytes = 1024
	// MinTerm: every selector term ends with a hand-over (delete, watch
	// fires, the next participant claims), a few round trips during which
	// nobody leads, and writes to ZooKeeper. A quarter second keeps that
	// under a few percent of the time and four rotations a second (1 ns made
	// three selectors swap 1,335 times in 10 s).
	MinTerm = 250 * time.Millisecond
	// MaxTerm: a week; a longer term is "hold until released" (0).
	MaxTerm = 7 * 24 * time.Hour
	// MaxClaimDelay: a new leader is silent this long after each change;
	// past ten minutes it is a typo for seconds, not a design.
	MaxClaimDelay = 10 * time.Minute
	// TermEndTimeout bounds Config.TermEnd: the election loop waits on it.
	TermEndTimeout = time.Minute
)

// FieldError is what Validate returns: Field names the field of
// SessionConfig or Config that is wrong, Err says how. Test with errors.As;
// a caller that reads the fields from its own configuration keys maps Field
// back to the key.
type FieldError = fielderr.Error

func fieldErr(field, format string, args ...any) error {
	return fielderr.Errorf("election", field, format, args...)
}

// validateText accepts printable UTF-8 of at most max bytes: ids and
// advertise data are served raw (/leader?format=text) and logged.
func validateText(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%d bytes; at most %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", fielderr.Quote(s))
	}
	if !fielderr.Printable(s) {
		return fmt.Errorf("%s has a control character", fielderr.Quote(s))
	}
	return nil
}

func validateElectionPath(p string) error {
	if len(p) > MaxPathBytes {
		return fmt.Errorf("%d bytes; at most %d, chroot included", len(p), MaxPathBytes)
	}
	return ValidatePath(p)
}

// ValidatePath checks that p is an absolute znode path that can hold an election.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("must not be empty")
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%s is relative; it must start with /", fielderr.Quote(p))
	case p == "/":
		return fmt.Errorf("the root cannot hold an election")
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%s must not end with /", fielderr.Quote(p))
	case strings.Contains(p, "//"):
		return fmt.Errorf("%s has an empty segment", fielderr.Quote(p))
	case !utf8.ValidString(p):
		return fmt.Errorf("%s is not valid UTF-8", fielderr.Quote(p))
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("%s has a relative segment %q", fielderr.Quote(p), seg)
		}
		if seg == "zookeeper" && strings.HasPrefix(p, "/zookeeper") {
			return fmt.Errorf("%s is reserved by ZooKeeper", fielderr.Quote(p))
		}
	}
	for _, r := range p {
		if r == 0 || (r > 0 && r < 0x20) || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return fmt.Errorf("%s has a character ZooKeeper forbids (%U)", fielderr.Quote(p), r)
		}
	}
	return nil
}
