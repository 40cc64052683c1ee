// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package hack_test runs hack/test-servers.sh end to end with stand-ins for the programs it installs and builds
// with (testdata/standins: go, apt-get, dpkg-deb, sudo, systemctl, the PostgreSQL cluster tools), which record
// what they are asked and build nothing. The PATH holds those stand-ins and a few real shell tools only, so the
// script can call nothing else.
package hack_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realTools are the only programs besides the stand-ins that the script and the stand-ins may run.
var realTools = []string{"bash", "basename", "cat", "chmod", "cp", "dirname", "env", "mkdir", "mv", "rm", "sed", "tail"}

// versions pins every server's version, so that the expected calls below do not follow the script's defaults.
var versions = map[string]string{
	"ETCD_VERSION":         "v3.6.16",
	"KUBERNETES_VERSION":   "v1.36.3",
	"OPA_VERSION":          "v1.22.2",
	"MINIO_VERSION":        "v0.0.0-minio",
	"MC_VERSION":           "v0.0.0-mc",
	"GATEKEEPER_VERSION":   "v3.23.1",
	"HELM_VERSION":         "v3.22.0",
	"PROMETHEUS_VERSION":   "2.42",
	"VICTORIALOGS_VERSION": "v1.52.1",
}

// step is what one server's step must ask for and leave in the cache's bin directory.
type step struct {
	calls []string // lines the stand-ins record, with BIN for the cache's bin directory and CACHE for the cache
	files []string // under the cache's bin directory
}

var steps = map[string]step{
	"etcd": {
		calls: []string{"go mod tidy", "go build -o BIN/etcd-v3.6.16.tmp go.etcd.io/etcd/server/v3"},
		files: []string{"etcd-v3.6.16"},
	},
	"kube-apiserver": {
		calls: []string{
			"go mod download -json k8s.io/kubernetes@v1.36.3",
			"go get k8s.io/kubernetes/cmd/kube-apiserver@v1.36.3",
			"go build -o BIN/kube-apiserver-v1.36.3.tmp -ldflags -X k8s.io/component-base/version.gitVersion=v1.36.3 " +
				"    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36 " +
				"k8s.io/kubernetes/cmd/kube-apiserver",
		},
		files: []string{"kube-apiserver-v1.36.3"},
	},
	"opa": {
		calls: []string{"go install github.com/open-policy-agent/opa@v1.22.2"},
		files: []string{"opa-v1.22.2"},
	},
	"minio": {
		calls: []string{"go install github.com/minio/minio@v0.0.0-minio", "go install github.com/minio/mc@v0.0.0-mc"},
		files: []string{"minio-v0.0.0-minio", "mc-v0.0.0-mc"},
	},
	"postgres": {
		calls: []string{
			"apt-get install -y -q postgresql", "systemctl stop postgresql", "systemctl disable postgresql",
			"pg_ctlcluster 15 main stop",
		},
	},
	"gatekeeper": {
		calls: []string{
			"go mod download -json github.com/open-policy-agent/gatekeeper/v3@v3.23.1",
			"go install github.com/open-policy-agent/gatekeeper/v3@v3.23.1",
		},
		files: []string{"gatekeeper-v3.23.1", "../gatekeeper-v3.23.1/gatekeeper.yaml", "../gatekeeper-v3.23.1/crds/config.yaml"},
	},
	"helm": {
		calls: []string{"go install helm.sh/helm/v3/cmd/helm@v3.22.0"},
		files: []string{"helm-v3.22.0"},
	},
	"prometheus": {
		calls: []string{"apt-get download -q prometheus", "dpkg-deb -f CACHE/prometheus-deb/prometheus_2.42.0+ds-5+b3_amd64.deb Version"},
		files: []string{"prometheus-2.42", "promtool-2.42"},
	},
	"victorialogs": {
		calls: []string{"go install github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs@v1.52.1"},
		files: []string{"victoria-logs-v1.52.1"},
	},
	"chromium": {
		calls: []string{"apt-get install -y -q chromium"},
	},
}

