// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// benchmarkOPAUpload measures the OPA path of one upload of 100 copies of an event, as OPA sends them: the body
// read, the events scanned, decoded and priced, their records built and handed to a pipeline that takes them.
func benchmarkOPAUpload(b *testing.B, file string) {
	var event bytes.Buffer
	if err := json.Compact(&event, fixture(b, file)); err != nil {
		b.Fatal(err)
	}
	upload := []byte{'['}
	for i := range 100 {
		if i > 0 {
			upload = append(upload, ',')
		}
		upload = append(upload, event.Bytes()...)
	}
	upload = append(upload, ']')

	cfg := createDefaultConfig().(*Config)
	cfg.OPA = configoptional.Some(defaultOPA())
	set := receivertest.NewNopSettings(NewFactory().Type())
	r, err := newReceiver(cfg, set, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{ReceiverID: set.ID, Transport: "http", ReceiverCreateSettings: set})
	if err != nil {
		b.Fatal(err)
	}
	e := &opaEndpoint{r: r, cfg: cfg.OPA.Get(), obs: obs}
	e.bodies.limit = 1 << 30
	b.SetBytes(int64(len(upload)))
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		e.handle(w, httptest.NewRequest(http.MethodPost, "/logs", bytes.NewReader(upload)))
		if w.Code != http.StatusOK {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

func BenchmarkOPAUpload(b *testing.B)          { benchmarkOPAUpload(b, "opa_bool.json") }
func BenchmarkOPAUploadAdmission(b *testing.B) { benchmarkOPAUpload(b, "opa_admission.json") }
