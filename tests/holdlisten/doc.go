// Package holdlisten tests electd hold-listener with real processes on a
// real ZooKeeper: the proxy's ports, kept by the holder through
// listen_hold_dir, refuse nothing while electd is SIGKILLed and
// started again; the requests that arrive meanwhile wait and are answered
// once by the application. The holder killed alone costs nothing, and a
// restarted holder takes the ports back from electd. A hold directory that
// is none stops both with an error naming it.
package holdlisten
