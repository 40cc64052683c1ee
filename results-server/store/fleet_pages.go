// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// failingCond is the failing outcomes' condition, written once: the partial index results_failing_recent
// (schema version 4) is used only by queries whose WHERE clause holds exactly this term.
const failingCond = "outcome IN ('fail', 'error')"

// MaxCounted bounds the count of a failing list: counting every match of a filter that selects a few percent
// of millions of rows reads most of them, which would cost more than the page itself; beyond it the page says
// "more than".
const MaxCounted = 1000

// Cursor is a place in the failing list, which is ordered by the time the server last changed a result,
// newest first, then by key: paging by cursor (keyset paging) reads one page of the index however deep the
// page, where an offset would read every row before it.
type Cursor struct {
	UpdatedUnixNano int64
	Key             string
}

// String is the cursor as a query parameter value.
func (c Cursor) String() string { return fmt.Sprintf("%d.%s", c.UpdatedUnixNano, c.Key) }

// ParseCursor reads a Cursor.String.
func ParseCursor(s string) (Cursor, error) {
	t, key, ok := strings.Cut(s, ".")
	updated, err := strconv.ParseInt(t, 10, 64)
	if !ok || err != nil || key == "" || len(key) > 128 {
		return Cursor{}, fmt.Errorf("cursor %q: want UPDATED.KEY, as the next-page link gives", s)
	}
	return Cursor{UpdatedUnixNano: updated, Key: key}, nil
}

// FailingPage is one page of the failing list.
type FailingPage struct {
	Results []FailingResult
	// Count is how many results the filter selects, at most MaxCounted; CountCapped says there are more.
	Count       int64
	CountCapped bool
	// Next is the cursor of the next page; nil on the last one.
	Next *Cursor
}

// maxPageListBytes bounds the text of a page of the failing list, as MaxListBytes bounds the JSON API's: a page
// with longer messages holds fewer results, and links to the next.
const maxPageListBytes = 1 << 20

// FailingPage is a page of size failing results after the cursor after (nil: the first page), most recently
// changed first.
func (s *Store) FailingPage(ctx context.Context, f Filter, after *Cursor, size int) (FailingPage, error) {
	where, args := f.where(s.d)
	where += " AND " + failingCond
	pageWhere, pageArgs := where, args
	if after != nil {
		n := len(args)
		pageWhere += fmt.Sprintf(" AND (updated_unix_nano < $%d OR (updated_unix_nano = $%d AND key < $%d))", n+1, n+1, n+2)
		pageArgs = append(slices.Clone(args), after.UpdatedUnixNano, after.Key)
	}
	q := `SELECT ` + currentColumns + ` FROM results` + pageWhere +
		fmt.Sprintf(` ORDER BY updated_unix_nano DESC, key DESC LIMIT %d`, size+1)
	results, cut, err := s.queryCurrent(ctx, maxPageListBytes, q, pageArgs...)
	if err != nil {
		return FailingPage{}, err
	}
	page := FailingPage{Results: results}
	if len(results) > size {
		page.Results, cut = results[:size], true
	}
	if cut {
		last := page.Results[len(page.Results)-1]
		page.Next = &Cursor{UpdatedUnixNano: last.UpdatedAt.UnixNano(), Key: last.Key}
	}
	if after == nil && page.Next == nil {
		// The first page holds every match: they are counted already, and a rare match is not searched twice.
		page.Count = int64(len(page.Results))
		return page, nil
	}
	if err := s.read.QueryRowContext(ctx, fmt.Sprintf(`SELECT COUNT(*) FROM (SELECT 1 FROM results%s LIMIT %d) AS matched`,
		where, MaxCounted+1), args...).Scan(&page.Count); err != nil {
		return FailingPage{}, err
	}
	if page.Count > MaxCounted {
		page.Count, page.CountCapped = MaxCounted, true
	}
	return page, nil
}

// ResultDetail is one result's page: its current row, what the source sent, and its history.
type ResultDetail struct {
	FailingResult
	// ExtraMetadata is what the forwarding collector applied to the request of the current outcome.
	ExtraMetadata map[string]string
	BodyJSON      string
	Resolved      bool
	FirstSeen     time.Time
	History       []HistoryEntry
	// HistoryCapped says that older history entries than those shown exist.
	HistoryCapped bool
}

// HistoryEntry is one outcome a result went through.
type HistoryEntry struct {
	ID, State, Outcome, Severity, Message string
	// Observed is when the collector saw the outcome (else when the engine produced it, else when this server
	// received it): the time that orders a result's outcomes.
	Observed time.Time
	Received time.Time
}

// MaxHistoryShown bounds a result page's history: a result that flapped for years must not make its page huge.
// MaxHistoryMessage bounds each history entry's message, in characters (the current one is shown whole).
const (
	MaxHistoryShown   = 200
	MaxHistoryMessage = 1000
)

