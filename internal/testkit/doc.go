// Package testkit is what the product's unit tests and the harnesses under
// tests/ share: the one poller (For, Until), a capture buffer safe across
// goroutines (Buffer), and in testcert certificates made at test time.
// Nothing here is for production.
package testkit
