package promtext

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ContentType is the media type Handler serves: the text format 0.0.4,
// with names that need no escaping.
const ContentType = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"

// Handler returns a handler that serves a scrape of src for every
// request (it does not check the method or the path: mount it, for
// example, as "GET /metrics"). A scrape that Discover fails gives
// mdraid_scrape_error 1 with status 200, as promhttp serves a collector
// that reports its own errors; but a source that has no snapshot yet
// (ErrNoSnapshot: a daemon that has just started) is not an error of the
// arrays: the scrape waits for the first snapshot for most of the
// scrape's timeout (Prometheus's X-Prometheus-Scrape-Timeout-Seconds, or
// DefaultReadyWait), then answers 503 with the reason. The body is
// gzip-compressed when the request accepts gzip.
func Handler(src Source) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), readyWait(req))
		r, err := src.Discover(ctx)
		cancel()
		if errors.Is(err, ErrNoSnapshot) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "not ready: no snapshot of the md arrays has been taken yet", http.StatusServiceUnavailable)
			return
		}
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

// DefaultReadyWait is how long Handler waits for a source's first
// snapshot when the request does not say its timeout.
const DefaultReadyWait = 5 * time.Second

// readyWait is how long a scrape may wait for the first snapshot: nine
// tenths of the timeout Prometheus sends, else DefaultReadyWait.
func readyWait(req *http.Request) time.Duration {
	if v, err := strconv.ParseFloat(req.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"), 64); err == nil && v > 0 && v < 3600 {
		return time.Duration(v * 0.9 * float64(time.Second))
	}
	return DefaultReadyWait
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
