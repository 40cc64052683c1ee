// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

// Package jsonscan validates and reads JSON events without decoding them into Go values.
//
// Decision events are read with this small scanner rather than encoding/json: decoding a 1.6 KB OPA event into
// a struct with encoding/json takes about 21 µs, more than the 20 µs per decision and core that 100,000
// decisions/s on two cores allow, and most of it goes into the input, which a decoder only has to cut out. An
// event is validated once, accepting exactly what json.Valid accepts (the fuzz tests hold it to that); the scan
// lists where the top-level members are and what each costs once built (Size), and the decoders then read only
// the few values a decision needs, with a Cursor that trusts the scan and skips instead of checking.
//
// The token functions (ScanString, ScanNumber, ScanKey, …) are also what jsonpdata parses with, so that one
// scanner decides what is valid JSON and one decoder turns JSON strings into Go strings.
package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
