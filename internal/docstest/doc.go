// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package docstest holds the tests that keep the repository's Markdown from drifting away from what it
// documents: every measured figure the READMEs and docs/ state is one testbed/results/RESULTS.md holds, and every
// link into RESULTS.md names one of its sections.
package docstest
