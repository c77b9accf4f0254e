package ledger

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// MaybeProcessed is how the proxy words a failure after the request may
// have reached an application (issue 28, must have 2): the client must not
// take it for "not done".
const MaybeProcessed = "may or may not have been processed"

// Clean reports an answer as the proxy promises one whatever fails
// (issue 28, must have 1): the application's 200, or a 503 or 504 with
// Retry-After.
func Clean(r Request) bool {
	switch {
	case r.Err != nil:
		return false
	case r.Code == http.StatusOK:
		return true
	case r.Code == http.StatusServiceUnavailable, r.Code == http.StatusGatewayTimeout:
		return r.Header.Get("Retry-After") != ""
	}
	return false
}

// SaysMaybe reports a 502 or a 503 that says the request may or may not
// have been processed (a 503 with Retry-After): what a client gets for a
// request whose application died with it in hand.
func SaysMaybe(r Request) bool {
	if r.Err != nil || !strings.Contains(r.Body, MaybeProcessed) {
		return false
	}
	return r.Code == http.StatusBadGateway || (r.Code == http.StatusServiceUnavailable && r.Header.Get("Retry-After") != "")
}

// Late lists the requests that took longer than bound.
func Late(reqs []Request, bound time.Duration) []Request {
	var out []Request
	for _, r := range reqs {
		if r.Latency() > bound {
			out = append(out, r)
		}
	}
	return out
}

// Failing lists the requests ok does not accept.
func Failing(reqs []Request, ok func(Request) bool) []Request {
	var out []Request
	for _, r := range reqs {
		if !ok(r) {
			out = append(out, r)
		}
	}
	return out
}

// Leaks lists the answers that showed the client an Electd-* header (no
// header of the forwarding contract may reach a client, issue 28 must have
// 4; the applications send Electd-Leak on every answer to tempt it).
func Leaks(reqs []Request) []string {
	var out []string
	for _, r := range reqs {
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "electd-") {
				out = append(out, r.String()+": header "+k)
			}
		}
	}
	return out
}

// Posts is the ids of the requests that are not safe to send twice.
func Posts(reqs []Request) map[string]bool {
	out := map[string]bool{}
	for _, r := range reqs {
		if r.Method == http.MethodPost {
			out[r.ID] = true
		}
	}
	return out
}

// Count counts the requests ok accepts.
func Count(reqs []Request, ok func(Request) bool) int {
	n := 0
	for _, r := range reqs {
		if ok(r) {
			n++
		}
	}
	return n
}

// Codes tells how the requests ended: a count per status code, in order,
// and of those without an answer, e.g. "200x540 503x20 no answer x2".
func Codes(reqs []Request) string {
	n := map[int]int{}
	for _, r := range reqs {
		if r.Err != nil {
			n[0]++
		} else {
			n[r.Code]++
		}
	}
	var out []string
	for _, c := range slices.Sorted(maps.Keys(n)) {
		if c == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%dx%d", c, n[c]))
	}
	if n[0] > 0 {
		out = append(out, fmt.Sprintf("no answer x%d", n[0]))
	}
	return strings.Join(out, " ")
}
