// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/otelcol-policy/otelcol-policy/results-server/server"
	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

func fleet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		f      store.Filter
		dbf    dbFlags
		output string
	)
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbf.register(fs, "database, as for serve")
	fs.StringVar(&f.Cluster, "cluster", "", "only this cluster")
	fs.StringVar(&f.Namespace, "namespace", "", "only results about resources in this namespace")
	fs.StringVar(&f.Policy, "policy", "", "only this policy")
	fs.StringVar(&f.Severity, "severity", "", "only this severity: critical, high, medium, low or info")
	fs.StringVar(&f.Source, "source", "", "only this source (kyverno, trivy, ...)")
	fs.StringVar(&f.Rule, "rule", "", "only this rule")
	fs.BoolVar(&f.ClusterWide, "cluster-wide", false, "only results about resources outside namespaces")
	fs.StringVar(&f.Kind, "kind", "", "only results about resources of this kind (Pod, Deployment, ...)")
	fs.StringVar(&f.Vulnerability, "vulnerability", "", "only this vulnerability id (CVE-2024-3094, ...)")
	fs.Func("min-score", "only vulnerabilities with a base score of at least this (0 to 10)", func(v string) error {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errors.New("want a number from 0 to 10")
		}
		f.MinScore = &n
		return nil
	})
	fs.BoolVar(&f.Fixable, "fixable", false, "only vulnerabilities with a fixed version")
	fs.StringVar(&f.Text, "text", "", "only results whose message, resource name, policy, rule, vulnerability or package contains this (any case)")
	fs.IntVar(&f.Limit, "limit", 0, "list at most this many failing results (0: all)")
	fs.StringVar(&output, "output", "text", "text or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if output != "text" && output != "json" {
		return usageError{fmt.Errorf("fleet: --output %q: want text or json", output)}
	}
	db, _, err := dbf.dsn(fs, os.Getenv)
	if err != nil {
		return usageError{fmt.Errorf("fleet: %w", err)}
	}
	if err := f.Validate(); err != nil {
		return usageError{fmt.Errorf("fleet: %w", err)}
	}
	// Open would create an empty database: a mistyped path must be an error, not an empty fleet.
	if path, ok := strings.CutPrefix(db, "sqlite://"); ok {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no database at %s: %w", path, errors.Unwrap(err))
		}
	}
	srv, err := server.Open(ctx, server.Config{DB: db})
	if err != nil {
		return err
	}
	defer srv.Close()
	v, err := srv.Fleet(ctx, f)
	if err != nil {
		return err
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return printFleet(stdout, v)
}

func printFleet(w io.Writer, v store.FleetView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	counts := func(c store.Counts) string {
		return strings.Join([]string{itoa(c.Pass), itoa(c.Fail), itoa(c.Warn), itoa(c.Error), itoa(c.Skip), itoa(c.Total)}, "\t")
	}
	fmt.Fprintln(tw, "CLUSTER\tPASS\tFAIL\tWARN\tERROR\tSKIP\tTOTAL")
	for _, c := range v.Clusters {
		fmt.Fprintf(tw, "%s\t%s\n", c.Cluster, counts(c.Counts))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "CLUSTER\tSOURCE\tPOLICY\tPASS\tFAIL\tWARN\tERROR\tSKIP\tTOTAL")
	for _, p := range v.Policies {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Cluster, p.Source, p.Policy, counts(p.Counts))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	title := fmt.Sprintf("\nFAILING (%d)\n", len(v.Failing))
	if v.Truncated {
		title = fmt.Sprintf("\nFAILING (first %d; raise --limit for more)\n", len(v.Failing))
	}
	fmt.Fprint(w, title)
	if len(v.Failing) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tNAMESPACE\tRESOURCE\tSOURCE\tPOLICY\tRULE\tSEVERITY\tOUTCOME\tMESSAGE")
	for _, r := range v.Failing {
		resource := "-"
		if r.Resource.Kind != "" || r.Resource.Name != "" {
			resource = r.Resource.Kind + "/" + r.Resource.Name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Cluster, dash(r.Resource.Namespace), resource,
			r.Source, r.Policy, dash(r.Rule), dash(r.Severity), r.Outcome, dash(oneLine(r.Message)))
	}
	return tw.Flush()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a multi-line message from breaking the table.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
