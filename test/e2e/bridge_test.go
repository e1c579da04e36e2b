package e2e

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

// bridge does what kubelet registration and the cloud's node lifecycle
// controller do on a real cluster: when a simulated instance is running it
// creates the instance's Node (providerID, the labels and taints of its user
// data, capacity and allocatable from its instance type, the KWOK
// annotation), and when the instance is terminated it deletes the Node.
type bridge struct {
	kube    client.Client
	catalog *catalog.Catalog
	work    chan fakeaws.Event

	mu sync.Mutex
	// onLaunch runs synchronously inside the simulated CreateFleet call,
	// before its response is written.
	onLaunch func(fakeaws.Instance)
}

func newBridge(ctx context.Context, kube client.Client, cat *catalog.Catalog) *bridge {
	b := &bridge{kube: kube, catalog: cat, work: make(chan fakeaws.Event, 10000)}
	for range 8 {
		go b.run(ctx)
	}
	return b
}

func (b *bridge) setOnLaunch(fn func(fakeaws.Instance)) {
	b.mu.Lock()
	b.onLaunch = fn
	b.mu.Unlock()
}

// observe is the World subscriber; it must not block the world.
func (b *bridge) observe(e fakeaws.Event) {
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

func (b *bridge) run(ctx context.Context) {
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
					return client.IgnoreNotFound(b.kube.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(e.Instance)}}))
				})
			}
			if err != nil && ctx.Err() == nil {
				log.Printf("bridge: %s %s: %v", e.Kind, e.Instance.ID, err)
			}
		}
	}
}

func nodeName(in fakeaws.Instance) string { return strings.ToLower(in.ID) }

func (b *bridge) register(ctx context.Context, in fakeaws.Instance) error {
	// The simulator registers the same Node for the same instance.
	node, err := simulator.NodeFor(in, b.catalog, labRegion)
	if err != nil {
		return err
	}
	// KWOK plays this node's kubelet: it takes over the status (Ready,
	// heartbeats) as soon as the Node exists.
	node.Annotations = map[string]string{"kwok.x-k8s.io/node": "fake"}
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
// server cannot be reached (the lab restarts it in step 7d) and for at
// most five minutes; any other answer is fn's.
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
