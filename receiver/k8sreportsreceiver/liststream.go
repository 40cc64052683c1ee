// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package k8sreportsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/k8sreportsreceiver"

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxObjectBytes bounds one object of a list or a watch as it is read. etcd refuses values over 1.5 MiB unless
// told otherwise and the API server refuses request bodies over 3 MiB, so no stored report comes near it; it
// keeps a broken or hostile server from making the receiver buffer an endless value.
const maxObjectBytes = 16 << 20

// listChunkBytes and listChunks bound what the page reader decodes ahead of the parsers: chunks of objects of
// at most listChunkBytes (or one larger object), at most listChunks of them waiting. Reading ahead is what lets
// the API server produce the next page while the receiver parses this one.
const (
	listChunkBytes = 256 << 10
	listChunks     = 4
)

// listChunk is a run of objects of one list, or its end: the list's resource version, or the error that ended
// it. restart says that the continue token expired and the list starts over from its first page.
type listChunk struct {
	items   []json.RawMessage
	restart bool
	done    bool
	rv      string
	err     error
}

// readList pages through the list of the watcher's resource and sends its objects in chunks as they are
// decoded from the response, so that neither a whole page nor a whole list is ever held; the next page is
// requested as soon as the last one was read, while its objects are still being parsed. It ends with a chunk
// that is done or has an error, unless ctx ends first.
func (w *watcher) readList(ctx context.Context, out chan<- listChunk) {
	send := func(c listChunk) bool {
		select {
		case out <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	cont := ""
	for {
		next, rv, err := w.readPage(ctx, cont, send)
		switch {
		case err != nil && cont != "" && apierrors.IsResourceExpired(err):
			// The continue token expired during a long list: start over.
			if !send(listChunk{restart: true}) {
				return
			}
			cont = ""
			continue
		case err != nil:
			send(listChunk{err: err})
			return
		case next == "":
			send(listChunk{done: true, rv: rv})
			return
		}
		cont = next
	}
}

// readPage reads one page of the list, sending its objects, and returns its continue token and resource version.
func (w *watcher) readPage(ctx context.Context, cont string, send func(listChunk) bool) (next, rv string, err error) {
	req := w.client.Get().AbsPath(w.path()).Param("limit", strconv.FormatInt(w.cfg.PageSize, 10))
	if w.cfg.LabelSelector != "" {
		req = req.Param("labelSelector", w.cfg.LabelSelector)
	}
	if cont != "" {
		req = req.Param("continue", cont)
	}
	stream, err := req.Stream(ctx)
	if err != nil {
		return "", "", err
	}
	defer stream.Close()
	in := newObjectReader(stream)
	dec := json.NewDecoder(in)
	fail := func(err error) (string, string, error) {
		return "", "", fmt.Errorf("reading the list of %s: %w", w.gvr.Resource, err)
	}
	if err := expectDelim(dec, '{'); err != nil {
		return fail(err)
	}
	var meta metav1.ListMeta
	var chunk listChunk
	chunkBytes := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		key, _ := tok.(string)
		switch {
		case strings.EqualFold(key, "items"):
			if err := expectDelim(dec, '['); err != nil {
				return fail(err)
			}
			for n := 0; dec.More(); n++ {
				in.startObject(dec.InputOffset())
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return fail(fmt.Errorf("items[%d]: %w", n, err))
				}
				chunk.items = append(chunk.items, raw)
				if chunkBytes += len(raw); chunkBytes >= listChunkBytes {
					if !send(chunk) {
						return "", "", ctx.Err()
					}
					chunk, chunkBytes = listChunk{}, 0
				}
			}
			if err := expectDelim(dec, ']'); err != nil {
				return fail(err)
			}
		case strings.EqualFold(key, "metadata"):
			in.startObject(dec.InputOffset())
			if err := dec.Decode(&meta); err != nil {
				return fail(fmt.Errorf("metadata: %w", err))
			}
		default:
			in.startObject(dec.InputOffset())
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fail(fmt.Errorf("%s: %w", key, err))
			}
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return fail(err)
	}
	if len(chunk.items) > 0 && !send(chunk) {
		return "", "", ctx.Err()
	}
	return meta.Continue, meta.ResourceVersion, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("expected %q, found %v", want, tok)
	}
	return nil
}

// errObjectTooLarge is an object of a list or watch longer than maxObjectBytes.
var errObjectTooLarge = fmt.Errorf("an object is longer than %d bytes", maxObjectBytes)

// objectReader reads a response for a json.Decoder and fails once the value being decoded exceeds
// maxObjectBytes: the decoder buffers a whole value before it returns it.
type objectReader struct {
	r     io.Reader
	read  int64
	start int64
}

func newObjectReader(r io.Reader) *objectReader { return &objectReader{r: r} }

// startObject marks where the next value starts, as the decoder's InputOffset.
func (o *objectReader) startObject(offset int64) { o.start = offset }

func (o *objectReader) Read(p []byte) (int, error) {
	if o.read-o.start > maxObjectBytes {
		return 0, errObjectTooLarge
	}
	n, err := o.r.Read(p)
	o.read += int64(n)
	return n, err
}
