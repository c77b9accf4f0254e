package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/electd/electd/tests/electdtest"
)

// grpcApp is one participant's gRPC application (HTTP/2 without TLS, as
// gRPC servers serve): the standard health service (unary Check, server
// streaming Watch) and, for any other method, a stream both ways that
// answers each message with "<name> <fencing token> <message>", or fails
// with FailedPrecondition for /echo.Echo/Fail.
type grpcApp struct {
	name   string
	addr   string
	srv    *grpc.Server
	health *health.Server
}

func startGRPCApp(t *testing.T, name string) *grpcApp {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &grpcApp{name: name, addr: ln.Addr().String(), health: health.NewServer()}
	a.srv = grpc.NewServer(grpc.UnknownServiceHandler(a.echo))
	healthpb.RegisterHealthServer(a.srv, a.health)
	go func() { _ = a.srv.Serve(ln) }()
	t.Cleanup(a.srv.Stop)
	return a
}

// echo is the handler of every method but the health service's.
func (a *grpcApp) echo(_ any, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	if method == "/echo.Echo/Fail" {
		return status.Error(codes.FailedPrecondition, "refused by "+a.name)
	}
	md, _ := metadata.FromIncomingContext(stream.Context())
	token := strings.Join(md.Get("electd-fencing-token"), ",")
	for {
		var m wrapperspb.StringValue
		if err := stream.RecvMsg(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if err := stream.SendMsg(wrapperspb.String(a.name + " " + token + " " + m.Value)); err != nil {
			return err
		}
	}
}

// gRPC through the forwarding proxies of real electd processes: a client
// that dials a follower's proxy (and the leader's own) gets unary calls
// with their status, a server stream that follows a change, a stream both
// ways at once, and errors with their codes, all from the leader's
// application, which sees the leader's fencing token (docs/DESIGN.md,
// "Forwarding": any application).
func TestForwardingGRPC(t *testing.T) {
	apps := map[string]*grpcApp{}
	for i := range 3 {
		name := fmt.Sprintf("p%d", i)
		apps[name] = startGRPCApp(t, name)
	}
	c := startCluster(t, 3, func(cfg *electdtest.Config) { cfg.ProxyApp = apps[cfg.ID].addr })
	l := c.settled(nil)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	v, err := l.proc.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	token := fmt.Sprint(v.Leader.FencingToken)
	for _, via := range []*member{c.follower(l, 0), l} {
		t.Run("via "+via.name, func(t *testing.T) {
			conn, err := grpc.NewClient(via.proxy, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			hc := healthpb.NewHealthClient(conn)
			if res, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || res.Status != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("Check: %v %v, want SERVING", res, err)
			}
			// A server stream: the first status, then the change.
			w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
			if err != nil {
				t.Fatal(err)
			}
			if res, err := w.Recv(); err != nil || res.Status != healthpb.HealthCheckResponse_SERVICE_UNKNOWN {
				t.Fatalf("Watch: %v %v", res, err)
			}
			apps[l.name].health.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
			if res, err := w.Recv(); err != nil || res.Status != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("Watch after the change: %v %v", res, err)
			}
			apps[l.name].health.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVICE_UNKNOWN)
			// Both ways at once: each answer comes before the next message goes.
			s, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, "/echo.Echo/Chat")
			if err != nil {
				t.Fatal(err)
			}
			for _, msg := range []string{"one", "two"} {
				if err := s.SendMsg(wrapperspb.String(msg)); err != nil {
					t.Fatal(err)
				}
				var got wrapperspb.StringValue
				if err := s.RecvMsg(&got); err != nil || got.Value != l.name+" "+token+" "+msg {
					t.Fatalf("echo %q %v, want the leader's application with its token", got.Value, err)
				}
			}
			if err := s.CloseSend(); err != nil {
				t.Fatal(err)
			}
			if err := s.RecvMsg(new(wrapperspb.StringValue)); !errors.Is(err, io.EOF) {
				t.Fatalf("end of the stream: %v, want io.EOF (status OK in the trailers)", err)
			}
			// A status in the trailers, code and message, passes through.
			err = conn.Invoke(ctx, "/echo.Echo/Fail", wrapperspb.String("x"), new(wrapperspb.StringValue))
			if st := status.Convert(err); st.Code() != codes.FailedPrecondition || st.Message() != "refused by "+l.name {
				t.Fatalf("Fail: %v, want FailedPrecondition from the leader's application", err)
			}
		})
	}
	// The client's channel and the proxies' streams are gone: every
	// participant is back at rest.
	c.idle()
}
