package handlers

// Download COG: a raster dataset's stored file, served by byte range (RFC 9110 section 14) so
// that GDAL's /vsicurl/, QGIS and rio read it remotely.

import (
	"context"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"meridian/gen"
	"meridian/internal/catalog"
	"meridian/internal/export"
	"meridian/internal/web"
)

// DownloadCOG: Download COG (GET and HEAD /datasets/{dataset_id}/download/cog).
func (s *Server) DownloadCOG(ctx context.Context, request gen.DownloadCOGRequestObject) (gen.DownloadCOGResponseObject, error) {
	p, err := s.downloader(ctx, request.DatasetId, request.Params.Token)
	if err != nil {
		return nil, err
	}
	cog, err := s.catalog.OpenCOG(ctx, p, request.DatasetId)
	if err != nil {
		return nil, err
	}
	prm := request.Params
	r := cogResponse{ctx: ctx, cog: cog, head: web.MetaFrom(ctx).Method == http.MethodHead,
		rangeHeader: val(prm.Range), ifRange: val(prm.IfRange), ifNoneMatch: val(prm.IfNoneMatch)}
	if r.rangeHeader == "" && !r.head && !etagMatches(r.ifNoneMatch, cog.ETag) {
		s.catalog.Exported(p, request.DatasetId, "cog") // the whole file: a download, not one read of many
	}
	return r, nil
}

// cogResponse answers a download of a COG: 304, 416, the whole file, one range or several.
type cogResponse struct {
	ctx                               context.Context
	cog                               catalog.COG
	head                              bool
	rangeHeader, ifRange, ifNoneMatch string
}

// byteRange is a span of the file: start and length.
type byteRange struct{ start, length int64 }

// VisitDownloadCOGResponse writes the answer; the object is closed once it is sent.
func (r cogResponse) VisitDownloadCOGResponse(w http.ResponseWriter) error {
	defer r.cog.Close()
	h, size := w.Header(), r.cog.Size()
	h.Set("Accept-Ranges", "bytes")
	h.Set("ETag", r.cog.ETag)
	h.Set("Cache-Control", "private, no-cache")
	if etagMatches(r.ifNoneMatch, r.cog.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	ranges, satisfiable, ok := parseRanges(r.rangeHeader, size)
	if ok && r.ifRange != "" && strings.TrimSpace(r.ifRange) != r.cog.ETag {
		ok = false // the client's bytes are of another version: it gets this one whole
	}
	switch {
	case ok && !satisfiable:
		h.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		return nil
	case ok && len(ranges) > 1:
		return r.multipart(w, ranges)
	case ok:
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", ranges[0].start, ranges[0].start+ranges[0].length-1, size))
		return r.send(w, http.StatusPartialContent, ranges[0])
	}
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": export.LayerName(r.cog.Title) + ".tif"}))
	return r.send(w, http.StatusOK, byteRange{0, size})
}

// send writes one span as the whole body. A failure after the status went out aborts the
// connection, so the client sees a broken transfer rather than a short file.
func (r cogResponse) send(w http.ResponseWriter, status int, br byteRange) error {
	w.Header().Set("Content-Type", catalog.COGMediaType)
	w.Header().Set("Content-Length", strconv.FormatInt(br.length, 10))
	w.WriteHeader(status)
	if r.head || br.length == 0 {
		return nil
	}
	body, err := r.cog.Range(r.ctx, br.start, br.length)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer body.Close()
	if _, err := io.Copy(w, body); err != nil {
		panic(http.ErrAbortHandler)
	}
	return nil
}

// multipart writes several spans as a multipart/byteranges body.
func (r cogResponse) multipart(w http.ResponseWriter, ranges []byteRange) error {
	mw := multipart.NewWriter(w)
	w.Header().Set("Content-Type", "multipart/byteranges; boundary="+mw.Boundary())
	w.WriteHeader(http.StatusPartialContent)
	if r.head {
		return nil
	}
	for _, br := range ranges {
		part, err := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {catalog.COGMediaType},
			"Content-Range": {fmt.Sprintf("bytes %d-%d/%d", br.start, br.start+br.length-1, r.cog.Size())}})
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		body, err := r.cog.Range(r.ctx, br.start, br.length)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		_, err = io.Copy(part, body)
		body.Close()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
	}
	return mw.Close()
}

// maxRanges is the most spans one request may ask for; a Range with more is ignored (the whole
// file), as RFC 9110 allows, rather than answered with thousands of parts.
const maxRanges = 64

// parseRanges reads a Range header against a file of size bytes. ok is false when there is no
// usable header (absent, another unit, malformed, too many spans): the answer is then the whole
// file. satisfiable is false when no span starts within the file (416).
func parseRanges(header string, size int64) (ranges []byteRange, satisfiable, ok bool) {
	spec, found := strings.CutPrefix(strings.TrimSpace(header), "bytes=")
	if !found {
		return nil, false, false
	}
	parts := strings.Split(spec, ",")
	if len(parts) > maxRanges {
		return nil, false, false
	}
	for _, part := range parts {
		br, valid, inside := parseRange(strings.TrimSpace(part), size)
		if !valid {
			return nil, false, false
		}
		if inside {
			ranges = append(ranges, br)
		}
	}
	return ranges, len(ranges) > 0, true
}

// parseRange reads one span: first-last, first- or -suffix. valid is false for bad syntax,
// inside false for a span that lies past the end of the file.
func parseRange(s string, size int64) (br byteRange, valid, inside bool) {
	first, last, found := strings.Cut(s, "-")
	if !found {
		return br, false, false
	}
	if first == "" { // the last `last` bytes
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return br, false, false
		}
		n = min(n, size)
		return byteRange{size - n, n}, true, n > 0
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil || start < 0 {
		return br, false, false
	}
	end := size - 1
	if last != "" {
		if end, err = strconv.ParseInt(last, 10, 64); err != nil || end < start {
			return br, false, false
		}
		end = min(end, size-1)
	}
	if start >= size {
		return br, true, false
	}
	return byteRange{start, end - start + 1}, true, true
}

// etagMatches tells whether an If-None-Match list names etag (weak comparison) or is "*".
func etagMatches(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t != "" && (t == "*" || t == etag) {
			return true
		}
	}
	return false
}

var _ gen.DownloadCOGResponseObject = cogResponse{}
