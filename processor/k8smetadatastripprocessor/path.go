// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8smetadatastripprocessor // import "github.com/otelcol-policy/otelcol-policy/processor/k8smetadatastripprocessor"

import (
	"errors"
	"fmt"
	"strings"
)

// step is one step of a path: a map key, or (each) every element of an array.
type step struct {
	key  string
	each bool
}

// path is a parsed field path, relative to a Kubernetes object. It always ends with a key: what is removed is
// a map entry, never an array element, so that arrays keep their length and order.
type path []step

// parsePath parses the path syntax of the configuration: dot-separated keys, `[]` after a segment for every
// element of an array, and `["..."]` for a key containing dots or slashes, as in
// metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"].
//
// Slashes must be quoted although they separate nothing: they occur in annotation and label keys, whose
// prefixes have dots, so a bare metadata.annotations.example.com/x would be split at its dots and silently
// match nothing. A quoted key cannot contain a double quote, which no Kubernetes field or annotation key does.
func parsePath(s string) (path, error) {
	if s == "" {
		return nil, errors.New("path is empty")
	}
	var p path
	i := 0
	for {
		// A segment: a bare key, or a quoted key at the start of the path.
		if i == 0 && strings.HasPrefix(s, `["`) {
			key, n, err := quotedKey(s, i)
			if err != nil {
				return nil, err
			}
			p, i = append(p, step{key: key}), n
		} else {
			key, n, err := bareKey(s, i)
			if err != nil {
				return nil, err
			}
			p, i = append(p, step{key: key}), n
		}
		// Suffixes of the segment: arrays and quoted keys.
		for i < len(s) && s[i] == '[' {
			switch {
			case strings.HasPrefix(s[i:], "[]"):
				p, i = append(p, step{each: true}), i+2
			case strings.HasPrefix(s[i:], `["`):
				key, n, err := quotedKey(s, i)
				if err != nil {
					return nil, err
				}
				p, i = append(p, step{key: key}), n
			default:
				return nil, fmt.Errorf(`path %q: expected [] or ["key"] at offset %d`, s, i)
			}
		}
		if i == len(s) {
			break
		}
		if s[i] != '.' {
			return nil, fmt.Errorf("path %q: unexpected %q at offset %d", s, s[i], i)
		}
		i++
	}
	if p[len(p)-1].each {
		return nil, fmt.Errorf("path %q: must end with a key, not []", s)
	}
	return p, nil
}

// bareKey reads the key starting at s[i], up to the next dot or bracket.
func bareKey(s string, i int) (string, int, error) {
	j := i
	for j < len(s) && s[j] != '.' && s[j] != '[' {
		switch s[j] {
		case ']', '"':
			return "", 0, fmt.Errorf("path %q: unexpected %q at offset %d", s, s[j], j)
		case '/':
			return "", 0, fmt.Errorf(`path %q: a key with a slash must be quoted, as a["b.c/d"], at offset %d`, s, j)
		}
		j++
	}
	if j == i {
		if strings.HasPrefix(s[i:], "[]") {
			return "", 0, fmt.Errorf("path %q: [] must follow a key, at offset %d", s, i)
		}
		if strings.HasPrefix(s[i:], `["`) {
			return "", 0, fmt.Errorf(`path %q: a quoted key follows the key before it without a dot, as a["b"], at offset %d`, s, i)
		}
		return "", 0, fmt.Errorf("path %q: empty key at offset %d", s, i)
	}
	return s[i:j], j, nil
}

// quotedKey reads a key `["..."]` whose opening bracket is s[i].
func quotedKey(s string, i int) (string, int, error) {
	start := i + 2
	end := strings.IndexByte(s[start:], '"')
	if end < 0 {
		return "", 0, fmt.Errorf("path %q: unterminated quote at offset %d", s, i+1)
	}
	end += start
	if end == start {
		return "", 0, fmt.Errorf("path %q: empty key at offset %d", s, i)
	}
	if end+1 >= len(s) || s[end+1] != ']' {
		return "", 0, fmt.Errorf(`path %q: expected ] after the quoted key at offset %d`, s, end+1)
	}
	return s[start:end], end + 2, nil
}
