// Package hardening tests the electd binary under a hostile environment:
// signals (SIGHUP, a second signal), stalled and closed log pipes, request
// bodies that never end, and connection floods against its caps, on its
// API port and on the forwarding proxy's client and peer ports, with its
// memory and file descriptors measured.
package hardening
