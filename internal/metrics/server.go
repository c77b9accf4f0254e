package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// refusalReasons are the label values of electd_http_requests_refused_total:
// the caps of httpapi, all exported from the start so rate() works at once.
var refusalReasons = []string{"streams", "waiters", "participants"}

// Server counts what the HTTP server and the log writer turned away or
// lost, so that an operator sees a flood, or a log reader that stalls.
// Its methods never block.
type Server struct {
	evicted prometheus.Counter
}

// NewServer registers the server's counter on reg with election=<path>;
// its gauges come with CollectServer once the server exists.
func NewServer(reg prometheus.Registerer, path string) *Server {
	return &Server{
		evicted: promauto.With(reg).NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "http_connections_evicted_total",
			ConstLabels: prometheus.Labels{"election": path}, Help: "Idle or slow HTTP connections closed to make room for a new one at http.max_connections."}),
	}
}

// CollectServer registers on reg, with election=<path>, what is read at
// scrape time: openConns, the server's open connections, and
// droppedLines, the log lines lost.
func CollectServer(reg prometheus.Registerer, path string, openConns func() int, droppedLines func() uint64) {
	labels := prometheus.Labels{"election": path}
	f := promauto.With(reg)
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "http_connections", ConstLabels: labels,
		Help: "Open HTTP connections."}, func() float64 { return float64(openConns()) })
	f.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "log_lines_dropped_total", ConstLabels: labels,
		Help: "Log lines dropped because stderr was not read fast enough, or was closed."},
		func() float64 { return float64(droppedLines()) })
}

// ConnectionEvicted counts one eviction.
func (s *Server) ConnectionEvicted() { s.evicted.Inc() }

// API counts the requests the HTTP API refused at a cap, so that an
// operator sees caps set too low. Its method never blocks.
type API struct {
	refused *prometheus.CounterVec
}

// NewAPI registers the API's metrics on reg with election=<path>.
func NewAPI(reg prometheus.Registerer, path string) *API {
	a := &API{refused: promauto.With(reg).NewCounterVec(prometheus.CounterOpts{Namespace: namespace,
		Name: "http_requests_refused_total", ConstLabels: prometheus.Labels{"election": path},
		Help: "Requests answered 503 at a cap, by cap."}, []string{"reason"})}
	for _, r := range refusalReasons {
		a.refused.WithLabelValues(r)
	}
	return a
}

// RequestRefused counts one request refused at the cap named reason
// (httpapi.Options.Refused).
func (a *API) RequestRefused(reason string) { a.refused.WithLabelValues(reason).Inc() }
