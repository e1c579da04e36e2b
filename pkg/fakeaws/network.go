package fakeaws

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// Owner of the EKS-optimized and Bottlerocket images in the simulated account space.
const amazonOwnerID = "602401143452"

// seedImages registers AL2023 and Bottlerocket images for both architectures
// (standard and accelerated variants) and the public SSM parameters that
// resolve to them.
func (w *World) seedImages() {
	v := w.opts.KubernetesVersion
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, arch := range []string{"x86_64", "arm64"} {
		al := &Image{
			ID:           "ami-" + w.hex(17),
			Name:         fmt.Sprintf("amazon-eks-node-al2023-%s-standard-%s-v20261101", arch, v),
			Description:  "EKS-optimized Kubernetes node based on Amazon Linux 2023",
			Arch:         arch,
			OwnerID:      amazonOwnerID,
			OwnerAlias:   "amazon",
			CreationDate: created,
			SSMParameter: fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/recommended/image_id", v, arch),
		}
		br := &Image{
			ID:           "ami-" + w.hex(17),
			Name:         fmt.Sprintf("bottlerocket-aws-k8s-%s-%s-v1.50.0-aaaaaaaa", v, arch),
			Description:  "bottlerocket-aws-k8s-" + v,
			Arch:         arch,
			OwnerID:      amazonOwnerID,
			OwnerAlias:   "amazon",
			CreationDate: created,
			SSMParameter: fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/%s/latest/image_id", v, arch),
		}
		for _, img := range []*Image{al, br} {
			w.images = append(w.images, img)
			w.params[img.SSMParameter] = img.ID
		}
	}
	w.seedVariantImages(created)
}

// seedVariantImages registers the accelerated images EKS publishes beside
// the standard ones: AL2023 NVIDIA (x86_64, arm64) and Neuron (x86_64),
// Bottlerocket NVIDIA (both); and the standard AL2023 and Bottlerocket
// images of the two Kubernetes versions before the cluster's. Their ids are derived from their names, not
// drawn from the world's random source, so every id drawn after them is
// what it was before they existed.
func (w *World) seedVariantImages(created time.Time) {
	v := w.opts.KubernetesVersion
	add := func(arch, name, desc, param string) {
		sum := sha256.Sum256([]byte(name))
		img := &Image{
			ID: "ami-" + hex.EncodeToString(sum[:])[:17], Name: name, Description: desc, Arch: arch,
			OwnerID: amazonOwnerID, OwnerAlias: "amazon", CreationDate: created, SSMParameter: param,
		}
		w.images = append(w.images, img)
		w.params[param] = img.ID
	}
	for _, arch := range []string{"x86_64", "arm64"} {
		variants := []string{"nvidia"}
		if arch == "x86_64" {
			variants = append(variants, "neuron")
		}
		for _, variant := range variants {
			add(arch, fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-v20261101", arch, variant, v),
				"EKS-optimized Kubernetes node based on Amazon Linux 2023 ("+variant+")",
				fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/recommended/image_id", v, arch, variant))
		}
		add(arch, fmt.Sprintf("bottlerocket-aws-k8s-%s-nvidia-%s-v1.50.0-aaaaaaaa", v, arch), "bottlerocket-aws-k8s-"+v+"-nvidia",
			fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s-nvidia/%s/latest/image_id", v, arch))
		// EKS keeps publishing images for the Kubernetes versions before
		// the cluster's: a node class pinned to one, or a cluster not yet
		// upgraded, resolves them.
		for _, pv := range previousVersions(v, 2) {
			add(arch, fmt.Sprintf("amazon-eks-node-al2023-%s-standard-%s-v20261101", arch, pv),
				"EKS-optimized Kubernetes node based on Amazon Linux 2023",
				fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/recommended/image_id", pv, arch))
			add(arch, fmt.Sprintf("bottlerocket-aws-k8s-%s-%s-v1.50.0-aaaaaaaa", pv, arch), "bottlerocket-aws-k8s-"+pv,
				fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/%s/latest/image_id", pv, arch))
		}
	}
}

// previousVersions are the n Kubernetes minor versions before v ("1.37":
// "1.36", "1.35"), none below 1.0; none when v is not major.minor.
func previousVersions(v string, n int) []string {
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || fmt.Sprintf("%d.%d", major, minor) != v {
		return nil
	}
	var out []string
	for i := 1; i <= n && minor-i >= 0; i++ {
		out = append(out, fmt.Sprintf("%d.%d", major, minor-i))
	}
	return out
}

// AddImage registers an image (for tests that select AMIs by tag or name).
func (w *World) AddImage(img Image) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if img.ID == "" {
		img.ID = "ami-" + w.hex(17)
	}
	if img.OwnerID == "" {
		img.OwnerID = w.opts.AccountID
	}
	if img.CreationDate.IsZero() {
		img.CreationDate = w.clock.Now()
	}
	img.Tags = cloneTags(img.Tags)
	w.images = append(w.images, &img)
	if img.SSMParameter != "" {
		w.params[img.SSMParameter] = img.ID
	}
	return img.ID
}

// SetParameter sets an SSM parameter value.
func (w *World) SetParameter(name, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.params[name] = value
}

// Images returns a snapshot of the registered images.
func (w *World) Images() []Image {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Image, 0, len(w.images))
	for _, i := range w.images {
		c := *i
		c.Tags = cloneTags(i.Tags)
		out = append(out, c)
	}
	return out
}

// seedCluster creates a VPC with one private subnet per zone and a security
// group, all tagged for discovery by the cluster, plus one untagged public
// subnet so that selectors have something to leave out.
func (w *World) seedCluster(cluster string) {
	vpc := w.newID("vpc")
	w.vpcs = append(w.vpcs, vpc)
	for i, z := range w.opts.Zones {
		w.subnets = append(w.subnets, &Subnet{
			ID: w.newID("subnet"), VpcID: vpc, Zone: z, ZoneID: w.zoneID(z),
			CIDR:    fmt.Sprintf("10.0.%d.0/18", i*64),
			FreeIPs: 16379,
			Tags: map[string]string{
				awsv1.TagDiscovery: cluster,
				"Name":             fmt.Sprintf("%s-private-%s", cluster, z),
			},
		})
	}
	w.subnets = append(w.subnets, &Subnet{
		ID: w.newID("subnet"), VpcID: vpc, Zone: w.opts.Zones[0], ZoneID: w.zoneID(w.opts.Zones[0]),
		CIDR: "10.0.192.0/24", FreeIPs: 251,
		Tags: map[string]string{"Name": cluster + "-public"},
	})
	w.groups = append(w.groups, &SecurityGroup{
		ID: w.newID("sg"), Name: cluster + "-node", Description: "nodes of " + cluster, VpcID: vpc,
		Tags: map[string]string{awsv1.TagDiscovery: cluster, "Name": cluster + "-node"},
	})
	w.groups = append(w.groups, &SecurityGroup{
		ID: w.newID("sg"), Name: "default", Description: "default VPC security group", VpcID: vpc,
	})
}

// AddSubnet registers a subnet; ID and VPC are generated when empty.
func (w *World) AddSubnet(s Subnet) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.ID == "" {
		s.ID = w.newID("subnet")
	}
	if s.VpcID == "" {
		if len(w.vpcs) == 0 {
			w.vpcs = append(w.vpcs, w.newID("vpc"))
		}
		s.VpcID = w.vpcs[0]
	}
	if s.ZoneID == "" {
		s.ZoneID = w.zoneID(s.Zone)
	}
	s.Tags = cloneTags(s.Tags)
	w.subnets = append(w.subnets, &s)
	return s.ID
}

// SetSubnetFreeIPs sets how many addresses a subnet has left.
func (w *World) SetSubnetFreeIPs(id string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.subnet(id); s != nil {
		s.FreeIPs = n
	}
}

// Subnets returns a snapshot of the subnets.
func (w *World) Subnets() []Subnet {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Subnet, 0, len(w.subnets))
	for _, s := range w.subnets {
		c := *s
		c.Tags = cloneTags(s.Tags)
		out = append(out, c)
	}
	return out
}

