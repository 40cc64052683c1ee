// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package recordparquet writes log records as the rows of a Parquet file, the columnar format of the s3
// exporter: the attributes a query filters on (cluster, namespace, source, policy, rule, outcome, severity,
// vulnerability score, fixed version, change kind, event, times) are columns of their own, which engines read
// without touching the rest; every other attribute and the body are kept as JSON, so nothing of a record is
// lost. docs/parquet.md documents the schema.
package recordparquet // import "github.com/otelcol-policy/otelcol-policy/pkg/recordparquet"

import (
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// Columns that are the record's own fields rather than attributes.
const (
	ColumnTime           = "time"
	ColumnObservedTime   = "observed_time"
	ColumnEventName      = "event_name"
	ColumnSeverityText   = "severity_text"
	ColumnSeverityNumber = "severity_number"
	ColumnTraceID        = "trace_id"
	ColumnSpanID         = "span_id"
	// ColumnAttributes holds, as one JSON object, every attribute that has no column of its own or whose value
	// is not of its column's type.
	ColumnAttributes = "attributes"
	ColumnBody       = "body"
)

// attrKind is the type of an attribute column: an attribute whose value has another type is kept in
// ColumnAttributes instead.
type attrKind int

const (
	kindString attrKind = iota
	kindDouble
)

type attrColumn struct {
	attr string
	kind attrKind
	// dict: few distinct values in a batch, so dictionary encoding stores each once per row group.
	dict bool
}

// attrColumns are the attributes that have a column, in the file's order: what the fleet's queries filter and
// group on, and the identity of results and decisions, for queries that keep the latest record of each.
var attrColumns = []attrColumn{
	{policyresult.AttrClusterName, kindString, true},
	{policyresult.AttrSource, kindString, true},
	{policyresult.AttrPolicy, kindString, true},
	{policyresult.AttrRule, kindString, true},
	{policyresult.AttrSeverity, kindString, true},
	{policyresult.AttrResult, kindString, true},
	{policyresult.AttrResultState, kindString, true},
	{policyresult.AttrResourceNamespace, kindString, true},
	{policyresult.AttrResourceKind, kindString, true},
	{policyresult.AttrResourceName, kindString, true},
	{policyresult.AttrVulnerabilityID, kindString, true},
	{policyresult.AttrVulnerabilityScoreBase, kindDouble, true},
	{policyresult.AttrPackageName, kindString, true},
	{policyresult.AttrPackageFixedVersion, kindString, true},
	{policyresult.AttrResultKey, kindString, false},
	{policyresult.AttrDecisionID, kindString, false},
}

// maxColumnValueBytes is the longest string an attribute column holds; a longer value stays in ColumnAttributes.
// Parquet keeps a column's smallest and largest value uncompressed in every page header and in the footer, so
// a long value there would be stored several times over whatever the compression (an 8 MiB policy.rule made a
// file of 50 MB); in the JSON column it is compressed once. The names these columns hold (Kubernetes names,
// policy and rule names, CVE ids, package versions) are far shorter.
const maxColumnValueBytes = 1024

// ColumnName is the column of an attribute: its name with every character but a-z, 0-9 and _ turned into _
// (policy.result becomes policy_result), so that engines and catalogs (Athena, Glue, Hive, Spark) accept it
// unquoted. It is the name the s3 exporter gives a partition of the same attribute.
func ColumnName(attr string) string {
	b := []byte(strings.ToLower(attr))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			b[i] = '_'
		}
	}
	return string(b)
}

// Column indexes of the fields; the attribute columns follow firstAttrColumn in attrColumns' order, then
// trace_id, span_id, attributes and body.
const (
	colTime = iota
	colObservedTime
	colEventName
	colSeverityText
	colSeverityNumber
	firstAttrColumn
)

var (
	colTraceID    = firstAttrColumn + len(attrColumns)
	colSpanID     = colTraceID + 1
	colAttributes = colTraceID + 2
	colBody       = colTraceID + 3
	numColumns    = colTraceID + 4
)

// columnOf maps an attribute with a column to its index in attrColumns.
var columnOf = func() map[string]int {
	m := make(map[string]int, len(attrColumns))
	for i, c := range attrColumns {
		m[c.attr] = i
	}
	return m
}()

// schema is the file's schema. Every column is optional: NULL is a record without the field or attribute.
var schema = func() *parquet.Schema {
	dictString := parquet.Optional(parquet.Encoded(parquet.String(), &parquet.RLEDictionary))
	fields := parquet.Group{}
	order := make([]string, 0, numColumns)
	add := func(name string, node parquet.Node) {
		fields[name] = node
		order = append(order, name)
	}
	// Microseconds: the unit of Spark, Athena, BigQuery, Iceberg and Delta timestamps, which read no nanoseconds.
	add(ColumnTime, parquet.Optional(parquet.Encoded(parquet.Timestamp(parquet.Microsecond), &parquet.RLEDictionary)))
	add(ColumnObservedTime, parquet.Optional(parquet.Encoded(parquet.Timestamp(parquet.Microsecond), &parquet.RLEDictionary)))
	add(ColumnEventName, dictString)
	add(ColumnSeverityText, dictString)
	add(ColumnSeverityNumber, parquet.Optional(parquet.Encoded(parquet.Int(32), &parquet.RLEDictionary)))
	for _, c := range attrColumns {
		switch {
		case c.kind == kindDouble:
			add(ColumnName(c.attr), parquet.Optional(parquet.Encoded(parquet.Leaf(parquet.DoubleType), &parquet.RLEDictionary)))
		case c.dict:
			add(ColumnName(c.attr), dictString)
		default:
			add(ColumnName(c.attr), parquet.Optional(parquet.String()))
		}
	}
	add(ColumnTraceID, parquet.Optional(parquet.String()))
	add(ColumnSpanID, parquet.Optional(parquet.String()))
	add(ColumnAttributes, parquet.Optional(parquet.JSON()))
	add(ColumnBody, parquet.Optional(parquet.JSON()))
	s := parquet.NewSchema("policy_record", orderedGroup{Group: fields, order: order})
	for i, path := range s.Columns() {
		if len(path) != 1 || path[0] != order[i] {
			panic("recordparquet: column " + strings.Join(path, ".") + " is not at index of " + order[i])
		}
	}
	return s
}()

// Schema is the Parquet schema of the files Encoder writes.
func Schema() *parquet.Schema { return schema }

// orderedGroup is a parquet.Group whose columns come in the order given rather than by name, so that a file
// reads as the documentation's table: times first, the JSON columns last.
type orderedGroup struct {
	parquet.Group
	order []string
}

func (g orderedGroup) Fields() []parquet.Field {
	fields := g.Group.Fields()
	slices.SortStableFunc(fields, func(a, b parquet.Field) int {
		return slices.Index(g.order, a.Name()) - slices.Index(g.order, b.Name())
	})
	return fields
}
