package proxykit

import "github.com/electd/electd/internal/api"

// Routed names the participant that every proxy routes to, as their
// /leader answers (views, by participant) say: the one that leads, with its
// proxy sending to its application, while every other proxy sends to the
// leader's proxy address (proxies, by participant: where the other
// proxies reach it, its proxy.peer_listen). "" while they do not agree yet,
// or a participant runs no proxy.
func Routed(views map[string]api.Leader, proxies map[string]string) string {
	leader := ""
	for name, v := range views {
		if v.Proxy == nil {
			return ""
		}
		if v.Self.IsLeader {
			leader = name
		}
	}
	if leader == "" {
		return ""
	}
	for name, v := range views {
		switch {
		case name == leader && v.Proxy.Route != "app":
			return ""
		case name != leader && (v.Proxy.Route != "leader" || v.Proxy.To != proxies[leader]):
			return ""
		}
	}
	return leader
}
