package fakeaws

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

const eksContentType = "application/json"

// EKSCluster is what EKS DescribeCluster reports about a cluster: what a
// node needs to join it and what the controller discovers at start.
type EKSCluster struct {
	Name     string
	Endpoint string
	// CAData is the cluster CA, base64-encoded PEM (as EKS sends it).
	CAData string
	// ServiceIPv4CIDR is the cluster's service range; default 10.100.0.0/16.
	ServiceIPv4CIDR string
	// Version is the Kubernetes minor version; default the world's.
	Version string
	// AuthenticationMode is API, API_AND_CONFIG_MAP or CONFIG_MAP; default API_AND_CONFIG_MAP.
	AuthenticationMode string
	// Status is ACTIVE unless set (CREATING, UPDATING, …).
	Status string
}

// SetCluster makes DescribeCluster report c (replacing the one of that name).
func (s *Server) SetCluster(c EKSCluster) {
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	if s.ext.clusters == nil {
		s.ext.clusters = map[string]EKSCluster{}
	}
	s.ext.clusters[c.Name] = c
}

// cluster returns the named cluster: one set with SetCluster, else, for the
// world's Options.ClusterName, a made-up one with a plausible endpoint.
func (s *Server) cluster(name string) (EKSCluster, bool) {
	s.ext.mu.Lock()
	c, ok := s.ext.clusters[name]
	s.ext.mu.Unlock()
	if !ok {
		if name == "" || name != s.w.opts.ClusterName {
			return EKSCluster{}, false
		}
		sum := sha256.Sum256([]byte(s.w.opts.AccountID + "/" + name))
		id := strings.ToUpper(hex.EncodeToString(sum[:16]))
		c = EKSCluster{
			Name:     name,
			Endpoint: fmt.Sprintf("https://%s.gr7.%s.eks.amazonaws.com", id, s.w.opts.Region),
			CAData:   base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nZmFrZS1la3MtY2E=\n-----END CERTIFICATE-----\n")),
		}
	}
	if c.ServiceIPv4CIDR == "" {
		c.ServiceIPv4CIDR = "10.100.0.0/16"
	}
	if c.Version == "" {
		c.Version = s.w.opts.KubernetesVersion
	}
	if c.AuthenticationMode == "" {
		c.AuthenticationMode = "API_AND_CONFIG_MAP"
	}
	if c.Status == "" {
		c.Status = "ACTIVE"
	}
	return c, true
}

func (s *Server) clusterARN(name string) string {
	return fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", s.w.opts.Region, s.w.opts.AccountID, name)
}

// isEKSRequest: EKS is REST-JSON, so it is told apart by method and path.
func isEKSRequest(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/clusters/")
}

// eksClusterName is the {name} of GET /clusters/{name}.
func eksClusterName(r *http.Request) string {
	name, _ := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/clusters/"))
	return name
}

// serveEKS answers DescribeCluster (REST-JSON, GET /clusters/{name}); other
// EKS operations are not simulated. Calls are counted under "eks:<Operation>".
func (s *Server) serveEKS(rw http.ResponseWriter, r *http.Request) {
	rid := s.requestID()
	name := eksClusterName(r)
	if strings.Contains(name, "/") {
		s.w.count("eks:Unknown")
		writeJSONError(rw, eksContentType, rid, 404, "UnknownOperationException", "only DescribeCluster is simulated")
		return
	}
	if fault := s.admit("eks:DescribeCluster"); fault != nil {
		if fault.Code == "RequestLimitExceeded" {
			writeJSONError(rw, eksContentType, rid, 429, "ThrottlingException", "Rate exceeded")
		} else {
			writeJSONError(rw, eksContentType, rid, 500, "ServerException", fault.Message)
		}
		return
	}
	c, ok := s.cluster(name)
	if !ok {
		writeJSONError(rw, eksContentType, rid, 404, "ResourceNotFoundException", fmt.Sprintf("No cluster found for name: %s.", name))
		return
	}
	created := float64(s.w.Now().Add(-24 * 3600e9).Unix())
	vpc := map[string]any{"subnetIds": []string{}, "securityGroupIds": []string{}, "endpointPublicAccess": true, "endpointPrivateAccess": true}
	if subnets := s.w.Subnets(); len(subnets) > 0 {
		ids := make([]string, 0, len(subnets))
		for _, sn := range subnets {
			ids = append(ids, sn.ID)
		}
		vpc["subnetIds"], vpc["vpcId"] = ids, subnets[0].VpcID
	}
	out := map[string]any{"cluster": map[string]any{
		"name":                    c.Name,
		"arn":                     s.clusterARN(c.Name),
		"createdAt":               created,
		"version":                 c.Version,
		"endpoint":                c.Endpoint,
		"roleArn":                 fmt.Sprintf("arn:aws:iam::%s:role/%s-cluster-role", s.w.opts.AccountID, c.Name),
		"resourcesVpcConfig":      vpc,
		"kubernetesNetworkConfig": map[string]any{"serviceIpv4Cidr": c.ServiceIPv4CIDR, "ipFamily": "ipv4"},
		"status":                  c.Status,
		"certificateAuthority":    map[string]any{"data": c.CAData},
		"platformVersion":         "eks.1",
		"accessConfig":            map[string]any{"authenticationMode": c.AuthenticationMode},
		"tags":                    map[string]string{},
	}}
	writeJSONBody(rw, eksContentType, rid, out)
}
