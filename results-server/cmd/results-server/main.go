// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Command results-server is the reference server of the results forwarding API: `serve` receives results from
// the results_grpc exporter over gRPC and keeps them in SQLite or PostgreSQL, `fleet` prints the fleet view.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: results-server <command> [flags]

commands:
  serve   serve the gRPC results API (and the fleet view over HTTP)
  fleet   print per-cluster and per-policy counts and the failing results

Run "results-server <command> -h" for a command's flags.
`

// usageError is a mistake on the command line: exit status 2, as flag's own errors.
type usageError struct{ error }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	var ue usageError
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, &ue):
		fmt.Fprintln(os.Stderr, "results-server:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "results-server:", err)
		os.Exit(1)
	}
}

// run runs the command args name; serve runs until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{errors.New("no command")}
	}
	switch args[0] {
	case "serve":
		o, err := parseServeFlags(args[1:], stderr)
		if err != nil {
			return err
		}
		logger, err := newLogger(stderr, o.logLevel)
		if err != nil {
			return usageError{err}
		}
		defer func() { _ = logger.Sync() }()
		return serve(ctx, o, logger)
	case "fleet":
		return fleet(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

// parseFlags parses a subcommand's flags, which take no positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	return nil
}
