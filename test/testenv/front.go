package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// front is the test bed's API endpoint, as a cloud load balancer is a real
// control plane's: every client the Env hands out (its rest.Config, its
// kubeconfig file, and so kube-scheduler, kube-controller-manager, KWOK and
// the controller) connects here, and the front forwards each TCP connection
// to kube-apiserver only while kube-apiserver's /readyz passes.
//
// Without it, clients reach a restarted kube-apiserver the moment its port
// opens, before its RBAC authorizer has synced its informers: requests are
// then refused with 403s that no real cluster shows its clients (EKS's load
// balancer waits for /readyz), and a lab step that counts RBAC refusals
// cries wolf. /readyz covers the authorizer: it includes the informer-sync
// check over the informers the authorizer reads and the rbac/bootstrap-roles
// post-start hook.
//
// While kube-apiserver is not ready, the front accepts and closes at once,
// as a load balancer with no healthy target resets the connection; clients
// retry as they do against a refused port. Connections already forwarded
// are left alone: kube-apiserver ends them itself when it stops.
type front struct {
	ln      net.Listener
	backend string // kube-apiserver's host:port
	// readyz reports whether kube-apiserver's /readyz passes.
	readyz func(context.Context) error
	every  time.Duration

	ready atomic.Bool
	// refused counts connections closed because kube-apiserver was not
	// ready; forwarded counts those handed to it.
	refused, forwarded atomic.Int64

	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]struct{}
}

// frontPoll is how often the front asks /readyz. A restart is noticed
// within it, and a connection made meanwhile to the stopped port fails its
// dial and marks the front not ready at once.
const frontPoll = 100 * time.Millisecond

// startFront listens on a free loopback port and forwards to backend once
// readyz passes; it checks readyz before it returns, so a front started on
// a ready kube-apiserver forwards from its first connection.
func startFront(backend string, readyz func(context.Context) error) (*front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the API front: %w", err)
	}
	f := &front{ln: ln, backend: backend, readyz: readyz, every: frontPoll, stop: make(chan struct{}), open: map[net.Conn]struct{}{}}
	f.check()
	f.wg.Add(2)
	go f.poll()
	go f.serve()
	return f, nil
}

// readyzProbe asks kube-apiserver's /readyz at backend with cfg's
// credentials and trust.
func readyzProbe(cfg *rest.Config, backend string) (func(context.Context) error, error) {
	c := rest.CopyConfig(cfg)
	c.Host = "https://" + backend
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the /readyz client: %w", err)
	}
	hc.Timeout = 2 * time.Second
	url := c.Host + "/readyz"
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s: %s", resp.Status, body)
		}
		return nil
	}, nil
}

// Addr is the front's host:port.
func (f *front) Addr() string { return f.ln.Addr().String() }

func (f *front) check() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	f.ready.Store(f.readyz(ctx) == nil)
}

func (f *front) poll() {
	defer f.wg.Done()
	t := time.NewTicker(f.every)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			f.check()
		}
	}
}

func (f *front) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // a transient accept error (e.g. too many files)
			continue
		}
		if !f.ready.Load() {
			f.refused.Add(1)
			_ = c.Close()
			continue
		}
		f.wg.Add(1)
		go f.forward(c)
	}
}

func (f *front) forward(c net.Conn) {
	defer f.wg.Done()
	b, err := net.DialTimeout("tcp", f.backend, 2*time.Second)
	if err != nil {
		// kube-apiserver went away between two polls: not ready until
		// /readyz says otherwise.
		f.ready.Store(false)
		f.refused.Add(1)
		_ = c.Close()
		return
	}
	f.forwarded.Add(1)
	if !f.track(c, b) {
		return
	}
	defer f.untrack(c, b)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // TCP to TCP: splice(2) on Linux
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(b, c)
	go pipe(c, b)
	<-done
	<-done
}

// track records an open pair so close can end it; false if the front is
// already closing (the pair is closed then).
func (f *front) track(c, b net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.stop:
		_ = c.Close()
		_ = b.Close()
		return false
	default:
	}
	f.open[c], f.open[b] = struct{}{}, struct{}{}
	return true
}

func (f *front) untrack(c, b net.Conn) {
	f.mu.Lock()
	delete(f.open, c)
	delete(f.open, b)
	f.mu.Unlock()
	_ = c.Close()
	_ = b.Close()
}

// close stops accepting, ends every forwarded connection and waits for the
// front's goroutines.
func (f *front) close() {
	f.mu.Lock()
	select {
	case <-f.stop:
		f.mu.Unlock()
		return
	default:
	}
	close(f.stop)
	_ = f.ln.Close()
	for c := range f.open {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
