// Package follow makes leadership follow the application next to electd
// (docs/design/handover.md, "Following the application"): the health checks of
// app.health_url, the candidacy that they and the operator decide, in
// `electd run` the command that runs only while this participant leads,
// and the hand-overs that let those go first. An App holds them; Yielding
// is the election as the HTTP API and the candidacy drive it, every
// hand-over through the yields of what must let go first (the forwarding
// proxy's requests, exec mode's command).
package follow