// machine is a scratch machine: a HOME, the stand-ins' state and a PATH of stand-ins and real tools only.
type machine struct {
	t                    *testing.T
	home, path, standins string
	chromium, pgBin      string // where apt-get's stand-in installs them
	env                  []string
}

func newMachine(t *testing.T) *machine {
	m := &machine{t: t, home: t.TempDir(), path: t.TempDir(), standins: t.TempDir()}
	m.chromium = filepath.Join(m.standins, "root/usr/bin/chromium")
	m.pgBin = filepath.Join(m.standins, "root/usr/lib/postgresql/15/bin")
	own, err := filepath.Abs("testdata/standins")
	require.NoError(t, err)
	entries, err := os.ReadDir(own)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.Symlink(filepath.Join(own, e.Name()), filepath.Join(m.path, e.Name())))
	}
	for _, tool := range realTools {
		real, err := exec.LookPath(tool)
		require.NoError(t, err, "the test needs %s", tool)
		require.NoError(t, os.Symlink(real, filepath.Join(m.path, tool)))
	}
	m.env = []string{
		"PATH=" + m.path, "HOME=" + m.home, "LANG=C",
		"STANDIN_LOG=" + filepath.Join(m.standins, "calls.log"), "STANDIN_DIR=" + m.standins,
		"CHROMIUM_BIN=" + m.chromium, "PG_BIN_DIR=" + m.pgBin,
	}
	for k, v := range versions {
		m.env = append(m.env, k+"="+v)
	}
	return m
}

