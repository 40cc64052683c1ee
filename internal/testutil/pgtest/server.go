// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package pgtest runs a real PostgreSQL server for integration tests: Debian's postgresql package (installed by
// hack/test-servers.sh), initialised in a temporary directory and listening on a free loopback port, so that
// tests exercise PostgreSQL's real SQL, locking and errors.
//
// It talks to the server with the server's own client programs (pg_isready, createdb, psql), not a Go driver:
// the harness belongs to the collector module, whose requirements stay those of the components.
package pgtest // import "github.com/otelcol-policy/otelcol-policy/internal/testutil/pgtest"

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelcol-policy/otelcol-policy/internal/testutil/freeport"
	"github.com/otelcol-policy/otelcol-policy/internal/testutil/testproc"
)

// User is the superuser of the test server; it needs no password.
const User = "pgtest"

// Server is a running PostgreSQL server.
type Server struct {
	// Port is the loopback TCP port the server listens on.
	Port int

	t    testing.TB
	dir  string
	bin  string
	proc *testproc.Proc
}

// BinDir finds the directory of the server's programs (initdb, postgres, pg_isready, createdb, psql): $PG_BIN_DIR, else the newest
// /usr/lib/postgresql/<version>/bin, or an error saying how to install them.
func BinDir() (string, error) {
	if d := os.Getenv("PG_BIN_DIR"); d != "" {
		return d, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(found) == 0 {
		return "", fmt.Errorf("PostgreSQL not found in /usr/lib/postgresql/*/bin: run `make test-servers` (or hack/test-servers.sh postgres) to install it")
	}
	version := func(p string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
		return v
	}
	slices.SortFunc(found, func(a, b string) int { return version(a) - version(b) })
	return filepath.Dir(found[len(found)-1]), nil
}

// Start initialises and starts a PostgreSQL server for t, stopped and removed when t ends. Under -short it
// skips t; without PostgreSQL it fails t.
func Start(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a PostgreSQL server; skipped under -short")
	}
	bin, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	cred, err := credential()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parent is private to root, and the server may run as the postgres user, which must
	// reach the directories.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &Server{Port: ports[0], t: t, dir: dir, bin: bin}
	if err := s.prepareDirs(cred); err != nil {
		t.Fatal(err)
	}
	if out, err := s.command(cred, filepath.Join(bin, "initdb"), "-D", s.dataDir(), "-U", User, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	t.Cleanup(s.stop)
	s.start(cred, filepath.Join(bin, "postgres"))
	return s
}

// credential is the postgres system user's when running as root, which PostgreSQL refuses to run as.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL refuses to run as root and there is no postgres user (%w): run `make test-servers` (or hack/test-servers.sh postgres)", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func (s *Server) dataDir() string   { return filepath.Join(s.dir, "data") }
func (s *Server) socketDir() string { return filepath.Join(s.dir, "socket") }
func (s *Server) logFile() string   { return filepath.Join(s.dir, "postgres.log") }

// prepareDirs creates the data directory (0700, as PostgreSQL demands) and the socket directory, owned by the
// user the server runs as.
func (s *Server) prepareDirs(cred *syscall.Credential) error {
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return err
	}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{s.dataDir(), 0o700}, {s.socketDir(), 0o755}} {
		if err := os.Mkdir(d.path, d.mode); err != nil {
			return err
		}
		if cred != nil {
			if err := os.Chown(d.path, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Server) command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	// The server dies with the test process, whatever way it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func (s *Server) start(cred *syscall.Credential, postgres string) {
	s.t.Helper()
	// -F: no fsync, a test server's data need not survive a power loss.
	p, err := testproc.Start("postgres", testproc.Options{LogFile: s.logFile(), Dir: s.dir, Credential: cred},
		postgres, "-D", s.dataDir(), "-k", s.socketDir(), "-p", strconv.Itoa(s.Port), "-h", "127.0.0.1", "-F")
	if err != nil {
		s.t.Fatal(err)
	}
	s.proc = p
	if err := s.waitReady(60 * time.Second); err != nil {
		s.stop()
		s.t.Fatal(err)
	}
}

func (s *Server) waitReady(timeout time.Duration) error {
	return s.proc.WaitReady(timeout, func() error {
		_, err := s.client("pg_isready", "-d", "postgres", "-t", "2")
		return err
	})
}

// client runs one of the server's client programs against it, as User, and returns its output.
func (s *Server) client(program string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args = append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", User}, args...)
	out, err := exec.CommandContext(ctx, filepath.Join(s.bin, program), args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s: %w: %s", program, err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// stop shuts the server down fast (SIGINT: roll back open transactions, disconnect clients).
func (s *Server) stop() {
	if s.proc == nil {
		return
	}
	s.proc.Stop(syscall.SIGINT, 15*time.Second)
	s.proc = nil
}

// DSN is the connection string of database db on the server, as User.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, s.Port, db)
}

// CreateDB creates an empty database and returns its DSN. It fails the test when it cannot.
func (s *Server) CreateDB(name string) string {
	s.t.Helper()
	if _, err := s.client("createdb", "--", name); err != nil {
		s.t.Fatalf("creating database %s: %v", name, err)
	}
	return s.DSN(name)
}

// SQL runs statements in database db with psql and returns what they print, unaligned, one row a line with
// the columns separated by |. It fails the test on the first error.
func (s *Server) SQL(db, statements string) string {
	s.t.Helper()
	out, err := s.client("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", statements)
	if err != nil {
		s.t.Fatalf("psql on %s: %v", db, err)
	}
	return strings.TrimSpace(string(out))
}
