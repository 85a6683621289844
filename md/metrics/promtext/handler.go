package promtext

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
)

// ContentType is the media type Handler serves: the text format 0.0.4,
// with names that need no escaping.
const ContentType = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"

// Handler returns a handler that serves a scrape of src for every
// request (it does not check the method or the path: mount it, for
// example, as "GET /metrics"). A scrape that Discover fails gives
// mdraid_scrape_error 1 with status 200, as promhttp serves a collector
// that reports its own errors. The body is gzip-compressed when the
// request accepts gzip.
func Handler(src Source) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r, err := src.Discover(req.Context())
		var body bytes.Buffer
		// Writing to a buffer cannot fail.
		_ = Write(&body, Collect(r, err))
		h := w.Header()
		h.Set("Content-Type", ContentType)
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(req.Header.Get("Accept-Encoding")) {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			zw.Write(body.Bytes())
			zw.Close()
			body = z
			h.Set("Content-Encoding", "gzip")
		}
		h.Set("Content-Length", strconv.Itoa(body.Len()))
		w.WriteHeader(http.StatusOK)
		if req.Method != http.MethodHead {
			w.Write(body.Bytes())
		}
	})
}

// acceptsGzip reports whether an Accept-Encoding header value (RFC 9110
// §12.5.3) accepts gzip: "gzip" (or "x-gzip") with a q above 0, or else
// "*" with a q above 0.
func acceptsGzip(header string) bool {
	gz, star := -1.0, -1.0
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					f = 0
				}
				q = f
			}
		}
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip", "x-gzip":
			gz = max(gz, q)
		case "*":
			star = max(star, q)
		}
	}
	if gz >= 0 {
		return gz > 0
	}
	return star > 0
}
