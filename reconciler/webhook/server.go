package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Server serves a Receiver on Addr as a controller-runtime manager Runnable.
// It runs on every replica, leader or not: requesting a reconcile is a patch
// any replica can make.
type Server struct {
	// Addr is the listen address, e.g. ":9292".
	Addr string
	// Receiver handles the requests.
	Receiver *Receiver
}

// Start listens until ctx is done, then drains in-flight requests.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.Receiver.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	s.Receiver.Log.Info("serving webhook receiver", "addr", ln.Addr().String(), "path", PathPrefix+"<namespace>/<name>")
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-stopped
	return nil
}

// NeedLeaderElection reports false: every replica serves webhooks.
func (s *Server) NeedLeaderElection() bool { return false }
