package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"
)

const opaListener = "opa"

// opaEndpoint serves what OPA's decision_logs plugin uploads: a JSON array of decision events, usually gzip
// compressed (confighttp decompresses it). It answers 2xx only once the pipeline accepted the events, so OPA
// keeps and retries a chunk the pipeline refused.
type opaEndpoint struct {
	r       *decisionsReceiver
	obs     *receiverhelper.ObsReport
	limiter logLimiter
}

func (r *decisionsReceiver) startOPA(ctx context.Context, host component.Host, cfg *OPAConfig) error {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: r.set.ID, Transport: "http", ReceiverCreateSettings: r.set,
	})
	if err != nil {
		return err
	}
	e := &opaEndpoint{r: r, obs: obs}
	mux := http.NewServeMux()
	mux.HandleFunc(cfg.Path, e.handle)
	ln, err := cfg.ServerConfig.ToListener(ctx)
	if err != nil {
		return fmt.Errorf("opa endpoint: %w", err)
	}
	srv, err := cfg.ServerConfig.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings, mux)
	if err != nil {
		ln.Close()
		return fmt.Errorf("opa endpoint: %w", err)
	}
	r.server = srv
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	}()
	return nil
}

func (e *opaEndpoint) handle(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "decision logs are POSTed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			e.r.rejected(&e.limiter, opaListener, "body_too_large", 1, zap.Int64("limit", tooLarge.Limit))
			http.Error(w, fmt.Sprintf("request body larger than %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		e.r.rejected(&e.limiter, opaListener, "encoding", 1, zap.Error(err))
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	events, err := splitEvents(body)
	if err != nil {
		e.r.rejected(&e.limiter, opaListener, "json", 1, zap.Error(err))
		http.Error(w, "malformed decision log upload: "+err.Error(), http.StatusBadRequest)
		return
	}
	batch := make([]decoded, 0, len(events))
	for i, raw := range events {
		ev, err := decodeOPA(raw)
		if err != nil {
			// One bad event does not cost OPA the rest of its chunk.
			e.r.rejected(&e.limiter, opaListener, "event", 1, zap.Int("event", i), zap.Error(err))
			continue
		}
		batch = append(batch, ev)
	}
	if len(batch) > 0 {
		if err := e.r.consume(req.Context(), e.obs, FormatOPA, batch); err != nil {
			if consumererror.IsPermanent(err) {
				e.r.rejected(&e.limiter, opaListener, "refused", len(batch), zap.Error(err))
				http.Error(w, "the pipeline rejected the decisions: "+err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("Retry-After", "5")
			http.Error(w, "the pipeline is refusing data; retry later", http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// splitEvents reads the upload: a JSON array of events (OPA's format), or a single event object. It finds the
// events with the decoders' scanner rather than encoding/json, which would scan and copy the whole upload once
// more before each event is decoded.
func splitEvents(body []byte) ([]json.RawMessage, error) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '{' {
		end, err := scanJSONValue(body, 0, 0)
		if err != nil || end != len(body) {
			return nil, fmt.Errorf("want a JSON array of decision events (or one event object): %v", errOr(err, "data after the object"))
		}
		return []json.RawMessage{body}, nil
	}
	if len(body) == 0 || body[0] != '[' {
		return nil, errors.New("want a JSON array of decision events")
	}
	var events []json.RawMessage
	i := skipJSONSpace(body, 1)
	if i < len(body) && body[i] == ']' {
		i++
	} else {
		for {
			end, err := scanJSONValue(body, i, 1)
			if err != nil {
				return nil, fmt.Errorf("event %d: %w", len(events), err)
			}
			events = append(events, body[i:end])
			i = skipJSONSpace(body, end)
			if i >= len(body) {
				return nil, errors.New("unexpected end of the array")
			}
			if body[i] == ']' {
				i++
				break
			}
			if body[i] != ',' {
				return nil, fmt.Errorf("want ',' or ']' at byte %d", i)
			}
			i = skipJSONSpace(body, i+1)
		}
	}
	if skipJSONSpace(body, i) != len(body) {
		return nil, errors.New("data after the array")
	}
	return events, nil
}

func errOr(err error, msg string) any {
	if err != nil {
		return err
	}
	return msg
}
