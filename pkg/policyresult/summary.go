// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Summary attributes. The counts are leaves under policy.summary and the changes under policy.summary.change,
// because a semantic-conventions name is either a value or a namespace, never both.
const (
	AttrSummaryKey   = "policy.summary.key"
	AttrSummaryPass  = "policy.summary.pass"
	AttrSummaryFail  = "policy.summary.fail"
	AttrSummaryWarn  = "policy.summary.warn"
	AttrSummaryError = "policy.summary.error"
	AttrSummarySkip  = "policy.summary.skip"
	AttrSummaryTotal = "policy.summary.total"

	AttrSummaryChangePass  = "policy.summary.change.pass"
	AttrSummaryChangeFail  = "policy.summary.change.fail"
	AttrSummaryChangeWarn  = "policy.summary.change.warn"
	AttrSummaryChangeError = "policy.summary.change.error"
	AttrSummaryChangeSkip  = "policy.summary.change.skip"
	AttrSummaryChangeTotal = "policy.summary.change.total"
)

// DefaultSummaryGroup are the attributes a summary groups results by unless configured otherwise: one policy
// in one namespace of one cluster. The slice is the caller's.
func DefaultSummaryGroup() []string {
	return []string{AttrClusterName, AttrSource, AttrPolicy, AttrResourceNamespace}
}

// IsSummaryAttribute reports whether a summary record writes name itself (event name, key, counts, changes), so
// that it cannot be one of the group's attributes.
func IsSummaryAttribute(name string) bool {
	return name == AttrEventName || name == AttrSummaryKey ||
		slices.Contains(summaryCountAttrs[:], name) || slices.Contains(summaryChangeAttrs[:], name)
}

// Counts are the number of results by outcome. Total includes results without an outcome, so it can exceed the
// sum of the others.
type Counts struct {
	Pass, Fail, Warn, Error, Skip, Total int64
}

// Add counts n results of outcome o; an empty or unknown outcome counts towards Total only.
func (c *Counts) Add(o Outcome, n int64) {
	switch o {
	case OutcomePass:
		c.Pass += n
	case OutcomeFail:
		c.Fail += n
	case OutcomeWarn:
		c.Warn += n
	case OutcomeError:
		c.Error += n
	case OutcomeSkip:
		c.Skip += n
	}
	c.Total += n
}

// Sub is c minus d, field by field.
func (c Counts) Sub(d Counts) Counts {
	return Counts{
		Pass: c.Pass - d.Pass, Fail: c.Fail - d.Fail, Warn: c.Warn - d.Warn,
		Error: c.Error - d.Error, Skip: c.Skip - d.Skip, Total: c.Total - d.Total,
	}
}

// Attribute is one name and value of a summary's group.
type Attribute struct {
	Name, Value string
}

// Summary is the state of one group of results (by default one policy in one namespace of one cluster).
type Summary struct {
	// Key identifies the group: SummaryKey of all its attributes, including those written on the resource.
	Key string
	// Attributes are the group's attributes written on the record; empty values are left out.
	Attributes []Attribute
	Counts     Counts
	// Change is Counts minus the counts of the group's previous summary.
	Change    Counts
	Timestamp time.Time
}

// SummaryKey identifies a group by its attribute names and values, in any order: 32 hexadecimal characters, the
// same in every process. A compacted topic or an upsert table keyed by it holds the latest summary of each group.
func SummaryKey(group []Attribute) string {
	sorted := slices.Clone(group)
	slices.SortFunc(sorted, func(a, b Attribute) int { return strings.Compare(a.Name, b.Name) })
	var buf [512]byte
	b := AppendField(buf[:0], summaryHashVersion)
	for _, a := range sorted {
		b = AppendField(b, a.Name)
		b = AppendField(b, a.Value)
	}
	return sum(b).String()
}

const summaryHashVersion = "policysummary/v1"

// WriteSummaryLogRecord writes s into lr as a policy.summary record.
func WriteSummaryLogRecord(s *Summary, lr plog.LogRecord) {
	attrs := writeEvent(lr, EventSummary, plog.SeverityNumberInfo, s.Timestamp, len(s.Attributes)+14)
	for _, a := range s.Attributes {
		putNonEmpty(attrs, a.Name, a.Value)
	}
	attrs.PutStr(AttrSummaryKey, s.Key)
	for i, name := range summaryCountAttrs {
		attrs.PutInt(name, s.Counts.field(i))
	}
	for i, name := range summaryChangeAttrs {
		attrs.PutInt(name, s.Change.field(i))
	}
}

// ReadSummaryLogRecord reads a summary back from a record written by WriteSummaryLogRecord. Every string
// attribute other than the event name and key is taken as a group attribute, in record order.
func ReadSummaryLogRecord(lr plog.LogRecord) (Summary, error) {
	attrs := lr.Attributes()
	if event := EventName(lr); event != EventSummary {
		return Summary{}, fmt.Errorf("not a %s record: event name %q", EventSummary, event)
	}
	s := Summary{Key: str(attrs, AttrSummaryKey)}
	if lr.Timestamp() != 0 {
		s.Timestamp = lr.Timestamp().AsTime()
	}
	for i, name := range summaryCountAttrs {
		v, ok := attrs.Get(name)
		if !ok || v.Type() != pcommon.ValueTypeInt {
			return Summary{}, fmt.Errorf("attribute %s: want an int", name)
		}
		*s.Counts.ptr(i) = v.Int()
	}
	for i, name := range summaryChangeAttrs {
		v, ok := attrs.Get(name)
		if !ok || v.Type() != pcommon.ValueTypeInt {
			return Summary{}, fmt.Errorf("attribute %s: want an int", name)
		}
		*s.Change.ptr(i) = v.Int()
	}
	for name, v := range attrs.All() {
		if v.Type() == pcommon.ValueTypeStr && !IsSummaryAttribute(name) {
			s.Attributes = append(s.Attributes, Attribute{Name: name, Value: v.Str()})
		}
	}
	return s, nil
}

var (
	summaryCountAttrs = [6]string{
		AttrSummaryPass, AttrSummaryFail, AttrSummaryWarn, AttrSummaryError, AttrSummarySkip, AttrSummaryTotal,
	}
	summaryChangeAttrs = [6]string{
		AttrSummaryChangePass, AttrSummaryChangeFail, AttrSummaryChangeWarn, AttrSummaryChangeError,
		AttrSummaryChangeSkip, AttrSummaryChangeTotal,
	}
)

// ptr addresses the fields in the order of summaryCountAttrs.
func (c *Counts) ptr(i int) *int64 {
	return [...]*int64{&c.Pass, &c.Fail, &c.Warn, &c.Error, &c.Skip, &c.Total}[i]
}

func (c Counts) field(i int) int64 { return *c.ptr(i) }
