package resultsserver

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

// row is a checked result as the tables hold it.
type row struct {
	key, id, cluster, source, policy, rule, category, severity, outcome string
	scored                                                              *bool
	message                                                             string
	resource                                                            policyresult.Resource
	report                                                              policyresult.Report
	state                                                               string
	timestamp, observed                                                 *int64
	order                                                               int64
	extraMetadata, bodyJSON                                             string
}

// rowColumns are the columns both tables have, in the order of row.args.
var rowColumns = []string{
	"key", "id", "cluster", "source", "policy", "rule", "category", "severity", "outcome", "scored", "message",
	"resource_api_version", "resource_kind", "resource_namespace", "resource_name", "resource_uid",
	"report_kind", "report_namespace", "report_name", "state",
	"timestamp_unix_nano", "observed_unix_nano", "order_unix_nano", "extra_metadata", "body_json",
}

func (r *row) args() []any {
	var scored any
	if r.scored != nil {
		scored = boolInt(*r.scored)
	}
	return []any{
		r.key, r.id, r.cluster, r.source, r.policy, r.rule, r.category, r.severity, r.outcome, scored, r.message,
		r.resource.APIVersion, r.resource.Kind, r.resource.Namespace, r.resource.Name, r.resource.UID,
		r.report.Kind, r.report.Namespace, r.report.Name, r.state,
		nullable(r.timestamp), nullable(r.observed), r.order, r.extraMetadata, r.bodyJSON,
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func nullable(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

var (
	// upsertSQL replaces the current row of a key only with an outcome at least as recent (by order_unix_nano,
	// see toRow), so that a retried older request never undoes a newer one; and only with a different id or
	// state, so that forwarding the same result again leaves the row, its times included, exactly as it was.
	// A resolved state marks the row resolved; any later other state clears the mark.
	upsertSQL = func() string {
		cols := append(slices.Clone(rowColumns), "resolved", "first_seen_unix_nano", "updated_unix_nano")
		var set []string
		for _, c := range cols {
			if c != "key" && c != "first_seen_unix_nano" {
				set = append(set, c+" = excluded."+c)
			}
		}
		return "INSERT INTO results (" + strings.Join(cols, ", ") + ") VALUES (" + placeholders(len(cols)) + ")" +
			" ON CONFLICT (key) DO UPDATE SET " + strings.Join(set, ", ") +
			" WHERE excluded.order_unix_nano >= results.order_unix_nano" +
			" AND (excluded.id <> results.id OR excluded.state <> results.state)"
	}()
	// historySQL records each (id, state) once: the first delivery wins and repeats are no-ops.
	historySQL = func() string {
		cols := append(slices.Clone(rowColumns), "received_unix_nano")
		return "INSERT INTO result_history (" + strings.Join(cols, ", ") + ") VALUES (" + placeholders(len(cols)) + ")" +
			" ON CONFLICT (id, state) DO NOTHING"
	}()
)

func placeholders(n int) string {
	p := make([]string, n)
	for i := range p {
		p[i] = fmt.Sprintf("$%d", i+1)
	}
	return strings.Join(p, ", ")
}

type store struct {
	db *sql.DB
	d  dialect
}

func openStore(ctx context.Context, dsn string) (*store, error) {
	db, d, err := openDB(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, db, d); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrating the schema: %w", err)
	}
	return &store{db: db, d: d}, nil
}

func (s *store) close() error { return s.db.Close() }

// put stores rows in one transaction. Rows are written in key order (stable, so that outcomes of one key keep
// the request's order): concurrent PostgreSQL transactions then lock shared keys in the same order and cannot
// deadlock each other.
func (s *store) put(ctx context.Context, rows []row, now time.Time) error {
	slices.SortStableFunc(rows, func(a, b row) int { return strings.Compare(a.key, b.key) })
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	upsert, err := tx.PrepareContext(ctx, upsertSQL)
	if err != nil {
		return err
	}
	defer upsert.Close()
	history, err := tx.PrepareContext(ctx, historySQL)
	if err != nil {
		return err
	}
	defer history.Close()
	at := now.UnixNano()
	for i := range rows {
		args := rows[i].args()
		resolved := boolInt(rows[i].state == string(policyresult.StateResolved))
		if _, err := upsert.ExecContext(ctx, append(args, resolved, at, at)...); err != nil {
			return fmt.Errorf("storing result %s: %w", rows[i].key, err)
		}
		if _, err := history.ExecContext(ctx, append(args[:len(args):len(args)], at)...); err != nil {
			return fmt.Errorf("recording result %s: %w", rows[i].id, err)
		}
	}
	return tx.Commit()
}
