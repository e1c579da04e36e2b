package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/clusterinfo"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	pricingctrl "github.com/nodesmith/nodesmith/pkg/controllers/pricing"
	"github.com/nodesmith/nodesmith/pkg/metrics"
	"github.com/nodesmith/nodesmith/pkg/operator"
	awsprovider "github.com/nodesmith/nodesmith/pkg/providers/aws"
)

// newAWS resolves the region (flag, else IMDS) and the cluster (flags, else
// eks:DescribeCluster and the API server's version), then builds the AWS
// provider with clients aimed at --aws-endpoint when set. A lookup that
// fails stops the start with the setting and permission to fix.
func newAWS(ctx context.Context, o *Options, restCfg *rest.Config, kube client.Client, clk clock.Clock, rec *events.Recorder, m *metrics.Metrics) (*awsprovider.Provider, aws.Config, error) {
	retries := awsprovider.RetryOptions{
		MaxAttempts: o.AWSMaxAttempts, MaxBackoff: o.AWSMaxBackoff, AttemptTimeout: o.AWSAttemptTimeout,
		OnRetry: func(service, operation, reason string) {
			m.CloudRetries.WithLabelValues(service, operation, reason).Inc()
		},
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, retries.LoadOptions()...)
	if err != nil {
		return nil, aws.Config{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	region := o.AWSRegion
	if region == "" {
		region = awsCfg.Region // AWS_REGION / AWS_DEFAULT_REGION / the shared config
	}
	if region, err = clusterinfo.Region(ctx, region, imds.NewFromConfig(awsCfg)); err != nil {
		return nil, aws.Config{}, err
	}
	awsCfg.Region = region
	if o.AWSEndpoint != "" {
		awsCfg.BaseEndpoint = aws.String(o.AWSEndpoint)
	}
	info, err := clusterinfo.Discover(ctx, clusterinfo.Settings{
		ClusterName: o.ClusterName, Endpoint: o.ClusterEndpoint, CABundle: o.ClusterCABundle,
		ServiceCIDR: o.ClusterServiceCIDR, KubernetesVersion: o.KubernetesVersion,
	}, clusterinfo.Sources{EKS: eks.NewFromConfig(awsCfg), ServerVersion: serverVersion(restCfg)})
	if err != nil {
		return nil, aws.Config{}, err
	}
	ctrl.Log.WithName("setup").Info("cluster", "name", info.Name, "region", region, "endpoint", info.Endpoint,
		"serviceCIDR", info.ServiceCIDR, "kubernetesVersion", info.KubernetesVersion, "sources", info.Sources)
	ec2Client, ssmClient, iamClient := awsprovider.NewClients(awsCfg, o.AWSEndpoint)
	// The Price List API is served from a few regions only.
	pricingClient := pricing.NewFromConfig(awsCfg, func(po *pricing.Options) {
		if o.AWSEndpoint == "" {
			po.Region = awsprovider.PricingRegion(region)
		}
	})
	getClass := func(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
		nc := &awsv1.EC2NodeClass{}
		if err := kube.Get(ctx, types.NamespacedName{Name: name}, nc); err != nil {
			return nil, err
		}
		return nc, nil
	}
	p, err := awsprovider.New(awsprovider.Config{
		EC2:         ec2Client,
		SSM:         ssmClient,
		IAM:         iamClient,
		Pricing:     pricingClient,
		Clock:       clk,
		Cluster:     awsprovider.Cluster{Name: info.Name, Endpoint: info.Endpoint, CABundle: info.CABundle, ServiceCIDR: info.ServiceCIDR},
		NodeClasses: getClass,
		Options: awsprovider.Options{
			Region: region, KubernetesVersion: info.KubernetesVersion, DiscoverInstanceTypes: true,
			Catalog: catalogOptions(o),
			Log:     ctrl.Log.WithName("aws"), OnEvent: events.ProviderNotices(rec, awsprovider.WarningEvent),
		},
	})
	if err != nil {
		return nil, aws.Config{}, fmt.Errorf("building the AWS provider: %w", err)
	}
	return p, awsCfg, nil
}

func serverVersion(cfg *rest.Config) func(context.Context) (string, string, error) {
	return func(context.Context) (string, string, error) {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return "", "", err
		}
		v, err := dc.ServerVersion()
		if err != nil {
			return "", "", err
		}
		return v.Major, v.Minor, nil
	}
}

// addCatalogSingletons runs the live catalog refreshes and the launch
// template collector on the leader.
func addCatalogSingletons(mgr ctrl.Manager, o *Options, p *awsprovider.Provider, kube client.Reader, clk clock.Clock, rec *events.Recorder) error {
	pm, err := pricingctrl.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("registering catalog metrics: %w", err)
	}
	for _, s := range pricingctrl.Singletons(p, kube, rec, clk, pm, pricingctrl.Intervals{Spot: o.SpotPriceInterval, Catalog: o.CatalogInterval}) {
		if err := operator.AddSingleton(mgr, clk, s); err != nil {
			return fmt.Errorf("adding %s: %w", s.Name(), err)
		}
	}
	return nil
}

// catalogOptions are the settings that shape every instance type's
// allocatable: the VM memory overhead (the catalog reads 0 as its default,
// so an explicit 0 is passed as a negative share, which it reads as none)
// and the ENIs kept from pod networking.
func catalogOptions(o *Options) catalog.Options {
	overhead := o.VMMemoryOverheadPercent
	if overhead == 0 {
		overhead = -1
	}
	return catalog.Options{VMMemoryOverheadPercent: overhead, ReservedENIs: o.ReservedENIs}
}
