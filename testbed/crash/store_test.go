package crash

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// bucketReader reads the decision ids of every object in a bucket. The s3 exporter names an object by the hash
// of its lines, so an object once read never changes: each poll lists the bucket and fetches only new keys.
type bucketReader struct {
	client *s3.Client
	bucket string
	ids    map[string][]string // object key -> decision ids of its lines
}

func newBucketReader(client *s3.Client, bucket string) *bucketReader {
	return &bucketReader{client: client, bucket: bucket, ids: map[string][]string{}}
}

// refresh reads the objects not read yet.
func (r *bucketReader) refresh(ctx context.Context) error {
	pages := s3.NewListObjectsV2Paginator(r.client, &s3.ListObjectsV2Input{Bucket: aws.String(r.bucket)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing %s: %w", r.bucket, err)
		}
		for _, obj := range page.Contents {
			key := aws.ToString(obj.Key)
			if _, ok := r.ids[key]; ok {
				continue
			}
			ids, err := r.read(ctx, key)
			if err != nil {
				return err
			}
			r.ids[key] = ids
		}
	}
	return nil
}

func (r *bucketReader) read(ctx context.Context, key string) ([]string, error) {
	got, err := r.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(r.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("getting %s: %w", key, err)
	}
	defer got.Body.Close()
	if !strings.HasSuffix(key, ".jsonl.gz") {
		return nil, fmt.Errorf("object %s is not a gzip JSON lines object", key)
	}
	zr, err := gzip.NewReader(got.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	var ids []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		var id string
		if err := json.Unmarshal(line[policyresult.AttrDecisionID], &id); err != nil || id == "" {
			return nil, fmt.Errorf("%s: line without %s: %s", key, policyresult.AttrDecisionID, sc.Bytes())
		}
		ids = append(ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return ids, nil
}

// counts returns how many lines carry each decision id, the number of lines, and the number of objects.
func (r *bucketReader) counts() (perID map[string]int, lines, objects int) {
	perID = map[string]int{}
	for _, ids := range r.ids {
		for _, id := range ids {
			perID[id]++
		}
		lines += len(ids)
	}
	return perID, lines, len(r.ids)
}

// queueSize reads otelcol_exporter_queue_size of the s3 exporter from the collector's Prometheus endpoint.
func queueSize(metricsURL string) (int, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(metricsURL)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for l := range strings.Lines(string(body)) {
		if !strings.HasPrefix(l, "otelcol_exporter_queue_size{") || !strings.Contains(l, `exporter="s3"`) {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %q: %w", l, err)
		}
		return int(v), nil
	}
	return 0, fmt.Errorf("no otelcol_exporter_queue_size of the s3 exporter in %s", metricsURL)
}

// processGone reports whether pid has exited (its /proc entry is gone, or it is a zombie not yet reaped).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses, which may itself contain spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}
