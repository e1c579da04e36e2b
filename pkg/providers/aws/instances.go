package aws

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
)

// Instance is an EC2 instance this cluster launched.
type Instance struct {
	ID           string
	ProviderID   string
	Type         string
	Zone         string
	SubnetID     string
	CapacityType string
	// Reservation is the capacity reservation the instance runs in (nil: none).
	Reservation *catalog.ReservationRef
	State       string
	ImageID     string
	LaunchTime  time.Time
	Tags        map[string]string
}

// ClaimName is the nodesmith.sh/nodeclaim tag ("" when missing).
func (i Instance) ClaimName() string { return i.Tags[awsv1.TagNodeClaim] }

// liveStates are the states of instances that still exist (or are on the way out).
var liveStates = []string{"pending", "running", "stopping", "stopped", "shutting-down"}

func toInstance(in ec2types.Instance) Instance {
	tags := map[string]string{}
	for _, t := range in.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	zone := ""
	if in.Placement != nil {
		zone = aws.ToString(in.Placement.AvailabilityZone)
	}
	ct := nsv1.CapacityTypeOnDemand
	if in.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		ct = nsv1.CapacityTypeSpot
	}
	var res *catalog.ReservationRef
	if id := aws.ToString(in.CapacityReservationId); id != "" {
		ct = nsv1.CapacityTypeReserved
		res = &catalog.ReservationRef{ID: id, Type: awsv1.CapacityReservationTypeDefault}
		if in.InstanceLifecycle == ec2types.InstanceLifecycleTypeCapacityBlock {
			res.Type = awsv1.CapacityReservationTypeCapacityBlock
		}
	}
	state := ""
	if in.State != nil {
		state = string(in.State.Name)
	}
	id := aws.ToString(in.InstanceId)
	return Instance{
		ID: id, ProviderID: providerID(zone, id), Type: string(in.InstanceType), Zone: zone, SubnetID: aws.ToString(in.SubnetId), CapacityType: ct, Reservation: res,
		State: state, ImageID: aws.ToString(in.ImageId), LaunchTime: aws.ToTime(in.LaunchTime), Tags: tags,
	}
}

// Instances lists this cluster's live instances.
func (p *Provider) Instances(ctx context.Context) ([]Instance, error) {
	return p.instances(ctx)
}

// describePageSize is DescribeInstances' MaxResults: the answer comes in
// pages, and every page must arrive before anything is concluded from it.
const describePageSize = 500

func (p *Provider) instances(ctx context.Context) ([]Instance, error) {
	return p.describe(ctx, liveStates)
}

// describe lists the cluster's instances in the given states that pass the
// extra filters, every page of them: an error on any page fails the whole
// list, so no caller ever acts on part of it.
func (p *Provider) describe(ctx context.Context, states []string, extra ...ec2types.Filter) ([]Instance, error) {
	filters := append([]ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.TagCluster), Values: []string{p.cluster.Name}},
		{Name: aws.String("instance-state-name"), Values: states},
	}, extra...)
	pg := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{Filters: filters, MaxResults: aws.Int32(describePageSize)})
	var out []Instance
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, unavailable(fmt.Errorf("listing instances: %w", explain(err)))
		}
		for _, r := range page.Reservations {
			for _, in := range r.Instances {
				out = append(out, toInstance(in))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Get returns the claim shape of an instance; NodeClaimNotFound when it is
// gone or terminated.
func (p *Provider) Get(ctx context.Context, pid string) (*nsv1.NodeClaim, error) {
	id, err := ParseProviderID(pid)
	if err != nil {
		return nil, err
	}
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if IsNotFound(err) {
			return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s: %w", id, err))
		}
		return nil, unavailable(fmt.Errorf("describing instance %s: %w", id, explain(err)))
	}
	var found []ec2types.Instance
	for _, r := range out.Reservations {
		found = append(found, r.Instances...)
	}
	if len(found) == 0 {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", id))
	}
	inst := toInstance(found[0])
	if inst.State == string(ec2types.InstanceStateNameTerminated) {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is terminated", id))
	}
	return p.claimFor(inst), nil
}

// List returns every live instance of the cluster as a NodeClaim.
func (p *Provider) List(ctx context.Context) ([]*nsv1.NodeClaim, error) {
	insts, err := p.Instances(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*nsv1.NodeClaim, 0, len(insts))
	for _, in := range insts {
		out = append(out, p.claimFor(in))
	}
	return out, nil
}

// Delete terminates the claim's instance. An instance already terminated
// (or unknown to EC2) is NodeClaimNotFound; one shutting down is nil.
func (p *Provider) Delete(ctx context.Context, claim *nsv1.NodeClaim) error {
	id, err := ParseProviderID(claim.Status.ProviderID)
	if err != nil {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("claim %s has no instance: %w", claim.Name, err))
	}
	out, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if IsNotFound(err) {
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s: %w", id, err))
		}
		return unavailable(fmt.Errorf("terminating instance %s: %w", id, explain(err)))
	}
	for _, ch := range out.TerminatingInstances {
		if ch.PreviousState != nil && ch.PreviousState.Name == ec2types.InstanceStateNameTerminated {
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is already terminated", id))
		}
	}
	return nil
}