// run runs the script as script from dir with the extra environment; it returns the calls the stand-ins
// recorded during the run, stdout and stderr together, and the error.
func (m *machine) run(dir, script string, env []string, args ...string) (calls []string, output string, err error) {
	log := filepath.Join(m.standins, "calls.log")
	require.NoError(m.t, os.WriteFile(log, nil, 0o600))
	cmd := exec.Command(script, args...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clone(m.env), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	recorded, readErr := os.ReadFile(log)
	require.NoError(m.t, readErr)
	for line := range strings.Lines(string(recorded)) {
		calls = append(calls, strings.TrimSuffix(line, "\n"))
	}
	return calls, out.String(), err
}

// assertSteps asserts that each of servers' steps asked for what it should and left its files in cache.
func assertSteps(t *testing.T, cache string, calls []string, servers ...string) {
	t.Helper()
	bin := filepath.Join(cache, "bin")
	for _, s := range servers {
		for _, want := range steps[s].calls {
			want = strings.ReplaceAll(strings.ReplaceAll(want, "BIN", bin), "CACHE", cache)
			assert.Contains(t, calls, want, "%s's step", s)
		}
		for _, f := range steps[s].files {
			info, err := os.Stat(filepath.Join(bin, f))
			if assert.NoError(t, err, "%s's step", s) && !strings.HasPrefix(f, "..") {
				assert.NotZero(t, info.Mode()&0o100, "%s is not executable", f)
			}
		}
	}
}

func allServers() []string {
	var all []string
	for s := range steps {
		all = append(all, s)
	}
	return all
}

func scriptDir(t *testing.T) string {
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	return dir
}

// TestTestServersFromAnyDirectory runs the script with nothing cached, then again with everything cached, from
// the repository root, from hack/ and from an unrelated directory with a relative CACHE_DIR, as root and through
// sudo. The first run of each asks for every server's step (the kube-apiserver step changes its directory, and
// the apt steps after it must still find hack/apt-install.sh); the second asks for nothing and prints nothing.
func TestTestServersFromAnyDirectory(t *testing.T) {
	hack := scriptDir(t)
	for _, tc := range []struct {
		name          string
		dir, script   string
		cacheRelative bool
		env           []string
	}{
		{name: "repository root", dir: filepath.Dir(hack), script: "hack/test-servers.sh"},
		{name: "hack", dir: hack, script: "./test-servers.sh", env: []string{"STANDIN_UID=1000"}},
		{name: "elsewhere", script: filepath.Join(hack, "test-servers.sh"), cacheRelative: true,
			env: []string{"STANDIN_APT_STALE=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMachine(t)
			if tc.dir == "" {
				tc.dir = t.TempDir()
			}
			cache := filepath.Join(t.TempDir(), "cache")
			cacheEnv := cache
			if tc.cacheRelative {
				cache = filepath.Join(tc.dir, "cache")
				cacheEnv = "cache"
			}
			env := append([]string{"CACHE_DIR=" + cacheEnv}, tc.env...)

			calls, out, err := m.run(tc.dir, tc.script, env)
			require.NoError(t, err, "nothing cached:\n%s", out)
			assertSteps(t, cache, calls, allServers()...)
			assert.FileExists(t, m.chromium)
			assert.FileExists(t, filepath.Join(m.pgBin, "postgres"))
			for _, s := range allServers() {
				assert.Contains(t, out, "test-servers: ", "%s", s)
			}
			if slices.Contains(tc.env, "STANDIN_UID=1000") {
				assert.Contains(t, calls, "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium")
			} else {
				assert.NotContains(t, strings.Join(calls, "\n"), "sudo ")
			}
			if slices.Contains(tc.env, "STANDIN_APT_STALE=1") {
				assert.Contains(t, calls, "apt-get update -q", "apt-install.sh updates the lists after a failed install")
			}

			calls, out, err = m.run(tc.dir, tc.script, env)
			require.NoError(t, err, "everything cached:\n%s", out)
			assert.Empty(t, calls, "everything cached")
			assert.Empty(t, out, "everything cached")
		})
	}
}

// TestTestServersKubeAPIServerThenApt is the first run that failed on a new machine: kube-apiserver built (its
// step changes directory), then Chromium and PostgreSQL installed through hack/apt-install.sh.
func TestTestServersKubeAPIServerThenApt(t *testing.T) {
	m := newMachine(t)
	cache := t.TempDir()
	calls, out, err := m.run(filepath.Dir(scriptDir(t)), "hack/test-servers.sh", []string{"CACHE_DIR=" + cache},
		"kube-apiserver", "chromium", "postgres")
	require.NoError(t, err, out)
	assertSteps(t, cache, calls, "kube-apiserver", "chromium", "postgres")
	// The build module replaces each staging module of kubernetes' go.mod with its published release.
	mod, err := os.ReadFile(filepath.Join(cache, "kube-apiserver-build-v1.36.3/go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(mod), "\tk8s.io/api => k8s.io/api v0.36.3\n")
	assert.Contains(t, string(mod), "\tk8s.io/apiserver => k8s.io/apiserver v0.36.3\n")
}

// TestTestServersFailures: a failed build, in the foreground or in the background, fails the script with the
// name of what failed and the end of its build log, and the foreground steps after it do not run.
func TestTestServersFailures(t *testing.T) {
	for _, tc := range []struct {
		name, fail, want string
		args             []string
		notAsked         string
	}{
		{name: "foreground", fail: "go build -o", args: []string{"kube-apiserver", "chromium"},
			want: "kube-apiserver build failed", notAsked: "apt-get install -y -q chromium"},
		// The foreground step after the background one runs; the script waits for both.
		{name: "background", fail: "go install github.com/open-policy-agent/gatekeeper", args: []string{"gatekeeper", "opa"}, want: "gatekeeper build failed"},
		{name: "background victorialogs", fail: "go install github.com/VictoriaMetrics", args: []string{"victorialogs", "opa"}, want: "victoria-logs build failed"},
		{name: "apt", fail: "apt-get install -y -q chromium", args: []string{"chromium", "postgres"},
			notAsked: "apt-get install -y -q postgresql"},
		{name: "unknown server", args: []string{"nginx"}, want: "unknown server nginx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMachine(t)
			args := tc.args
			calls, out, err := m.run(t.TempDir(), filepath.Join(scriptDir(t), "test-servers.sh"),
				[]string{"CACHE_DIR=" + t.TempDir(), "STANDIN_FAIL=" + tc.fail}, args...)
			require.Error(t, err, out)
			if tc.want != "" {
				assert.Contains(t, out, tc.want)
			}
			if tc.fail != "" {
				assert.Contains(t, out, "fails as asked", "the end of the failed step's output")
			}
			if tc.notAsked != "" {
				assert.NotContains(t, calls, tc.notAsked)
			}
		})
	}
}
