package clusterinfo

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/smithy-go"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// eksClient is the real EKS client against the simulated AWS, optionally
// behind a wrapper that plays a denial.
func eksClient(t *testing.T, wrap func(http.Handler) http.Handler) (*eks.Client, *fakeaws.Server) {
	t.Helper()
	srv := fakeaws.NewServer(fakeaws.NewWorld(fakeaws.Options{ClusterName: "lab", Seed: 1}))
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""), RetryMaxAttempts: 1}
	return eks.NewFromConfig(cfg, func(o *eks.Options) { o.BaseEndpoint = aws.String(ts.URL) }), srv
}

func deny(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/clusters/") {
			rw.Header().Set("X-Amzn-ErrorType", "AccessDeniedException")
			rw.WriteHeader(http.StatusForbidden)
			_, _ = rw.Write([]byte(`{"message":"User: arn:aws:sts::123456789012:assumed-role/nodesmith/c is not authorized to perform: eks:DescribeCluster on resource: arn:aws:eks:us-east-1:123456789012:cluster/lab"}`))
			return
		}
		next.ServeHTTP(rw, r)
	})
}

func version(major, minor string) func(context.Context) (string, string, error) {
	return func(context.Context) (string, string, error) { return major, minor, nil }
}

func TestDiscover(t *testing.T) {
	full := Settings{ClusterName: "lab", Endpoint: "https://flag", CABundle: "Q0E=", ServiceCIDR: "10.0.0.0/16", KubernetesVersion: "1.36"}
	tests := []struct {
		name     string
		settings Settings
		wrap     func(http.Handler) http.Handler
		noEKS    bool
		version  func(context.Context) (string, string, error)
		check    func(t *testing.T, info Info, srv *fakeaws.Server)
		wantErr  []string
	}{
		{name: "flags win and nothing is called", settings: full, noEKS: true, check: func(t *testing.T, info Info, _ *fakeaws.Server) {
			if info.Endpoint != "https://flag" || info.KubernetesVersion != "1.36" || info.Sources["endpoint"] != "flag" {
				t.Errorf("info %+v", info)
			}
		}},
		{name: "endpoint, CA and CIDR from EKS, version from the API server", settings: Settings{ClusterName: "lab"}, version: version("1", "37+"),
			check: func(t *testing.T, info Info, srv *fakeaws.Server) {
				if !strings.HasSuffix(info.Endpoint, ".gr7.us-east-1.eks.amazonaws.com") || info.CABundle == "" || info.ServiceCIDR != "10.100.0.0/16" ||
					info.KubernetesVersion != "1.37" || info.Sources["endpoint"] != "eks:DescribeCluster" || info.Sources["kubernetesVersion"] != "apiserver" {
					t.Errorf("info %+v", info)
				}
				if n := srv.World().Stats()["eks:DescribeCluster"]; n != 1 {
					t.Errorf("%d DescribeCluster calls, want 1", n)
				}
			}},
		{name: "a flag keeps its value beside discovered ones", settings: Settings{ClusterName: "lab", ServiceCIDR: "172.20.0.0/16", KubernetesVersion: "1.37"},
			check: func(t *testing.T, info Info, _ *fakeaws.Server) {
				if info.ServiceCIDR != "172.20.0.0/16" || info.Sources["serviceCIDR"] != "flag" || info.Sources["endpoint"] != "eks:DescribeCluster" {
					t.Errorf("info %+v", info)
				}
			}},
		{name: "no such cluster", settings: Settings{ClusterName: "elsewhere", KubernetesVersion: "1.37"},
			wantErr: []string{"eks:DescribeCluster", "ResourceNotFoundException", "--cluster-endpoint", "--cluster-ca-bundle", "--cluster-service-cidr"}},
		{name: "denied", settings: Settings{ClusterName: "lab", Endpoint: "https://flag", KubernetesVersion: "1.37"}, wrap: deny,
			wantErr: []string{"grant the controller's IAM role eks:DescribeCluster", "AccessDeniedException", "--cluster-ca-bundle"}},
		{name: "no cluster name", settings: Settings{}, wantErr: []string{"--cluster-name"}},
		{name: "API server unreachable", settings: Settings{ClusterName: "lab", Endpoint: "e", CABundle: "c", ServiceCIDR: "s"},
			version: func(context.Context) (string, string, error) { return "", "", errors.New("connection refused") },
			wantErr: []string{"reading the API server's version", "--kubernetes-version"}},
		{name: "odd version", settings: Settings{ClusterName: "lab", Endpoint: "e", CABundle: "c", ServiceCIDR: "s"}, version: version("v1", "x"),
			wantErr: []string{"--kubernetes-version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, srv := eksClient(t, tt.wrap)
			src := Sources{EKS: client, ServerVersion: tt.version}
			if tt.noEKS {
				src.EKS = nil
			}
			info, err := Discover(context.Background(), tt.settings, src)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want one naming %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, info, srv)
		})
	}
}

