package testenv

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer answers each line with the same line.
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln
}

// roundTrip sends a line through addr and returns what came back, or the
// error of a connection the front closed.
func roundTrip(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// eventually waits up to 10 s for cond; the front polls every 100 ms, so
// the wait is for the poll, not a bound on its speed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFrontForwardsOnlyWhileReady: a connection made while /readyz fails is
// closed unforwarded; once /readyz passes it reaches the backend; when the
// backend goes away the front stops forwarding until /readyz passes again.
func TestFrontForwardsOnlyWhileReady(t *testing.T) {
	backend := echoServer(t)
	var ready atomic.Bool
	f, err := startFront(backend.Addr().String(), func(context.Context) error {
		if ready.Load() {
			return nil
		}
		return errors.New("/readyz: 500: [-]informer-sync failed")
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()

	if got, err := roundTrip(f.Addr()); err == nil {
		t.Fatalf("while /readyz fails the front forwarded a connection (got %q)", got)
	}
	if f.refused.Load() != 1 || f.forwarded.Load() != 0 {
		t.Fatalf("refused %d, forwarded %d; want 1 and 0", f.refused.Load(), f.forwarded.Load())
	}

	ready.Store(true)
	eventually(t, "the front to see /readyz pass", f.ready.Load)
	if got, err := roundTrip(f.Addr()); err != nil || got != "ping\n" {
		t.Fatalf("after /readyz passed: %q, %v; want the echo", got, err)
	}

	// The backend stops; /readyz still answers (stale) until the next
	// poll, but the failed dial marks the front not ready at once.
	_ = backend.Close()
	if _, err := roundTrip(f.Addr()); err == nil {
		t.Fatal("a connection to a stopped backend succeeded")
	}
	if f.refused.Load() != 2 {
		t.Fatalf("refused %d connections after the backend stopped, want 2", f.refused.Load())
	}
	ready.Store(false)
	eventually(t, "the front to see /readyz fail", func() bool { return !f.ready.Load() })
	before := f.forwarded.Load()
	if _, err := roundTrip(f.Addr()); err == nil {
		t.Fatal("forwarded while not ready")
	}
	if f.forwarded.Load() != before {
		t.Fatalf("forwarded %d connections while not ready", f.forwarded.Load()-before)
	}
}

// TestFrontCloseEndsConnections: close ends forwarded connections too, so
// the Env's Stop leaves no client hanging on a dead front.
func TestFrontCloseEndsConnections(t *testing.T) {
	backend := echoServer(t)
	defer backend.Close()
	f, err := startFront(backend.Addr().String(), func(context.Context) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { f.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return with a connection open")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("read after close: %v, want EOF", err)
	}
}
