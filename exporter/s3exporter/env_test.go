// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package s3exporter

import "os"

// The tests never reach AWS: no instance metadata service, no shared config of the machine, and credentials
// that only the tests' MinIO servers are given (the MinIO tests set their own).
func init() {
	for k, v := range map[string]string{
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_ACCESS_KEY_ID":           "test-access-key",
		"AWS_SECRET_ACCESS_KEY":       "test-secret-key",
	} {
		os.Setenv(k, v)
	}
	os.Unsetenv("AWS_PROFILE")
	os.Unsetenv("AWS_ROLE_ARN")
	os.Unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE")
}