// Orphans lists the cluster's instances that no NodeClaim knows (neither
// by providerID nor by claim name) and that are older than grace: launched
// by a Create whose answer was lost, or left behind by a deleted claim.
func (p *Provider) Orphans(ctx context.Context, known map[string]bool, grace time.Duration) ([]Instance, error) {
	insts, err := p.Instances(ctx)
	if err != nil {
		return nil, err
	}
	now := p.clock.Now()
	var out []Instance
	for _, in := range insts {
		if known[in.ProviderID] || known[in.ID] || (in.ClaimName() != "" && known[in.ClaimName()]) {
			continue
		}
		if in.State == string(ec2types.InstanceStateNameShuttingDown) || now.Sub(in.LaunchTime) < grace {
			continue
		}
		out = append(out, in)
	}
	return out, nil
}

// claimFor is the NodeClaim an instance stands for.
func (p *Provider) claimFor(in Instance) *nsv1.NodeClaim {
	c := &nsv1.NodeClaim{}
	c.Name = in.ClaimName()
	c.CreationTimestamp = metav1.NewTime(in.LaunchTime)
	c.Labels = map[string]string{}
	if pool := in.Tags[awsv1.TagNodePool]; pool != "" {
		c.Labels[nsv1.LabelNodePool] = pool
	}
	if nc := in.Tags[awsv1.LabelEC2NodeClass]; nc != "" {
		c.Labels[awsv1.LabelEC2NodeClass] = nc
	}
	if members := in.Tags[awsv1.TagLaunchBatch]; members != "" && c.Name == "" {
		// No claim has taken it yet; one of these may (see idempotency.go).
		c.Annotations = map[string]string{cloudprovider.AnnotationLaunchBatch: members}
	}
	c.Status.ProviderID = in.ProviderID
	c.Status.InstanceType = in.Type
	c.Status.Zone = in.Zone
	c.Status.CapacityType = in.CapacityType
	c.Status.ImageID = in.ImageID
	if spec, ok := p.spec(in.Type); ok {
		it := catalog.NewInstanceType(spec, nil, catalog.Options{Region: p.opts.Region})
		for k, v := range it.LabelsFor(catalog.Offering{Zone: in.Zone, CapacityType: in.CapacityType}) {
			c.Labels[k] = v
		}
		for k, v := range catalog.ReservationLabels(in.Reservation) {
			c.Labels[k] = v
		}
		// DescribeInstances does not say whether the reservation is
		// interruptible; the class's status does, at launch.
		delete(c.Labels, awsv1.LabelCapacityReservationInterruptible)
		c.Status.Capacity = it.Capacity.DeepCopy()
		price := spec.OnDemandPrice
		if in.Reservation != nil {
			price = 0 // the reservation is paid whether used or not
		}
		if in.CapacityType == nsv1.CapacityTypeSpot {
			p.pricesMu.RLock()
			sp, ok := p.spotPrices[in.Type][in.Zone]
			p.pricesMu.RUnlock()
			if ok {
				price = sp
			} else if spec.SpotPrice > 0 {
				price = spec.SpotPrice
			}
		}
		c.Status.Price = nsv1.FormatPrice(price)
	}
	return c
}
