// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sclient

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	assert.NoError(t, APIConfig{AuthType: AuthTypeKubeConfig, Context: "x"}.Validate())
	assert.ErrorContains(t, APIConfig{AuthType: "token"}.Validate(), `auth_type must be one of serviceAccount, kubeConfig, none; got "token"`)
	assert.ErrorContains(t, APIConfig{AuthType: AuthTypeServiceAccount, Context: "x"}.Validate(), "context applies to auth_type kubeConfig only")
}

func TestKubeConfigHonoursKUBECONFIGAndContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://a.example:6443"}}
- {name: b, cluster: {server: "https://b.example:6443"}}
users:
- {name: u, user: {token: secret}}
contexts:
- {name: ctx-a, context: {cluster: a, user: u}}
- {name: ctx-b, context: {cluster: b, user: u}}
current-context: ctx-a
`), 0o600))
	t.Setenv("KUBECONFIG", path)
	cfg, err := APIConfig{AuthType: AuthTypeKubeConfig}.RestConfig("test")
	require.NoError(t, err)
	assert.Equal(t, "https://a.example:6443", cfg.Host)
	assert.Equal(t, "test", cfg.UserAgent)
	cfg, err = APIConfig{AuthType: AuthTypeKubeConfig, Context: "ctx-b"}.RestConfig("test")
	require.NoError(t, err)
	assert.Equal(t, "https://b.example:6443", cfg.Host)

	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	_, err = APIConfig{AuthType: AuthTypeKubeConfig}.RestConfig("test")
	assert.ErrorContains(t, err, "kubernetes client configuration (auth_type kubeConfig)")
}

func TestServiceAccountOutsideACluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := APIConfig{AuthType: AuthTypeServiceAccount}.RestConfig("test")
	assert.ErrorContains(t, err, "auth_type serviceAccount")
}
