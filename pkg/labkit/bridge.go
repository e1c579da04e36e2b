package labkit

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/simulator"
)

// KwokAnnotation marks the Nodes KWOK plays the kubelet of (value "fake").
const KwokAnnotation = "kwok.x-k8s.io/node"

// Bridge does what kubelet registration and the cloud's node lifecycle
// controller do on a real cluster: when a simulated instance is running it
// creates the instance's Node (simulator.NodeFor: providerID, the labels
// and taints of its user data, capacity and allocatable from its instance
// type — the Node the simulator registers — plus the KWOK annotation), and
// when the instance is terminated it deletes the Node.
type Bridge struct {
	kube    client.Client
	catalog *catalog.Catalog
	region  string
	logf    func(format string, args ...any)
	work    chan fakeaws.Event

	mu sync.Mutex
	// onLaunch runs synchronously inside the simulated CreateFleet call,
	// before its response is written.
	onLaunch func(fakeaws.Instance)
}

// NewBridge starts the bridge's workers; subscribe Observe to the world.
func NewBridge(ctx context.Context, kube client.Client, cat *catalog.Catalog, region string, logf func(string, ...any)) *Bridge {
	if logf == nil {
		logf = log.Printf
	}
	b := &Bridge{kube: kube, catalog: cat, region: region, logf: logf, work: make(chan fakeaws.Event, 20000)}
	for range 8 {
		go b.run(ctx)
	}
	return b
}

// SetOnLaunch runs fn inside every CreateFleet that launches an instance
// (nil: nothing), so a test can act at that precise point.
func (b *Bridge) SetOnLaunch(fn func(fakeaws.Instance)) {
	b.mu.Lock()
	b.onLaunch = fn
	b.mu.Unlock()
}

// Observe is the World subscriber; it must not block the world.
func (b *Bridge) Observe(e fakeaws.Event) {
	if e.Kind == fakeaws.EventLaunched {
		b.mu.Lock()
		fn := b.onLaunch
		b.mu.Unlock()
		if fn != nil {
			fn(e.Instance)
		}
	}
	if e.Kind == fakeaws.EventRunning || e.Kind == fakeaws.EventTerminated {
		b.work <- e
	}
}

func (b *Bridge) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-b.work:
			var err error
			if e.Kind == fakeaws.EventRunning {
				err = b.register(ctx, e.Instance)
			} else {
				err = retryUnreachable(ctx, func() error {
					return client.IgnoreNotFound(b.kube.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName(e.Instance)}}))
				})
			}
			if err != nil && ctx.Err() == nil {
				b.logf("bridge: %s %s: %v", e.Kind, e.Instance.ID, err)
			}
		}
	}
}

// NodeName is the Node an instance registers as.
func NodeName(in fakeaws.Instance) string { return strings.ToLower(in.ID) }

func (b *Bridge) register(ctx context.Context, in fakeaws.Instance) error {
	node, err := simulator.NodeFor(in, b.catalog, b.region)
	if err != nil {
		return err
	}
	// KWOK plays this node's kubelet: it takes over the status (Ready,
	// heartbeats) as soon as the Node exists.
	node.Annotations = map[string]string{KwokAnnotation: "fake"}
	for attempt := 0; ; attempt++ {
		err = retryUnreachable(ctx, func() error { return b.kube.Create(ctx, node) })
		if err == nil || attempt == 5 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating node: %w", err)
	}
	return nil
}

// retryUnreachable calls fn again, with a back-off from 100 ms doubling to
// 7 s (a kubelet's node-registration back-off), for as long as the API
// server cannot be reached (a lab may restart it) and for at most five
// minutes; any other answer is fn's.
func retryUnreachable(ctx context.Context, fn func() error) error {
	backoff, deadline := 100*time.Millisecond, time.Now().Add(5*time.Minute)
	for {
		err := fn()
		if err == nil || !isUnreachable(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		if backoff *= 2; backoff > 7*time.Second {
			backoff = 7 * time.Second
		}
	}
}

// isUnreachable: the request got no answer from the API server (refused,
// reset or cut connection, a timeout), as opposed to an answer that is an
// error (a Status), which retrying would not change.
func isUnreachable(err error) bool {
	var status apierrors.APIStatus
	return !errors.As(err, &status)
}
