package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// Server serves a Receiver on Addr as a controller-runtime manager Runnable.
// It runs on every replica, leader or not: requesting a reconcile is a patch
// any replica can make.
type Server struct {
	// Addr is the listen address, e.g. ":9292".
	Addr string
	// TLSCertFile and TLSKeyFile, when set, are a PEM certificate (chain) and
	// key to serve HTTPS with instead of plain HTTP, typically from a mounted
	// kubernetes.io/tls Secret; they are reloaded when the files change.
	TLSCertFile, TLSKeyFile string
	// Receiver handles the requests.
	Receiver *Receiver
}

// Start listens until ctx is done, then drains in-flight requests.
func (s *Server) Start(ctx context.Context) error {
	ln, err := s.listen(ctx)
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
	s.Receiver.Log.Info("serving webhook receiver", "addr", ln.Addr().String(), "path", PathPrefix+"<namespace>/<name>", "tls", s.TLSCertFile != "")
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-stopped
	return nil
}

// NeedLeaderElection reports false: every replica serves webhooks.
func (s *Server) NeedLeaderElection() bool { return false }

// listen opens Addr, with TLS from TLSCertFile and TLSKeyFile when they are set.
func (s *Server) listen(ctx context.Context) (net.Listener, error) {
	if s.TLSCertFile == "" && s.TLSKeyFile == "" {
		return net.Listen("tcp", s.Addr)
	}
	certs, err := certwatcher.New(s.TLSCertFile, s.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("webhook TLS: %w", err)
	}
	go func() {
		if err := certs.Start(ctx); err != nil {
			s.Receiver.Log.Error(err, "webhook TLS: watching the certificate failed")
		}
	}()
	return tls.Listen("tcp", s.Addr, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate})
}
