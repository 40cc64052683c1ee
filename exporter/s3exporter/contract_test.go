// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/receiver"
)

// TestConsumeContract runs core's exporter contract: every record the exporter accepts reaches the consumer
// behind the bucket, records refused with a retryable error are retried until they get through, and records
// refused permanently are never retried.
func TestConsumeContract(t *testing.T) {
	srv := startMinIO(t)
	proxyAddr := freeAddr(t)

	cfg := testConfig(srv)
	cfg.S3Uploader.Endpoint = "http://" + proxyAddr
	cfg.RetryConfig.Enabled = true
	cfg.RetryConfig.InitialInterval = time.Millisecond
	cfg.RetryConfig.MaxInterval = 5 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = 0

	exportertest.CheckConsumeContract(exportertest.CheckConsumeContractParams{
		T:                    t,
		NumberOfTestElements: 50,
		Signal:               pipeline.SignalLogs,
		ExporterFactory:      NewFactory(),
		ExporterConfig:       cfg,
		ReceiverFactory:      bucketReceiverFactory(),
		ReceiverConfig:       &bucketReceiverConfig{Addr: proxyAddr, MinIO: srv.Endpoint()},
	})

	// What the consumer accepted is in MinIO: in always_succeed, every record, one object each (the later
	// scenarios send the same records, which land on the same keys).
	ids := map[string]int{}
	for _, o := range listObjects(t, srv.Client()) {
		lines := o.parse(t)
		require.Len(t, lines, 1, o.key)
		ids[lines[0]["test_id"].(string)]++
	}
	require.Len(t, ids, 50)
	for i := range 50 {
		require.Equal(t, 1, ids[strconv.Itoa(i)], "record %d", i)
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// bucketReceiverConfig places the contract's receiver between the exporter and MinIO.
type bucketReceiverConfig struct {
	Addr  string
	MinIO string
}

// bucketReceiverFactory makes the contract's receiver: an S3 reverse proxy that hands every object the exporter
// puts to the consumer, record by record, and lets the consumer's answer decide S3's: stored in MinIO on
// success, AccessDenied on a permanent error, SlowDown otherwise.
func bucketReceiverFactory() receiver.Factory {
	return receiver.NewFactory(component.MustNewType("s3_bucket_proxy"),
		func() component.Config { return &bucketReceiverConfig{} },
		receiver.WithLogs(func(_ context.Context, _ receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
			return &bucketReceiver{cfg: cfg.(*bucketReceiverConfig), next: next}, nil
		}, component.StabilityLevelDevelopment))
}

type bucketReceiver struct {
	cfg    *bucketReceiverConfig
	next   consumer.Logs
	server *http.Server
	done   chan struct{}
}

func (r *bucketReceiver) Start(context.Context, component.Host) error {
	target, err := url.Parse(r.cfg.MinIO)
	if err != nil {
		return err
	}
	// The proxy keeps the Host header the exporter signed, so MinIO accepts the signature.
	proxy := httputil.NewSingleHostReverseProxy(target)
	l, err := net.Listen("tcp", r.cfg.Addr)
	if err != nil {
		return err
	}
	r.server = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPut {
			proxy.ServeHTTP(w, req)
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ld, err := objectLogs(req.URL.Path, body)
		if err != nil {
			s3ErrorResponse(w, http.StatusBadRequest, "InvalidArgument", err.Error())
			return
		}
		if err := r.next.ConsumeLogs(req.Context(), ld); err != nil {
			if consumererror.IsPermanent(err) {
				s3ErrorResponse(w, http.StatusForbidden, "AccessDenied", err.Error())
			} else {
				s3ErrorResponse(w, http.StatusServiceUnavailable, "SlowDown", err.Error())
			}
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, req)
	})}
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		_ = r.server.Serve(l)
	}()
	return nil
}

func (r *bucketReceiver) Shutdown(ctx context.Context) error {
	if r.server == nil {
		return nil
	}
	err := r.server.Shutdown(ctx)
	<-r.done
	return err
}

// objectLogs reads an object back into records: one per line, each field of the line an attribute, which
// brings back the attribute the contract identifies records by.
func objectLogs(key string, body []byte) (plog.Logs, error) {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	raw, err := decompressObject(key, body)
	if err != nil {
		return ld, err
	}
	lines := bytes.TrimSuffix(raw, []byte("\n"))
	for line := range bytes.SplitSeq(lines, []byte("\n")) {
		var fields map[string]any
		if err := json.Unmarshal(line, &fields); err != nil {
			return ld, fmt.Errorf("line %q: %w", line, err)
		}
		lr := lrs.AppendEmpty()
		if err := lr.Attributes().FromRaw(fields); err != nil {
			return ld, err
		}
	}
	if lrs.Len() == 0 {
		return ld, errors.New("empty object")
	}
	return ld, nil
}

// s3ErrorResponse answers as S3 does, with the XML error document the SDK parses.
func s3ErrorResponse(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>%s</RequestId></Error>`,
		code, xmlEscape(message), strconv.FormatInt(time.Now().UnixNano(), 36))
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
