// Package resume tests a restarted electd resuming its ZooKeeper session
// (zookeeper.session_file) with real electd processes on a real ZooKeeper:
// the leader SIGKILLed and started again inside its session timeout keeps
// its session, node, fencing token and leadership in every mode, answers
// 200 on /healthz/leader only with a lease proved on the resumed session,
// and every participant is idle again afterwards. A session that expired
// meanwhile, a file written for another pod and a file another process
// holds are not resumed.
package resume