// Result is one result with its extra_metadata, body and latest outcomes; ErrNoResult when key is unknown.
func (s *Store) Result(ctx context.Context, key string) (ResultDetail, error) {
	current, _, err := s.queryCurrent(ctx, 0, `SELECT `+currentColumns+` FROM results WHERE key = $1`, key)
	if err != nil {
		return ResultDetail{}, err
	}
	if len(current) == 0 {
		return ResultDetail{}, ErrNoResult
	}
	d := ResultDetail{FailingResult: current[0]}
	var resolved int64
	var firstSeen int64
	var meta sql.NullString
	if err := s.read.QueryRowContext(ctx, `SELECT r.body_json, r.resolved, r.first_seen_unix_nano, m.json FROM results r
		LEFT JOIN metadata m ON m.id = r.metadata_id WHERE r.key = $1`, key).
		Scan(&d.BodyJSON, &resolved, &firstSeen, &meta); err != nil {
		return ResultDetail{}, err
	}
	if err := json.Unmarshal([]byte(cmp.Or(meta.String, "{}")), &d.ExtraMetadata); err != nil {
		return ResultDetail{}, fmt.Errorf("extra_metadata of %s: %w", key, err)
	}
	d.Resolved, d.FirstSeen = resolved != 0, time.Unix(0, firstSeen).UTC()
	rows, err := s.read.QueryContext(ctx, fmt.Sprintf(`SELECT id, state, outcome, severity, SUBSTR(message, 1, %d),
		order_unix_nano, received_unix_nano FROM result_history WHERE key = $1
		ORDER BY order_unix_nano DESC, received_unix_nano DESC LIMIT %d`, MaxHistoryMessage, MaxHistoryShown+1), key)
	if err != nil {
		return ResultDetail{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var h HistoryEntry
		var observed, received int64
		if err := rows.Scan(&h.ID, &h.State, &h.Outcome, &h.Severity, &h.Message, &observed, &received); err != nil {
			return ResultDetail{}, err
		}
		h.Observed, h.Received = time.Unix(0, observed).UTC(), time.Unix(0, received).UTC()
		d.History = append(d.History, h)
	}
	if len(d.History) > MaxHistoryShown {
		d.History, d.HistoryCapped = d.History[:MaxHistoryShown], true
	}
	return d, rows.Err()
}

// TrendSeries is one cluster's failing count at the end of each day of a trend.
type TrendSeries struct {
	Cluster string
	// Failing has one count per day of the trend, oldest first.
	Failing []int64
}

const nanosPerDay = int64(24 * time.Hour)

// Trend counts, for each of clusters and each of days days ending today (UTC), the results failing at the end
// of the day, from result_history: each history row changes its key's failing state (outcome fail or error, and
// not resolved) from what the key's previous row said, so summing those changes up to a day's end counts the
// keys failing then. The database computes the changes (a window over each key's rows in outcome order), so
// only a few numbers per cluster and day leave it. Rows before the first day are summed into the first day's
// starting point. A key whose older rows were pruned by retention starts from its oldest remaining row, as if
// it had appeared then.
func (s *Store) Trend(ctx context.Context, clusters []string, days int, now time.Time) ([]TrendSeries, []time.Time, error) {
	today := now.UTC().Truncate(24 * time.Hour)
	start := today.AddDate(0, 0, -(days - 1))
	dates := make([]time.Time, days)
	for i := range dates {
		dates[i] = start.AddDate(0, 0, i)
	}
	if len(clusters) == 0 {
		return nil, dates, nil
	}
	args := []any{start.UnixNano(), nanosPerDay}
	var in []string
	for _, c := range clusters {
		args = append(args, c)
		in = append(in, fmt.Sprintf("$%d", len(args)))
	}
	filter := " WHERE cluster IN (" + strings.Join(in, ", ") + ")"
	//nolint:gosec // G202: filter is a fixed condition with numbered placeholders
	q := `SELECT cluster, day, SUM(delta) FROM (
		SELECT cluster,
			CASE WHEN order_unix_nano < $1 THEN -1 ELSE (order_unix_nano - $1) / $2 END AS day,
			failing - COALESCE(LAG(failing) OVER (PARTITION BY key ORDER BY order_unix_nano, received_unix_nano), 0) AS delta
		FROM (SELECT key, cluster, order_unix_nano, received_unix_nano,
				CASE WHEN ` + failingCond + ` AND state <> 'resolved' THEN 1 ELSE 0 END AS failing
			FROM result_history` + filter + `) AS h
	) AS d GROUP BY cluster, day`
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	type change struct {
		day   int64
		delta int64
	}
	changes := map[string][]change{}
	for rows.Next() {
		var c string
		var day int64
		var delta sql.NullInt64
		if err := rows.Scan(&c, &day, &delta); err != nil {
			return nil, nil, err
		}
		changes[c] = append(changes[c], change{day, delta.Int64})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	out := make([]TrendSeries, 0, len(changes))
	for c, ch := range changes {
		perDay := make([]int64, days)
		var before int64
		for _, x := range ch {
			switch {
			case x.day < 0:
				before += x.delta
			case x.day < int64(days):
				perDay[x.day] += x.delta
			}
			// Rows after today (a collector's clock ahead of this server's) count from tomorrow: not shown.
		}
		running := before
		for i := range perDay {
			running += perDay[i]
			perDay[i] = running
		}
		out = append(out, TrendSeries{Cluster: c, Failing: perDay})
	}
	slices.SortFunc(out, func(a, b TrendSeries) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out, dates, nil
}
