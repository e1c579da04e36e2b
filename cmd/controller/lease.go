package main

import (
	"context"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
)

// leaseName is the leader election Lease (the chart's Role names it).
const leaseName = "nodesmith-controller"

// leaderLease is the Lease lock the manager elects with, built here so the
// controller knows its own identity and can hand the Lease back itself.
type leaderLease struct {
	lock     resourcelock.Interface
	identity string
}

func newLeaderLease(cfg *rest.Config, namespace string) (*leaderLease, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("reading the hostname for the leader election identity: %w", err)
	}
	id := host + "_" + string(uuid.NewUUID())
	kc, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election"))
	if err != nil {
		return nil, fmt.Errorf("building the leader election client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, leaseName,
		kc.CoreV1(), kc.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return nil, fmt.Errorf("building the leader election lock: %w", err)
	}
	return &leaderLease{lock: lock, identity: id}, nil
}

// resourceLock is the lock for the manager; nil (the manager's own) when
// leader election is off and there is no lease.
func (l *leaderLease) resourceLock() resourcelock.Interface {
	if l == nil {
		return nil
	}
	return l.lock
}

// release hands the Lease back after a graceful stop — the manager has
// returned, so every controller has stopped — and the standby leads within
// its 2 s retry instead of waiting out the 15 s lease (a rolling upgrade).
// It is not called when leadership was lost: then another replica may
// already lead, and client-go's own release-on-cancel would keep this
// process's controllers running for up to the renew deadline while it
// tried to reach the API server.
func (l *leaderLease) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rec, _, err := l.lock.Get(ctx)
	if err != nil || rec.HolderIdentity != l.identity {
		return
	}
	now := metav1.NewTime(time.Now())
	if err := l.lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now, LeaderTransitions: rec.LeaderTransitions,
	}); err != nil {
		ctrl.Log.WithName("leaderelection").Error(err, "handing the lease back")
		return
	}
	ctrl.Log.WithName("leaderelection").Info("handed the lease back", "lease", l.lock.Describe())
}
