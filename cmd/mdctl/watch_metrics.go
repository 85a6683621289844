package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-mdraid/mdraid/md"
	"github.com/go-mdraid/mdraid/md/metrics/promtext"
	"github.com/go-mdraid/mdraid/md/store"
)

// Timeouts of the metrics server. A scrape is served from a snapshot in
// memory, so each is generous for a client and short for a stuck one.
const (
	metricsReadHeaderTimeout = 5 * time.Second
	metricsReadTimeout       = 10 * time.Second
	metricsWriteTimeout      = 30 * time.Second
	metricsIdleTimeout       = 2 * time.Minute
	metricsShutdownTimeout   = 5 * time.Second
	metricsMaxHeaderBytes    = 16 << 10
)

// listenMetrics opens the listeners of --metrics-listen ADDR. ADDR is
// HOST:PORT, or :PORT for loopback only: 127.0.0.1 and ::1 on the same
// port (::1 is skipped when the host has no IPv6). Every address,
// 0.0.0.0 and [::] included, must be given explicitly to be used.
func listenMetrics(addr string) ([]net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return nil, fmt.Errorf("--metrics-listen %q: want HOST:PORT, or :PORT for loopback only (127.0.0.1 and ::1)", addr)
	}
	if host != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("--metrics-listen: %w", err)
		}
		return []net.Listener{l}, nil
	}
	l4, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	// The same port on ::1, also when port 0 picked one.
	port = strconv.Itoa(l4.Addr().(*net.TCPAddr).Port)
	l6, err := net.Listen("tcp6", net.JoinHostPort("::1", port))
	switch {
	case err == nil:
		return []net.Listener{l4, l6}, nil
	case errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT):
		// No IPv6 on this host (disabled, or no ::1 on lo).
		return []net.Listener{l4}, nil
	default:
		l4.Close()
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
}

// withRecords returns a copy of r with the records of st added
// (md.Report.AddChecks), leaving r as it was: the watcher's snapshots are
// not to be changed. A store that cannot be read (not written yet, or
// bad) leaves r without records; a bad one is logged.
func withRecords(ctx context.Context, r *md.Report, st *store.File, log *slog.Logger) *md.Report {
	if r == nil {
		return nil
	}
	rs, err := st.Load(ctx)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn("metrics without the store's records", "store", st.Path(), "err", err)
		}
		return r
	}
	cp := *r
	cp.Arrays = slices.Clone(r.Arrays)
	for i := range cp.Arrays {
		cp.Arrays[i].Slots = slices.Clone(cp.Arrays[i].Slots)
	}
	cp.AddChecks(rs)
	return &cp
}

// metricsHandler serves /metrics, GET and HEAD only (405 for other
// methods), from the snapshots src is given; every other path is 404.
// The metrics that can be built are served all the same when some
// cannot (mdraid_collect_errors counts those), as mdctl status
// --format=prometheus prints them.
func metricsHandler(src promtext.Source) http.Handler {
	mux := http.NewServeMux()
	// "GET" also matches HEAD; other methods get 405 with Allow.
	mux.Handle("GET /metrics", promtext.Handler(src))
	return mux
}

// serveMetrics serves h on ls until ctx is done, then shuts the server
// down (closing idle and, after metricsShutdownTimeout, every
// connection). When serving fails, it calls fail with the error. The
// channel is closed when the server and every goroutine serveMetrics
// started have ended, and ls are closed.
func serveMetrics(ctx context.Context, ls []net.Listener, h http.Handler, log *slog.Logger, fail func(error)) <-chan struct{} {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: metricsReadHeaderTimeout,
		ReadTimeout:       metricsReadTimeout,
		WriteTimeout:      metricsWriteTimeout,
		IdleTimeout:       metricsIdleTimeout,
		MaxHeaderBytes:    metricsMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	var wg sync.WaitGroup
	for _, l := range ls {
		log.Info("serving metrics", "addr", "http://"+l.Addr().String()+"/metrics")
		wg.Go(func() {
			if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				fail(fmt.Errorf("metrics server on %s: %w", l.Addr(), err))
			}
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		wg.Wait()
	}()
	return done
}
