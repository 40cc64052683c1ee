// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor"

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// defaultRemove are the fields the API server writes (or kubectl apply adds) that differ between two clusters
// holding the same object. Labels, annotations, spec and status are the object's content and stay.
var defaultRemove = []string{
	"metadata.managedFields",
	"metadata.uid",
	"metadata.resourceVersion",
	"metadata.generation",
	"metadata.creationTimestamp",
	"metadata.selfLink",
	"metadata.ownerReferences[].uid",
	`metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`,
}

// defaultPaths are the parsed defaultRemove; a default that does not parse is a bug caught at start.
var defaultPaths = func() []path {
	ps := make([]path, len(defaultRemove))
	for i, s := range defaultRemove {
		p, err := parsePath(s)
		if err != nil {
			panic(err)
		}
		ps[i] = p
	}
	return ps
}()

// Config of the k8s_metadata_strip processor.
type Config struct {
	// Remove are more paths to remove from every Kubernetes object found, in the syntax of the defaults.
	Remove []string `mapstructure:"remove"`
	// Keep are default paths not to remove.
	Keep []string `mapstructure:"keep"`
	// SortKeys puts the keys of every map of the objects found in sorted order: the same object serialized by
	// two clients (or stored by two API server versions) can have its fields in another order.
	SortKeys bool `mapstructure:"sort_keys"`
}

// Validate checks the configuration before the collector starts.
func (c *Config) Validate() error {
	_, err := c.removalPaths()
	return err
}

// removalPaths are the paths removed from every object: the defaults not kept, then the configured ones.
func (c *Config) removalPaths() ([]path, error) {
	var errs []error
	// parse keeps the indexes of list, with nil for a malformed path, so errors can quote what was written.
	parse := func(key string, list []string) []path {
		ps := make([]path, len(list))
		for i, s := range list {
			p, err := parsePath(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				continue
			}
			ps[i] = p
		}
		return ps
	}
	keep := parse("keep", c.Keep)
	remove := parse("remove", c.Remove)

	for i, k := range keep {
		if k != nil && !containsPath(defaultPaths, k) {
			errs = append(errs, fmt.Errorf("keep: %q is not removed by default; the defaults are %s",
				c.Keep[i], strings.Join(defaultRemove, ", ")))
		}
	}
	for i, r := range remove {
		if r != nil && containsPath(keep, r) {
			errs = append(errs, fmt.Errorf("%q is in both keep and remove", c.Remove[i]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	paths := make([]path, 0, len(defaultPaths)+len(remove))
	for _, d := range defaultPaths {
		if !containsPath(keep, d) {
			paths = append(paths, d)
		}
	}
	return append(paths, remove...), nil
}

func containsPath(ps []path, p path) bool {
	return slices.ContainsFunc(ps, func(q path) bool { return slices.Equal(q, p) })
}
