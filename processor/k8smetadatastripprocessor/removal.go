// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor"

import "go.opentelemetry.io/collector/pdata/pcommon"

// removalTree holds the paths to remove merged by common prefix, so that one pass over an object's metadata
// removes all of them instead of one lookup per path.
type removalTree struct {
	// remove is set when the map entry leading here is removed; what lies below it then does not matter.
	remove bool
	keys   []keyedTree
	each   *removalTree
}

type keyedTree struct {
	key  string
	tree *removalTree
}

func newRemovalTree(paths []path) *removalTree {
	root := &removalTree{}
	for _, p := range paths {
		t := root
		for _, s := range p {
			if s.each {
				if t.each == nil {
					t.each = &removalTree{}
				}
				t = t.each
				continue
			}
			t = t.child(s.key, true)
		}
		t.remove = true
	}
	return root
}

// child returns the tree under key, nil if there is none and add is false. Trees have a handful of keys, so a
// linear search beats a map.
func (t *removalTree) child(key string, add bool) *removalTree {
	for _, k := range t.keys {
		if k.key == key {
			return k.tree
		}
	}
	if !add {
		return nil
	}
	c := &removalTree{}
	t.keys = append(t.keys, keyedTree{key: key, tree: c})
	return c
}

// removeFrom removes t's paths from m and returns the number of entries removed.
//
// A map that becomes empty only because its last entry was removed is removed as well (and counted), so that
// an object created with kubectl apply, whose only annotation is the last applied configuration, strips to
// the same body as the one created with kubectl create, which has no annotations at all. A map that was empty
// before stays, and so does an emptied map that is an array element, so that arrays keep their length.
func (t *removalTree) removeFrom(m pcommon.Map) int {
	if len(t.keys) == 0 {
		return 0
	}
	removed := 0
	m.RemoveIf(func(k string, v pcommon.Value) bool {
		c := t.child(k, false)
		if c == nil {
			return false
		}
		if c.remove {
			removed++
			return true
		}
		n := c.removeBelow(v)
		removed += n
		if n > 0 && v.Type() == pcommon.ValueTypeMap && v.Map().Len() == 0 {
			removed++
			return true
		}
		return false
	})
	return removed
}

func (t *removalTree) removeBelow(v pcommon.Value) int {
	switch v.Type() {
	case pcommon.ValueTypeMap:
		return t.removeFrom(v.Map())
	case pcommon.ValueTypeSlice:
		if t.each == nil {
			return 0
		}
		removed := 0
		for _, e := range v.Slice().All() {
			removed += t.each.removeBelow(e)
		}
		return removed
	}
	return 0
}
