// Command podapp is the example application of the node tests' pods
// (tests/harness/nodetest): a static HTTP server on $PORT (8080) that answers every
// request with its pod name ($POD_NAME, else the host name) and a newline,
// so that a request through a Service says which pod answered. It logs one
// JSON line per event to stdout (listening, the signal, its exit), which
// the tests read back with `kubectl logs` to check the order in which the
// kubelet stops the pod's containers.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func logf(event string, kv ...any) {
	m := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "msg": event}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	os.Stdout.Write(append(b, '\n'))
}

func main() {
	name := os.Getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	srv := &http.Server{
		Addr:              ":" + port,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintln(w, name)
		}),
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	// "listening" is written before the port is bound, so that nothing can
	// connect before the line exists: the node tests order electd's
	// "standing for leadership" (after a connection to the app) after it.
	logf("listening", "pod", name, "port", port)
	ln, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		logf("serve failed", "err", err.Error())
		os.Exit(1)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case sig := <-sigs:
		logf("signal", "signal", sig.String())
	case err := <-errc:
		logf("serve failed", "err", err.Error())
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	logf("exit")
}
