// Command lease-sidecar is the usual alternative to electd on Kubernetes, for
// the node tests' side-by-side failover (tests/e2e): a sidecar that elects a
// leader with client-go's leaderelection on a coordination.k8s.io Lease and
// answers GET /healthz/leader with 200 while it leads, so that a readiness
// probe gates a Service exactly as electd's readiness flavour does.
//
// Settings come from the environment, as a Deployment would give them:
// POD_NAME (the identity), POD_NAMESPACE, LEASE_NAME, LEASE_DURATION,
// RENEW_DEADLINE and RETRY_PERIOD (Go durations; client-go's documented
// defaults 15s, 10s and 2s when unset), RELEASE_ON_CANCEL ("true": clear the
// Lease's holder on SIGTERM so a follower need not wait for it to expire) and
// HTTP_ADDR (":4040"). It logs one JSON line per change, with the time.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("exit", "err", err.Error())
		os.Exit(1)
	}
}

func durationEnv(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

func run(log *slog.Logger) error {
	id, ns, name := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE"), os.Getenv("LEASE_NAME")
	if id == "" || ns == "" || name == "" {
		return errors.New("POD_NAME, POD_NAMESPACE and LEASE_NAME must be set")
	}
	// client-go's documented defaults (leaderelection.LeaderElectionConfig).
	lease, err := durationEnv("LEASE_DURATION", 15*time.Second)
	if err != nil {
		return err
	}
	renew, err := durationEnv("RENEW_DEADLINE", 10*time.Second)
	if err != nil {
		return err
	}
	retry, err := durationEnv("RETRY_PERIOD", 2*time.Second)
	if err != nil {
		return err
	}
	release, _ := strconv.ParseBool(os.Getenv("RELEASE_ON_CANCEL"))
	addr := os.Getenv("HTTP_ADDR")
	if addr == "" {
		addr = ":4040"
	}

	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	var leading atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz/leader", func(w http.ResponseWriter, _ *http.Request) {
		if leading.Load() {
			fmt.Fprintln(w, `{"is_leader":true}`)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, `{"is_leader":false}`)
	})
	ok := func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("GET /readyz", ok)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			log.Error("http", "err", err.Error())
			os.Exit(1)
		}
	}()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		log.Info("shutting down")
	}()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	log.Info("starting", "id", id, "lease_duration", lease.String(), "renew_deadline", renew.String(),
		"retry_period", retry.String(), "release_on_cancel", release)
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   lease,
		RenewDeadline:   renew,
		RetryPeriod:     retry,
		ReleaseOnCancel: release,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				leading.Store(true)
				log.Info("elected")
			},
			OnStoppedLeading: func() {
				leading.Store(false)
				log.Info("stopped leading")
			},
			OnNewLeader: func(holder string) { log.Info("leader", "holder", holder) },
		},
	})
	// RunOrDie returns once ctx is cancelled (after releasing the Lease when
	// asked to) or leadership is lost.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(shutdownCtx)
	log.Info("exit")
	return nil
}