// fakeIMDS answers IMDSv2: a token, then the instance identity document
// (where GetRegion reads the region) with that token.
func fakeIMDS(t *testing.T, region string) *imds.Client {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			rw.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			_, _ = rw.Write([]byte("tok"))
		case r.Method == http.MethodGet && r.URL.Path == "/latest/dynamic/instance-identity/document" && r.Header.Get("X-Aws-Ec2-Metadata-Token") == "tok":
			_, _ = rw.Write([]byte(`{"region":"` + region + `","availabilityZone":"` + region + `a","instanceId":"i-0123456789abcdef0"}`))
		default:
			rw.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(ts.Close)
	return imds.New(imds.Options{Endpoint: ts.URL})
}

func TestRegion(t *testing.T) {
	ctx := context.Background()
	if r, err := Region(ctx, "eu-west-1", nil); err != nil || r != "eu-west-1" {
		t.Errorf("flag: %s %v", r, err)
	}
	if r, err := Region(ctx, "", fakeIMDS(t, "ap-south-2")); err != nil || r != "ap-south-2" {
		t.Errorf("IMDS: %s %v", r, err)
	}
	dead := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { rw.WriteHeader(http.StatusNotFound) }))
	t.Cleanup(dead.Close)
	_, err := Region(ctx, "", imds.New(imds.Options{Endpoint: dead.URL}))
	if err == nil || !strings.Contains(err.Error(), "--aws-region") || !strings.Contains(err.Error(), "IMDS") {
		t.Errorf("IMDS down: %v, want a message naming --aws-region", err)
	}
}

// flakyEKS fails its first calls with err, then describes an active cluster.
type flakyEKS struct {
	fails int
	err   error
	calls int
}

func (f *flakyEKS) DescribeCluster(context.Context, *eks.DescribeClusterInput, ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	f.calls++
	if f.calls <= f.fails {
		return nil, f.err
	}
	return &eks.DescribeClusterOutput{Cluster: &ekstypes.Cluster{Status: ekstypes.ClusterStatusActive,
		Endpoint: aws.String("https://x.eks"), CertificateAuthority: &ekstypes.Certificate{Data: aws.String("Q0E=")},
		KubernetesNetworkConfig: &ekstypes.KubernetesNetworkConfigResponse{ServiceIpv4Cidr: aws.String("10.100.0.0/16")}}}, nil
}

// TestDiscoverOutlastsThrottling: a start-up lookup throttled past the
// SDK's attempts is called again rather than stopping the controller; a
// refusal is not.
func TestDiscoverOutlastsThrottling(t *testing.T) {
	defer func(b time.Duration) { lookupBackoff = b }(lookupBackoff)
	lookupBackoff = time.Millisecond
	throttled := &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized"}
	tests := []struct {
		name      string
		eks       *flakyEKS
		wantCalls int
		wantErr   bool
	}{
		{name: "throttled three times, then answered", eks: &flakyEKS{fails: 3, err: throttled}, wantCalls: 4},
		{name: "access denied is not retried", eks: &flakyEKS{fails: 3, err: denied}, wantCalls: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := Discover(context.Background(), Settings{ClusterName: "lab", KubernetesVersion: "1.37"}, Sources{EKS: tt.eks})
			if (err != nil) != tt.wantErr || tt.eks.calls != tt.wantCalls {
				t.Fatalf("err %v after %d calls; want error %v after %d", err, tt.eks.calls, tt.wantErr, tt.wantCalls)
			}
			if !tt.wantErr && info.Endpoint != "https://x.eks" {
				t.Errorf("endpoint %q", info.Endpoint)
			}
		})
	}
}
