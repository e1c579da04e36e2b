package clusterinfo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// EKSAPI is the EKS call discovery makes; *eks.Client satisfies it.
type EKSAPI interface {
	DescribeCluster(context.Context, *eks.DescribeClusterInput, ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// IMDSAPI answers the instance's region; *imds.Client satisfies it.
type IMDSAPI interface {
	GetRegion(context.Context, *imds.GetRegionInput, ...func(*imds.Options)) (*imds.GetRegionOutput, error)
}

var (
	_ EKSAPI  = (*eks.Client)(nil)
	_ IMDSAPI = (*imds.Client)(nil)
)

// Settings are what the flags set; empty means "look it up".
type Settings struct {
	ClusterName       string
	Endpoint          string
	CABundle          string
	ServiceCIDR       string
	KubernetesVersion string
}

// Info is the cluster as the controller will use it.
type Info struct {
	Name     string
	Endpoint string
	// CABundle is base64-encoded PEM, as nodeadm and EKS spell it.
	CABundle    string
	ServiceCIDR string
	// KubernetesVersion is major.minor ("1.37").
	KubernetesVersion string
	// Sources says where each value came from ("flag", "eks:DescribeCluster",
	// "apiserver"), for the start-up log.
	Sources map[string]string
}

// Sources are where missing settings are looked up.
type Sources struct {
	EKS EKSAPI
	// ServerVersion returns the API server's version (major, minor as the
	// version endpoint reports them).
	ServerVersion func(ctx context.Context) (major, minor string, err error)
}

// imdsTimeout bounds the region lookup: off EC2, or from a pod whose hop
// limit keeps it from IMDS, the call would otherwise retry for long.
const imdsTimeout = 5 * time.Second

// Region returns flagRegion when set, else the region IMDS reports.
func Region(ctx context.Context, flagRegion string, md IMDSAPI) (string, error) {
	if flagRegion != "" {
		return flagRegion, nil
	}
	if md == nil {
		return "", errors.New("the AWS region is not set: set --aws-region (env AWS_REGION, chart value aws.region)")
	}
	ctx, cancel := context.WithTimeout(ctx, imdsTimeout)
	defer cancel()
	out, err := md.GetRegion(ctx, &imds.GetRegionInput{})
	if err != nil || out.Region == "" {
		if err == nil {
			err = errors.New("empty answer")
		}
		return "", fmt.Errorf("the AWS region is not set and IMDS did not tell it (%w): set --aws-region "+
			"(env AWS_REGION, chart value aws.region); IRSA and Pod Identity set AWS_REGION, and pods reach IMDS only "+
			"when the node's metadata hop limit is 2 or more", err)
	}
	return out.Region, nil
}

// Discover fills the settings left empty: endpoint, CA bundle and service
// CIDR from one EKS DescribeCluster, the version from the API server.
func Discover(ctx context.Context, s Settings, src Sources) (Info, error) {
	info := Info{Name: s.ClusterName, Endpoint: s.Endpoint, CABundle: s.CABundle, ServiceCIDR: s.ServiceCIDR,
		KubernetesVersion: s.KubernetesVersion, Sources: map[string]string{}}
	if info.Name == "" {
		return Info{}, errors.New("--cluster-name (env CLUSTER_NAME, chart value clusterName) is required")
	}
	for k, v := range map[string]string{"endpoint": s.Endpoint, "caBundle": s.CABundle, "serviceCIDR": s.ServiceCIDR, "kubernetesVersion": s.KubernetesVersion} {
		if v != "" {
			info.Sources[k] = "flag"
		}
	}
	if info.Endpoint == "" || info.CABundle == "" || info.ServiceCIDR == "" {
		if err := fromEKS(ctx, &info, src.EKS); err != nil {
			return Info{}, err
		}
	}
	if info.KubernetesVersion == "" {
		v, err := serverVersion(ctx, src.ServerVersion)
		if err != nil {
			return Info{}, err
		}
		info.KubernetesVersion = v
		info.Sources["kubernetesVersion"] = "apiserver"
	}
	return info, nil
}

// missing names the empty settings with their flags, for error messages.
func missing(info *Info) string {
	var out []string
	if info.Endpoint == "" {
		out = append(out, "--cluster-endpoint (chart value clusterEndpoint)")
	}
	if info.CABundle == "" {
		out = append(out, "--cluster-ca-bundle (chart value clusterCABundle)")
	}
	if info.ServiceCIDR == "" {
		out = append(out, "--cluster-service-cidr (chart value clusterServiceCIDR)")
	}
	return strings.Join(out, ", ")
}

func fromEKS(ctx context.Context, info *Info, client EKSAPI) error {
	need := missing(info)
	if client == nil {
		return fmt.Errorf("cluster %s: set %s; there is no EKS client to look them up", info.Name, need)
	}
	out, err := describeCluster(ctx, client, info.Name)
	if err != nil {
		return fmt.Errorf("looking up cluster %s with eks:DescribeCluster: %w; grant the controller's IAM role eks:DescribeCluster "+
			"on the cluster, or set %s", info.Name, err, need)
	}
	c := out.Cluster
	if c == nil {
		return fmt.Errorf("eks:DescribeCluster returned no cluster %s; set %s", info.Name, need)
	}
	if c.Status != "" && c.Status != ekstypes.ClusterStatusActive && c.Status != ekstypes.ClusterStatusUpdating {
		return fmt.Errorf("cluster %s is %s, not ACTIVE: nodes cannot join it yet", info.Name, c.Status)
	}
	set := func(dst *string, key, v string) {
		if *dst == "" && v != "" {
			*dst = v
			info.Sources[key] = "eks:DescribeCluster"
		}
	}
	set(&info.Endpoint, "endpoint", aws.ToString(c.Endpoint))
	if c.CertificateAuthority != nil {
		set(&info.CABundle, "caBundle", aws.ToString(c.CertificateAuthority.Data))
	}
	if n := c.KubernetesNetworkConfig; n != nil {
		cidr := aws.ToString(n.ServiceIpv4Cidr)
		if n.IpFamily == ekstypes.IpFamilyIpv6 && aws.ToString(n.ServiceIpv6Cidr) != "" {
			cidr = aws.ToString(n.ServiceIpv6Cidr)
		}
		set(&info.ServiceCIDR, "serviceCIDR", cidr)
	}
	if need := missing(info); need != "" {
		return fmt.Errorf("eks:DescribeCluster of cluster %s did not say everything nodes need to join: set %s", info.Name, need)
	}
	return nil
}

func serverVersion(ctx context.Context, get func(context.Context) (string, string, error)) (string, error) {
	const hint = "; set --kubernetes-version (env KUBERNETES_VERSION), e.g. 1.37"
	if get == nil {
		return "", errors.New("the Kubernetes version is unknown" + hint)
	}
	major, minor, err := get(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the API server's version: %w%s", err, hint)
	}
	// EKS reports minors like "37+".
	minor = strings.TrimRight(minor, "+")
	major = strings.TrimRight(major, "+")
	if major == "" || minor == "" || strings.Trim(major+minor, "0123456789") != "" {
		return "", fmt.Errorf("the API server reports version %q.%q%s", major, minor, hint)
	}
	return major + "." + minor, nil
}

// lookupPatience is how long start-up keeps calling DescribeCluster while
// AWS throttles it or fails with a 5xx after the SDK's own attempts, and
// lookupBackoff the first wait between calls (doubling to 8 s): without
// the cluster the controller cannot start, and exiting on a throttle only
// trades the wait for a restart's back-off.
var (
	lookupPatience = time.Minute
	lookupBackoff  = time.Second
)

// describeCluster calls DescribeCluster, again while the error is one the
// SDK would retry (throttling, 5xx, a dropped connection), for up to
// lookupPatience; other errors (access denied, no such cluster) at once.
func describeCluster(ctx context.Context, client EKSAPI, name string) (*eks.DescribeClusterOutput, error) {
	retryable := retry.IsErrorRetryables(retry.DefaultRetryables)
	deadline := time.Now().Add(lookupPatience)
	for wait := lookupBackoff; ; wait = min(2*wait, 8*time.Second) {
		out, err := client.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(name)})
		if err == nil || !retryable.IsErrorRetryable(err).Bool() || time.Now().Add(wait).After(deadline) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}
