package export

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// receiver is an in-process OTLP receiver: the collector's gRPC
// LogsService and MetricsService, and the HTTP /v1/logs and /v1/metrics
// handlers, keeping every request.
type receiver struct {
	collogspb.UnimplementedLogsServiceServer
	mu      sync.Mutex
	logs    []*logspb.ResourceLogs
	metrics []*metricspb.ResourceMetrics
	// stall, when set, holds every logs request until it is closed (a
	// collector that stopped reading).
	stall chan struct{}
	// headers are the values of the x-ktrace-test header (gRPC metadata
	// or HTTP header) of the logs requests.
	headers []string
}

func (r *receiver) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	if r.stall != nil {
		select {
		case <-r.stall:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		r.headers = append(r.headers, md.Get("x-ktrace-test")...)
	}
	r.logs = append(r.logs, req.ResourceLogs...)
	return &collogspb.ExportLogsServiceResponse{}, nil
}

type metricsService struct {
	colmetricspb.UnimplementedMetricsServiceServer
	r *receiver
}

func (m metricsService) Export(_ context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	m.r.metrics = append(m.r.metrics, req.ResourceMetrics...)
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
}

// startGRPC serves the receiver on a loopback port; it returns the
// address.
func startGRPC(t testing.TB, r *receiver) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	collogspb.RegisterLogsServiceServer(s, r)
	colmetricspb.RegisterMetricsServiceServer(s, metricsService{r: r})
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

// startHTTP serves the receiver's /v1/logs and /v1/metrics (binary
// protobuf) on a loopback port; it returns the address.
func startHTTP(t *testing.T, r *receiver) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/logs", func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var m collogspb.ExportLogsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &m)
		}
		if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.Export(metadata.NewIncomingContext(req.Context(), metadata.Pairs("x-ktrace-test", req.Header.Get("X-Ktrace-Test"))), &m)
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collogspb.ExportLogsServiceResponse{})
		w.Write(out)
	})
	mux.HandleFunc("/v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var m colmetricspb.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &m)
		}
		if err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		metricsService{r: r}.Export(req.Context(), &m)
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
		w.Write(out)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &http.Server{Handler: mux}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().String()
}

// records returns every log record received, in order, with its
// resource's attributes.
func (r *receiver) records() (recs []*logspb.LogRecord, resources []map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rl := range r.logs {
		res := map[string]any{}
		for _, kv := range rl.GetResource().GetAttributes() {
			res[kv.Key] = anyValue(kv.Value)
		}
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				recs = append(recs, lr)
				resources = append(resources, res)
			}
		}
	}
	return recs, resources
}
