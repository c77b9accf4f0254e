// Package ledger is the application the data-plane tests put behind electd's
// forwarding proxy (docs/design/proxy.md, "Forwarding"), in two languages, and the
// ledger it keeps: what reached an application, by request id, which is what
// "no request ran twice" and "none was answered by a participant that did not
// lead" are judged from.
//
//   - The Go application (goapp.go) runs in a copy of the test binary started
//     as its own process (MainIfApp in the test package's TestMain), so that a
//     test can SIGKILL or SIGSTOP it as it would a real one. It speaks
//     HTTP/1.1 and h2c, answers WebSocket-style upgrades with an echo, and
//     serves gRPC (the standard health service, and a bidirectional echo
//     whose status travels in the trailers).
//   - The Python application (app.py, standard library only, run by
//     /usr/bin/python3) is an http.server: HTTP/1.0, never a 100 Continue,
//     which is what many ordinary servers are.
//
// Both append one JSON line per event to their ledger file with a single
// write (a SIGKILL cannot tear it): "arrive" once the request's headers are
// in and before a byte of its body is read (the side effect of an
// application that acts on the URL), "done" once the body and its trailers
// are read. A request counts as executed from its "arrive". Every answer
// carries X-App (who answered) and Electd-Leak (a header the proxy must keep
// from clients).
//
// Load sends paced, open-loop traffic (a request every 1/rate whether or
// not the others were answered, as clients do) with a fresh X-Request-Id on
// each, and keeps what every request got; Check holds the judgements over
// entries and results.
package ledger
