// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

// MaxDepth is encoding/json's nesting limit, so that both agree on what is valid.
const MaxDepth = 10000

// scanner validates values and counts, as it goes, what they cost once built (see Size), so that pricing an
// event takes no pass of its own.
type scanner struct {
	d []byte
	// values and widest are the Size of what was scanned since they were last set to Size{Values: 1}.
	values, widest int
}

// ScanValue validates the value at d[i] (no leading space) inside depth enclosing containers and returns its
// end.
func ScanValue(d []byte, i, depth int) (int, error) {
	s := scanner{d: d}
	return s.value(i, depth)
}

func (s *scanner) value(i, depth int) (int, error) {
	d := s.d
	if i >= len(d) {
		return i, errEOF(i)
	}
	switch c := d[i]; {
	case c == '{' || c == '[':
		return s.container(i, depth+1)
	case c == '"':
		end, _, err := ScanString(d, i)
		return end, err
	case c == 't':
		return ScanLiteral(d, i, "true")
	case c == 'f':
		return ScanLiteral(d, i, "false")
	case c == 'n':
		return ScanLiteral(d, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return ScanNumber(d, i)
	default:
		return i, errBadChar(i, c, "looking for beginning of value")
	}
}

// container validates the object or array at d[i], at nesting depth depth.
func (s *scanner) container(i, depth int) (int, error) {
	d := s.d
	if depth > MaxDepth {
		return i, &SyntaxError{i, "exceeded max depth"}
	}
	object := d[i] == '{'
	closer := byte(']')
	if object {
		closer = '}'
	}
	j := SkipSpace(d, i+1)
	if j < len(d) && d[j] == closer {
		s.counted(object, 0)
		return j + 1, nil
	}
	for n := 1; ; n++ {
		vstart := j
		if object {
			var err error
			if _, _, vstart, err = ScanKey(d, j); err != nil {
				return 0, err
			}
		}
		vend, err := s.value(vstart, depth)
		if err != nil {
			return vend, err
		}
		var more bool
		if j, more, err = ScanAfter(d, vend, closer); err != nil || !more {
			if err == nil {
				s.counted(object, n)
			}
			return j, err
		}
	}
}

// counted adds a container of n members or elements to the size.
func (s *scanner) counted(object bool, n int) {
	n = max(n, 1)
	s.values += n
	if object {
		s.widest = max(s.widest, n)
	}
}

// ScanKey validates the object key at d[j] and the colon after it; it returns the key's end, whether the key
// has escapes, and where the value starts.
func ScanKey(d []byte, j int) (kend int, esc bool, vstart int, err error) {
	if j >= len(d) {
		return 0, false, 0, errEOF(j)
	}
	if d[j] != '"' {
		return 0, false, 0, errBadChar(j, d[j], "looking for beginning of object key string")
	}
	if kend, esc, err = ScanString(d, j); err != nil {
		return 0, false, 0, err
	}
	if j = SkipSpace(d, kend); j >= len(d) {
		return 0, false, 0, errEOF(j)
	}
	if d[j] != ':' {
		return 0, false, 0, errBadChar(j, d[j], "after object key")
	}
	return kend, esc, SkipSpace(d, j+1), nil
}

// ScanAfter validates what follows the member or element ending at d[vend]: a comma, and then it returns where
// the next one starts and true, or the closer, and then it returns the container's end.
func ScanAfter(d []byte, vend int, closer byte) (int, bool, error) {
	j := SkipSpace(d, vend)
	if j >= len(d) {
		return j, false, errEOF(j)
	}
	switch d[j] {
	case closer:
		return j + 1, false, nil
	case ',':
		return SkipSpace(d, j+1), true, nil
	}
	if closer == '}' {
		return j, false, errBadChar(j, d[j], "after object key:value pair")
	}
	return j, false, errBadChar(j, d[j], "after array element")
}

// ScanLiteral validates the literal lit (true, false or null) at d[i] and returns its end.
func ScanLiteral(d []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(d) {
			return i + k, errEOF(i + k)
		}
		if d[i+k] != lit[k] {
			return i + k, errBadChar(i+k, d[i+k], "in literal "+lit)
		}
	}
	return i + len(lit), nil
}

// ScanNumber validates the number at d[i] and returns its end.
func ScanNumber(d []byte, i int) (int, error) {
	j := i
	if d[j] == '-' {
		j++
	}
	digits := func(at int) (int, error) {
		if at >= len(d) {
			return at, errEOF(at)
		}
		if d[at] < '0' || d[at] > '9' {
			return at, errBadChar(at, d[at], "in numeric literal")
		}
		for at < len(d) && d[at] >= '0' && d[at] <= '9' {
			at++
		}
		return at, nil
	}
	if j < len(d) && d[j] == '0' {
		j++
	} else {
		var err error
		if j, err = digits(j); err != nil {
			return j, err
		}
	}
	if j < len(d) && d[j] == '.' {
		var err error
		if j, err = digits(j + 1); err != nil {
			return j, err
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		return digits(j)
	}
	return j, nil
}