// AddSecurityGroup registers a security group.
func (w *World) AddSecurityGroup(g SecurityGroup) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if g.ID == "" {
		g.ID = w.newID("sg")
	}
	g.Tags = cloneTags(g.Tags)
	w.groups = append(w.groups, &g)
	return g.ID
}

// SecurityGroups returns a snapshot of the security groups.
func (w *World) SecurityGroups() []SecurityGroup {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]SecurityGroup, 0, len(w.groups))
	for _, g := range w.groups {
		c := *g
		c.Tags = cloneTags(g.Tags)
		out = append(out, c)
	}
	return out
}

// nextIP hands out a private address in the subnet.
func (w *World) nextIP(s *Subnet) string {
	w.ipSerial++
	n := w.ipSerial
	var third int
	fmt.Sscanf(s.CIDR, "10.0.%d.", &third)
	return fmt.Sprintf("10.0.%d.%d", third+(n/250)%60, 4+n%250)
}

// ReleaseImages publishes a new release of every Amazon image behind a
// public SSM parameter, as EKS and Bottlerocket publish new AMIs: a new
// image per (family, variant, architecture), named after release and
// created now, and the parameter repointed to it, so an alias
// (al2023@latest) resolves to the new image at its next read and the
// nodes launched from the old one drift. The ids derive from the new
// names (no draw from the world's random source, so a run's later random
// choices are what they were without the release). It returns the new
// image ids, in the order of the images they replace.
func (w *World) ReleaseImages(release string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	var ids []string
	var added []*Image
	for _, img := range w.images {
		if img.OwnerID != amazonOwnerID || img.SSMParameter == "" || w.params[img.SSMParameter] != img.ID {
			continue
		}
		name := img.Name
		if i := strings.LastIndex(name, "-v"); i >= 0 {
			name = name[:i]
		}
		name += "-" + release
		sum := sha256.Sum256([]byte(name))
		next := &Image{ID: "ami-" + hex.EncodeToString(sum[:])[:17], Name: name, Description: img.Description, Arch: img.Arch,
			OwnerID: img.OwnerID, OwnerAlias: img.OwnerAlias, CreationDate: now, SSMParameter: img.SSMParameter}
		added = append(added, next)
		ids = append(ids, next.ID)
	}
	for _, img := range added {
		w.images = append(w.images, img)
		w.params[img.SSMParameter] = img.ID
	}
	return ids
}
