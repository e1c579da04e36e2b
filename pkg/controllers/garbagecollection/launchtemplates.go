package garbagecollection

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodesmith/nodesmith/pkg/operator"
)

// TemplateCollector deletes launch templates no launch has used for a
// while (the AWS provider's GarbageCollectLaunchTemplates).
type TemplateCollector interface {
	GarbageCollectLaunchTemplates(ctx context.Context) ([]string, error)
}

// LaunchTemplates is a singleton that collects unused launch templates
// every interval: each node class edit or AMI release leaves a template
// behind, and accounts have a template quota.
type LaunchTemplates struct {
	collector TemplateCollector
	interval  time.Duration
}

var _ operator.Singleton = (*LaunchTemplates)(nil)

// NewLaunchTemplates builds the singleton; interval defaults to 10 minutes.
func NewLaunchTemplates(c TemplateCollector, interval time.Duration) *LaunchTemplates {
	if interval <= 0 {
		interval = 10 * time.Minute
	}
	return &LaunchTemplates{collector: c, interval: interval}
}

// Name names the singleton.
func (l *LaunchTemplates) Name() string { return "garbagecollection.launchtemplates" }

// Reconcile runs one collection pass.
func (l *LaunchTemplates) Reconcile(ctx context.Context) (reconcile.Result, error) {
	deleted, err := l.collector.GarbageCollectLaunchTemplates(ctx)
	if len(deleted) > 0 {
		log.FromContext(ctx).Info("deleted unused launch templates", "templates", deleted)
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("collecting launch templates: %w", err)
	}
	return reconcile.Result{RequeueAfter: l.interval}, nil
}
