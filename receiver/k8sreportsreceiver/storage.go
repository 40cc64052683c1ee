// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// stateStore persists the emitted state in a storage extension: one entry per report, and an index of the
// entries, because storage clients cannot list their keys. Each commit is one storage batch, so the index and
// the reports never disagree after a crash.
type stateStore struct {
	client storage.Client
	// index mirrors the stored index, to write it only when the set of reports changes.
	index map[string]struct{}
}

const (
	storeVersion  = "v1"
	storeIndexKey = "k8s_reports/" + storeVersion + "/index"
	storeReportNS = "k8s_reports/" + storeVersion + "/report/"
)

func storeKey(k objKey) string {
	return storeReportNS + k.gvr.Group + "/" + k.gvr.Version + "/" + k.gvr.Resource + "/" + k.namespace + "/" + k.name
}

func parseStoreKey(s string) (objKey, error) {
	parts := strings.Split(strings.TrimPrefix(s, storeReportNS), "/")
	if !strings.HasPrefix(s, storeReportNS) || len(parts) != 5 {
		return objKey{}, fmt.Errorf("malformed state key %q", s)
	}
	return objKey{gvr: schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]},
		namespace: parts[3], name: parts[4]}, nil
}

// load reads every stored report.
func (s *stateStore) load(ctx context.Context) (map[objKey]*emittedReport, error) {
	s.index = map[string]struct{}{}
	raw, err := s.client.Get(ctx, storeIndexKey)
	if err != nil {
		return nil, fmt.Errorf("reading the state index: %w", err)
	}
	out := map[objKey]*emittedReport{}
	if raw == nil {
		return out, nil
	}
	var keys []string
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, fmt.Errorf("decoding the state index: %w", err)
	}
	ops := make([]*storage.Operation, len(keys))
	for i, k := range keys {
		ops[i] = storage.GetOperation(k)
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		return nil, fmt.Errorf("reading the stored reports: %w", err)
	}
	for _, op := range ops {
		k, err := parseStoreKey(op.Key)
		if err != nil {
			return nil, err
		}
		if op.Value == nil {
			continue
		}
		r := &emittedReport{}
		if err := json.Unmarshal(op.Value, r); err != nil {
			return nil, fmt.Errorf("decoding the stored state of %s: %w", op.Key, err)
		}
		out[k] = r
		s.index[op.Key] = struct{}{}
	}
	return out, nil
}

// save writes the reports of one commit; a nil report is deleted.
func (s *stateStore) save(ctx context.Context, reports map[objKey]*emittedReport) error {
	ops := make([]*storage.Operation, 0, len(reports)+1)
	var added []string
	removed := map[string]struct{}{}
	for k, r := range reports {
		key := storeKey(k)
		_, indexed := s.index[key]
		if r == nil {
			ops = append(ops, storage.DeleteOperation(key))
			if indexed {
				removed[key] = struct{}{}
			}
			continue
		}
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(key, b))
		if !indexed {
			added = append(added, key)
		}
	}
	if len(added)+len(removed) > 0 {
		keys := make([]string, 0, len(s.index)+len(added))
		for k := range s.index {
			if _, gone := removed[k]; !gone {
				keys = append(keys, k)
			}
		}
		keys = append(keys, added...)
		slices.Sort(keys)
		b, err := json.Marshal(keys)
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(storeIndexKey, b))
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		return err
	}
	for k := range removed {
		delete(s.index, k)
	}
	for _, k := range added {
		s.index[k] = struct{}{}
	}
	return nil
}
