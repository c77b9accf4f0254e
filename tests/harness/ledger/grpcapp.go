package ledger

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// EchoMethod is the Go application's bidirectional gRPC stream: every
// message (a google.protobuf.BytesValue) comes back as it was sent, and once
// the client has sent its last the stream ends with status
// ResourceExhausted and "echoed N", and trailer x-app: a status only the
// trailers carry. Not registered as a service: the application serves it as
// an unknown method, so no generated code is needed.
const EchoMethod = "/ledger.Echo/Bidi"

// EchoEnd is the code the echo stream ends with.
const EchoEnd = codes.ResourceExhausted

// ServeMethod is the Go application's unary call (a
// google.protobuf.BytesValue, the name of a service; the same back) that
// makes its health service say that service is SERVING: a health Watch
// through the proxies then follows the change.
const ServeMethod = "/ledger.Health/Serve"

// newGRPC is the Go application's gRPC server: the standard health service
// (Check: unary; Watch: a server stream) and EchoMethod, each call recorded
// in the ledger as it arrives, as an HTTP request is.
func newGRPC(a *goApp) *grpc.Server {
	rec := func(ctx context.Context, method string) {
		md, _ := metadata.FromIncomingContext(ctx)
		a.led.write(a.entry(Arrive, "GRPC", method, "HTTP/2.0", md))
	}
	s := grpc.NewServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			rec(ctx, info.FullMethod)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			rec(ss.Context(), info.FullMethod)
			return h(srv, ss)
		}),
		grpc.UnknownServiceHandler(a.echo),
	)
	a.health = health.NewServer()
	a.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, a.health)
	return s
}

func (a *goApp) echo(_ any, ss grpc.ServerStream) error {
	switch m, _ := grpc.MethodFromServerStream(ss); m {
	case ServeMethod:
		svc := new(wrapperspb.BytesValue)
		if err := ss.RecvMsg(svc); err != nil {
			return err
		}
		a.health.SetServingStatus(string(svc.Value), healthpb.HealthCheckResponse_SERVING)
		return ss.SendMsg(svc)
	case EchoMethod:
	default:
		return status.Errorf(codes.Unimplemented, "no method %s", m)
	}
	ss.SetTrailer(metadata.Pairs("x-app", a.cfg.Name))
	n := 0
	for {
		m := new(wrapperspb.BytesValue)
		err := ss.RecvMsg(m)
		if errors.Is(err, io.EOF) {
			return status.Errorf(EchoEnd, "echoed %d", n)
		}
		if err != nil {
			return err
		}
		n++
		if err := ss.SendMsg(m); err != nil {
			return err
		}
	}
}
